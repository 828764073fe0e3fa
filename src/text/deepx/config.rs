//! deepx_core's instance reader config, accepted verbatim:
//! `batch=32;label_size=1;w=1;uuid=0` (plus `x_size=N` for libsvm_ex and
//! `x_hist_item_size=N` for uch). Keys, aliases, defaults and the required
//! keys are deepx's (src/graph/instance_reader/instance_reader_impl.cc:94-116,
//! libsvm_ex_instance_reader.cc:19-41, uch_instance_reader.cc:22-45; defaults
//! in include/deepx_core/graph/instance_reader_impl.h:27-30); where deepx
//! logs and fails, fex names the key and what it allows. deepx splits the
//! string on `;` and `=` and looks keys up verbatim (src/common/any_map.cc:
//! 21-47), so a key with blanks around it is unknown to it, and fex refuses
//! it too. Where deepx reads a config silently otherwise, fex refuses it and
//! says what deepx does: a value with text after its integer (`batch=2x`:
//! `std::stoi` reads 2) and a key given twice (deepx keeps one of them).

use std::fmt;

/// The three deepx formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `labels [uuid:x] features`.
    Libsvm,
    /// `labels [uuid:x] group0|group1|...`, `x_size` groups.
    LibsvmEx,
    /// `labels [uuid:x] user|cand|hist0|...`, up to `x_hist_item_size`
    /// history groups.
    Uch,
}

impl Format {
    /// The name deepx registers (`--instance_reader=NAME`).
    pub fn parse(name: &str) -> Result<Self, ConfigError> {
        match name {
            "libsvm" | "LibsvmInstanceReader" => Ok(Self::Libsvm),
            "libsvm_ex" | "LibsvmExInstanceReader" => Ok(Self::LibsvmEx),
            "uch" | "UCHInstanceReader" => Ok(Self::Uch),
            _ => Err(ConfigError::UnknownReader(name.to_string())),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Libsvm => "libsvm",
            Self::LibsvmEx => "libsvm_ex",
            Self::Uch => "uch",
        }
    }

    /// Keys this format accepts (aliases after the first name).
    fn keys(self) -> &'static [&'static str] {
        const COMMON: &[&str] = &["batch", "batch_size", "label_size", "w", "has_w", "uuid", "has_uuid"];
        match self {
            Self::Libsvm => COMMON,
            Self::LibsvmEx => &["batch", "batch_size", "label_size", "w", "has_w", "uuid", "has_uuid", "x_size"],
            Self::Uch => &[
                "batch",
                "batch_size",
                "label_size",
                "w",
                "has_w",
                "uuid",
                "has_uuid",
                "x_hist_item_size",
                "hist_item_size",
                "history_item_size",
            ],
        }
    }
}

/// deepx's limits (include/deepx_core/instance/base.h:34-35).
pub const MAX_GROUPS: usize = 128;
pub const MAX_LABEL_SIZE: usize = 32;

/// A validated reader config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeepxConfig {
    pub format: Format,
    /// Rows per batch (default 32).
    pub batch: usize,
    /// Labels (or label:weight pairs) per line (default 1).
    pub label_size: usize,
    /// Output W, the labels' weights (default off).
    pub w: bool,
    /// Output UUID (default off).
    pub uuid: bool,
    /// Feature groups: `x_size` for libsvm_ex, `x_hist_item_size` for uch,
    /// 1 for libsvm.
    pub groups: usize,
}

/// A config deepx would refuse, said precisely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("unknown instance reader {0:?}; the readers are libsvm, libsvm_ex, uch")]
    UnknownReader(String),
    #[error("config entry {0:?} is not key=value (entries are separated by ';')")]
    Malformed(String),
    #[error("unknown key {key:?} for the {format} reader; the keys are {}", allowed.join(", "))]
    UnknownKey { key: String, format: &'static str, allowed: Vec<&'static str> },
    #[error("{key}={value:?}: {reason}")]
    BadValue { key: String, value: String, reason: &'static str },
    #[error("the {format} reader needs {key}=N (no default)")]
    Missing { key: &'static str, format: &'static str },
    #[error(
        "{key} is given twice; deepx keeps one value (the last of a repeated key, any_map.cc:30 and 44, or whichever \
         alias its hash map visits last), fex refuses it"
    )]
    Repeated { key: String },
    #[error(
        "key {key:?} has blanks around it; deepx looks keys up verbatim and refuses it \
         (instance_reader_impl.cc:94-115), and so does fex"
    )]
    Blanks { key: String },
}

impl DeepxConfig {
    /// Parses `reader`'s config string; an empty entry (`a=1;;b=2`, a
    /// trailing `;`) is allowed, as deepx drops empty entries.
    pub fn parse(format: Format, config: &str) -> Result<Self, ConfigError> {
        let mut c = Self { format, batch: 32, label_size: 1, w: false, uuid: false, groups: 0 };
        let mut seen: Vec<&str> = Vec::new();
        for entry in config.split(';').filter(|e| !e.is_empty()) {
            let (key, value) = entry.split_once('=').ok_or_else(|| ConfigError::Malformed(entry.to_string()))?;
            if key.trim() != key {
                return Err(ConfigError::Blanks { key: key.to_string() });
            }
            // std::stoi skips leading blanks and stops at trailing ones.
            let value = value.trim();
            if !format.keys().contains(&key) {
                let allowed = format.keys().to_vec();
                return Err(ConfigError::UnknownKey { key: key.to_string(), format: format.name(), allowed });
            }
            let canonical = canonical(key);
            if seen.contains(&canonical) {
                return Err(ConfigError::Repeated { key: canonical.to_string() });
            }
            seen.push(canonical);
            c.set(canonical, key, value)?;
        }
        c.finish()
    }

    fn set(&mut self, canonical: &str, key: &str, value: &str) -> Result<(), ConfigError> {
        let bad = |reason| ConfigError::BadValue { key: key.to_string(), value: value.to_string(), reason };
        let n: i64 = value.parse().map_err(|_| bad(not_an_integer(value)))?;
        match canonical {
            "batch" => self.batch = positive(n).ok_or_else(|| bad("must be at least 1"))?,
            "label_size" => {
                self.label_size = positive(n)
                    .filter(|&n| n <= MAX_LABEL_SIZE)
                    .ok_or_else(|| bad("must be from 1 to 32 (deepx's MAX_LABEL_SIZE)"))?
            }
            "w" => self.w = n != 0,
            "uuid" => self.uuid = n != 0,
            _ => {
                self.groups = positive(n)
                    .filter(|&n| n <= MAX_GROUPS)
                    .ok_or_else(|| bad("must be from 1 to 128 (deepx's MAX_X_SIZE)"))?
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Self, ConfigError> {
        match self.format {
            Format::Libsvm => self.groups = 1,
            Format::LibsvmEx if self.groups == 0 => {
                return Err(ConfigError::Missing { key: "x_size", format: "libsvm_ex" });
            }
            Format::Uch if self.groups == 0 => {
                return Err(ConfigError::Missing { key: "x_hist_item_size", format: "uch" });
            }
            _ => {}
        }
        Ok(self)
    }
}

fn canonical(key: &str) -> &'static str {
    match key {
        "batch" | "batch_size" => "batch",
        "label_size" => "label_size",
        "w" | "has_w" => "w",
        "uuid" | "has_uuid" => "uuid",
        _ => "groups",
    }
}

/// Why `value` is not an integer, and what deepx's `std::stoi` makes of it
/// when it reads one anyway (instance_reader_impl.cc:97-111).
fn not_an_integer(value: &str) -> &'static str {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.starts_with(|c: char| c.is_ascii_digit()) {
        "not an integer; deepx's std::stoi reads the leading digits and ignores the rest \
         (instance_reader_impl.cc:97-111), fex refuses it"
    } else {
        "not an integer"
    }
}

fn positive(n: i64) -> Option<usize> {
    usize::try_from(n).ok().filter(|&n| n > 0)
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
