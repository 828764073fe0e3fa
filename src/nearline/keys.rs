//! A logged request's join keys, read where the `label_join:` section says:
//! request-level keys (request id, user, time, refresh) from row 0, the item
//! from every row.

use crate::config::{KeySource, LabelJoin, Plan};
use crate::view::{FeatureKind, FeatureView, FieldType, Value, le_f32, le_f64, le_u64};
use crate::wire::DecodeError;

use super::logged::{Logged, Samples};
use super::rows::{LINE_ID, Rows};
use super::{NearlineError, Payload, RequestKeys};

/// Reads `logged` (one `fex.v1.LoggedRequest`) with `plan`'s `label_join:`
/// section.
pub fn request_keys(plan: &Plan, logged: &[u8]) -> Result<RequestKeys, NearlineError> {
    let join = plan.label_join().ok_or_else(|| NearlineError::NoLabelJoin { model: plan.name.clone() })?;
    let logged = Logged::decode(logged)?;
    let rows = Rows::new(&logged.samples, &names(join), plan.limits.max_batch_size)?;
    let request_id = request_id(join, &logged, &rows)?;
    let user_id = required(&rows, &join.user_id, "user_id")?.text("user_id")?;
    let time_ms = match &join.request_time.source {
        KeySource::Log => logged.unix_micros.div_euclid(1000),
        source => join.request_time.unit.to_millis(required(&rows, source, "request_time")?.int("request_time")?),
    };
    let refresh = match &join.refresh {
        None => false,
        Some(source) => read(&rows, source, 0, "refresh")?.is_some_and(Key::is_set),
    };
    let item_ids = (0..rows.len())
        .map(|row| read(&rows, &join.item_id, row, "item_id")?.map_or(Ok(String::new()), |v| v.text("item_id")))
        .collect::<Result<_, _>>()?;
    let payload = payload(&logged);
    let model = logged.model.to_string();
    Ok(RequestKeys { request_id, user_id, time_ms, refresh, item_ids, payload, rows: rows.len(), model })
}

/// What `compute` needs of a logged request's keys: its request id and
/// how its samples came, read as `request_keys` reads them (no other key,
/// no item id: the job read those when the request came in).
#[cfg(feature = "offline")]
pub(crate) fn request_id_and_payload(plan: &Plan, logged: &[u8]) -> Result<(String, Payload), NearlineError> {
    let join = plan.label_join().ok_or_else(|| NearlineError::NoLabelJoin { model: plan.name.clone() })?;
    let logged = Logged::decode(logged)?;
    let rows = Rows::new(&logged.samples, &names(join), plan.limits.max_batch_size)?;
    Ok((request_id(join, &logged, &rows)?, payload(&logged)))
}

fn request_id(join: &LabelJoin, logged: &Logged<'_>, rows: &Rows<'_>) -> Result<String, NearlineError> {
    match &join.request_id {
        KeySource::Log => Ok(logged.request_id.to_string()),
        source => required(rows, source, "request_id")?.text("request_id"),
    }
}

fn payload(logged: &Logged<'_>) -> Payload {
    match logged.samples {
        Samples::Batch(..) => Payload::Batch,
        Samples::Examples(_) => Payload::Examples,
    }
}

/// The lists of a batch the section reads.
fn names(join: &LabelJoin) -> Vec<&[u8]> {
    let sources = [Some(&join.request_id), Some(&join.user_id), Some(&join.request_time.source), Some(&join.item_id)];
    let mut out = vec![LINE_ID];
    for source in sources.into_iter().chain([join.refresh.as_ref()]).flatten() {
        if let KeySource::Feature(name) = source
            && !out.contains(&name.as_bytes())
        {
            out.push(name.as_bytes());
        }
    }
    out
}

/// One key's value as the sample holds it.
#[derive(Debug, Clone, Copy)]
enum Key<'a> {
    Int(i64),
    Uint(u64),
    Float(f64),
    Bytes(&'a [u8]),
}

impl Key<'_> {
    fn text(self, key: &'static str) -> Result<String, NearlineError> {
        match self {
            Self::Int(v) => Ok(v.to_string()),
            Self::Uint(v) => Ok(v.to_string()),
            Self::Bytes(b) => String::from_utf8(b.to_vec())
                .map_err(|_| NearlineError::key(key, format!("found {} bytes that are not UTF-8", b.len()))),
            Self::Float(v) => {
                Err(NearlineError::key(key, format!("found the float {v}; an id is an integer or a string")))
            }
        }
    }

    fn int(self, key: &'static str) -> Result<i64, NearlineError> {
        match self {
            Self::Int(v) => Ok(v),
            Self::Uint(v) => i64::try_from(v).map_err(|_| NearlineError::key(key, format!("found {v}, over i64"))),
            Self::Float(v) => Err(NearlineError::key(key, format!("found the float {v}; a time is an integer"))),
            Self::Bytes(_) => Err(NearlineError::key(key, "found a string; a time is an integer".into())),
        }
    }

    fn is_set(self) -> bool {
        match self {
            Self::Int(v) => v != 0,
            Self::Uint(v) => v != 0,
            Self::Float(v) => v != 0.0,
            Self::Bytes(b) => !matches!(b, b"" | b"0" | b"false"),
        }
    }
}

/// A request-level key: row 0's value, which must be there.
fn required<'a>(rows: &Rows<'a>, source: &KeySource, key: &'static str) -> Result<Key<'a>, NearlineError> {
    let value = read(rows, source, 0, key)?;
    value.ok_or_else(|| NearlineError::key(key, format!("row 0 has no {}", describe(source))))
}

fn describe(source: &KeySource) -> String {
    match source {
        KeySource::Log => "value in the log record".into(),
        KeySource::LineId { name, .. } => format!("LineId field {name}"),
        KeySource::Feature(name) => format!("feature {name:?}"),
    }
}

/// `source`'s value in row `row`, if the row has one.
fn read<'a>(
    rows: &Rows<'a>,
    source: &KeySource,
    row: usize,
    key: &'static str,
) -> Result<Option<Key<'a>>, NearlineError> {
    let value = match source {
        KeySource::Log => None,
        KeySource::LineId { field, .. } => match rows.line_id(row)? {
            None => None,
            Some(line_id) => line_id.last(field.number, field.ty)?.map(|v| match v {
                Value::Int(i) if matches!(field.ty, FieldType::Uint64 | FieldType::Fixed64) => Key::Uint(i as u64),
                Value::Int(i) => Key::Int(i),
                Value::Float(f) => Key::Float(f),
                Value::Bytes(b) => Key::Bytes(b),
            }),
        },
        KeySource::Feature(name) => match rows.feature(name.as_bytes(), row)? {
            None => None,
            Some(f) => first(&f).map_err(|e| feature_error(key, name, row, e))?,
        },
    };
    Ok(value)
}

#[cold]
fn feature_error(key: &'static str, name: &str, row: usize, e: FeatureError) -> NearlineError {
    match e {
        FeatureError::Decode(d) => NearlineError::Decode(d),
        FeatureError::Kind(kind) => NearlineError::Key {
            key,
            message: format!("{name:?} row {row} is {kind}; a key is one integer, float or string"),
        },
    }
}

enum FeatureError {
    Decode(DecodeError),
    Kind(&'static str),
}

impl From<DecodeError> for FeatureError {
    fn from(e: DecodeError) -> Self {
        Self::Decode(e)
    }
}

/// A Feature's first value; `None` when it holds none.
fn first<'a>(f: &FeatureView<'a>) -> Result<Option<Key<'a>>, FeatureError> {
    let mut out = None;
    let mut keep = |k: Key<'a>| {
        out.get_or_insert(k);
    };
    match f.kind() {
        None => {}
        Some(FeatureKind::FidV1List | FeatureKind::FidV2List) => {
            f.fid_runs(|r| r.get(..8).map(|r| keep(Key::Uint(le_u64(r)))).unwrap_or_default())?
        }
        Some(FeatureKind::Int64List) => f.int64_values(|v| keep(Key::Int(v)))?,
        Some(FeatureKind::FloatList) => {
            f.float_runs(|r| r.get(..4).map(|r| keep(Key::Float(f64::from(le_f32(r))))).unwrap_or_default())?
        }
        Some(FeatureKind::DoubleList) => {
            f.double_runs(|r| r.get(..8).map(|r| keep(Key::Float(le_f64(r)))).unwrap_or_default())?
        }
        Some(FeatureKind::BytesList) => f.bytes_values(|b| keep(Key::Bytes(b)))?,
        Some(FeatureKind::Int64Value) => keep(Key::Int(f.int64_value())),
        Some(FeatureKind::FloatValue) => keep(Key::Float(f64::from(f.float_value()))),
        Some(FeatureKind::DoubleValue) => keep(Key::Float(f.double_value())),
        Some(FeatureKind::BytesValue) => keep(Key::Bytes(f.bytes_value())),
        Some(kind) => return Err(FeatureError::Kind(kind.name())),
    }
    Ok(out)
}
