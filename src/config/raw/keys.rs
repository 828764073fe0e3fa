//! Deserializing one YAML mapping into a per-kind struct while reporting
//! every problem: each unknown key (with the keys that struct allows) and each
//! key whose value has the wrong type, not just the first that serde meets.

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde_norway::{Mapping, Value};

use crate::config::ConfigError;

/// Whose keys are being read, for paths and messages.
#[derive(Debug, Clone, Copy)]
pub(in crate::config) struct Scope<'a> {
    /// The path of the mapping (`features.ctr`); empty for the model itself.
    pub path: &'a str,
    /// What decides the allowed keys (`kind sparse`, `op hash`), if anything.
    pub owner: Option<&'a str>,
}

impl Scope<'_> {
    /// The path of `key` inside this mapping.
    pub fn key(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_string() } else { format!("{}.{key}", self.path) }
    }

    fn unknown(&self, key: &str, allowed: &[&str]) -> ConfigError {
        let owner = self.owner.map(|o| format!(" for {o}")).unwrap_or_default();
        let path = if self.path.is_empty() { "model" } else { self.path };
        let message = format!("unknown key {key:?}{owner}; allowed: {}", allowed.join(", "));
        ConfigError { path: path.to_string(), message }
    }
}

/// Reads `map` into `T`. Unknown keys and keys of the wrong type are reported
/// and left out, so `T` holds every key that was right: the checks after this
/// still see them (a struct that defaults every field makes that possible).
pub(in crate::config) fn read<T>(map: &Mapping, scope: Scope<'_>, errors: &mut Vec<ConfigError>) -> T
where
    T: DeserializeOwned + Default,
{
    let allowed = keys_of::<T>();
    let mut known = Mapping::new();
    for (key, value) in map {
        match key.as_str().filter(|k| allowed.contains(k)) {
            Some(_) => drop(known.insert(key.clone(), value.clone())),
            None => errors.push(scope.unknown(&key_text(key), allowed)),
        }
    }
    if let Ok(t) = serde_norway::from_value(Value::Mapping(known.clone())) {
        return t;
    }
    // Slow path, only for a bad entry: try each key alone to name every bad one.
    let mut good = Mapping::new();
    for (key, value) in known {
        let alone: Mapping = [(key.clone(), value.clone())].into_iter().collect();
        match serde_norway::from_value::<T>(Value::Mapping(alone)) {
            Ok(_) => drop(good.insert(key, value)),
            Err(e) => errors.push(ConfigError { path: scope.key(&key_text(&key)), message: e.to_string() }),
        }
    }
    serde_norway::from_value(Value::Mapping(good)).unwrap_or_default()
}

fn key_text(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        other => serde_norway::to_string(other).map_or_else(|_| format!("{other:?}"), |s| s.trim().to_string()),
    }
}

/// The field names of a struct, in declaration order, as serde sees them
/// (renames applied): asked of its `Deserialize` impl, so the allowed keys
/// in messages can never drift from the struct.
pub(in crate::config) fn keys_of<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(FieldProbe(&mut fields));
    fields
}

/// A deserializer that only records the fields `deserialize_struct` names.
struct FieldProbe<'a>(&'a mut &'static [&'static str]);

impl<'de> Deserializer<'de> for FieldProbe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("fields recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Probe {
        name: String,
        buckets: Option<u64>,
        #[serde(rename = "type")]
        ty: Option<String>,
    }

    /// Reads `yaml` into a `Probe`; the result and every error line.
    fn check(yaml: &str, expected: Probe, errors: &[&str]) {
        let map: Mapping = serde_norway::from_str(yaml).unwrap();
        let mut got = Vec::new();
        let probe: Probe = read(&map, Scope { path: "features.x", owner: Some("op hash") }, &mut got);
        let got: Vec<String> = got.iter().map(ToString::to_string).collect();
        assert_eq!((probe, got), (expected, errors.iter().map(|e| e.to_string()).collect()), "{yaml}");
    }

    #[test]
    fn keys_come_from_the_struct() {
        assert_eq!(keys_of::<Probe>(), ["name", "buckets", "type"]);
    }

    #[test]
    fn every_bad_key_is_reported_and_the_good_ones_kept() {
        let full = Probe { name: "a".into(), buckets: Some(3), ty: Some("t".into()) };
        check("{name: a, buckets: 3, type: t}", full, &[]);
        check(
            "{name: a, bukets: 3, 7: x}",
            Probe { name: "a".into(), ..Probe::default() },
            &[
                r#"features.x: unknown key "bukets" for op hash; allowed: name, buckets, type"#,
                r#"features.x: unknown key "7" for op hash; allowed: name, buckets, type"#,
            ],
        );
        check(
            "{name: [a], buckets: -1, type: t}",
            Probe { ty: Some("t".into()), ..Probe::default() },
            &[
                "features.x.name: invalid type: sequence, expected a string",
                "features.x.buckets: invalid value: integer `-1`, expected u64",
            ],
        );
    }
}
