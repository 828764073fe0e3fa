//! The model's `label_join:` section: how a near-line job joins fex-server's
//! logged requests (`fex.v1.LoggedRequest`) with user actions. It names where
//! a request's keys come from (the log record, a LineId field or a feature)
//! and the join's timing rules. Read and checked here like the rest of the
//! config, every problem with its path; the server ignores the section and
//! `fex::nearline` reads samples with it.

use std::time::Duration;

use serde::Deserialize;
use serde_norway::{Mapping, Value};

use super::ConfigError;
use super::plan::LineIdField;
use super::raw::{Scope, read};
use crate::view::{KNOWN_FIELDS, ValueClass, known_field};

/// The checked section.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelJoin {
    pub request_id: KeySource,
    pub user_id: KeySource,
    pub request_time: TimeSource,
    /// Per row.
    pub item_id: KeySource,
    /// A request is a refresh when this value (row 0) is non-zero.
    pub refresh: Option<KeySource>,
    /// A normal request emits the user's request this many back; 0: never.
    pub requests_back: u32,
    /// A request is emitted this long after its time.
    pub after: Duration,
    /// How late (event time) an action may arrive and still count.
    pub watermark_delay: Duration,
    pub late_actions: LateActions,
    /// How long an emitted request's id is remembered, and how long an
    /// action waits for its request.
    pub retention: Duration,
}

/// Where a key is read.
#[derive(Debug, Clone, PartialEq)]
pub enum KeySource {
    /// The log record itself (`LoggedRequest.request_id`, `unix_micros`).
    Log,
    /// A LineId field, by its name in proto/monolith/line_id.proto.
    LineId { name: String, field: LineIdField },
    /// A named feature of the sample: its first value.
    Feature(String),
}

/// The request time: where it is read, and in which unit a number is.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSource {
    pub source: KeySource,
    /// Ignored for [`KeySource::Log`] (microseconds).
    pub unit: TimeUnit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Millis,
    Micros,
}

impl TimeUnit {
    /// `value` in this unit as milliseconds, saturating.
    pub fn to_millis(self, value: i64) -> i64 {
        match self {
            Self::Seconds => value.saturating_mul(1000),
            Self::Millis => value,
            Self::Micros => value / 1000,
        }
    }
}

/// What happens to an action that arrives after its request was emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LateActions {
    Drop,
    /// Each late action is written to the job's corrections output (a JSON
    /// line naming its request and when that request was emitted).
    Correction,
}

impl LateActions {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Drop => "drop",
            Self::Correction => "correction",
        }
    }
}

const DEFAULT_REQUESTS_BACK: u64 = 5;
const MAX_REQUESTS_BACK: u64 = 1000;
const DEFAULT_WATERMARK_DELAY: Duration = Duration::from_secs(60);
const DEFAULT_RETENTION: Duration = Duration::from_secs(3600);
/// The longest duration any key takes: a week.
const MAX_DURATION: Duration = Duration::from_secs(7 * 86_400);

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawLabelJoin {
    request_id: Option<Value>,
    user_id: Option<Value>,
    request_time: Option<Value>,
    item_id: Option<Value>,
    refresh: Option<Value>,
    emit: Option<Mapping>,
    watermark_delay: Option<String>,
    late_actions: Option<String>,
    retention: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawEmit {
    requests_back: Option<u64>,
    after: Option<String>,
}

/// `{line_id: FIELD}` or `{feature: NAME}`, and `unit` for the time.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawSource {
    line_id: Option<String>,
    feature: Option<String>,
    unit: Option<String>,
}

/// Reads the section as written; keys of the wrong type are reported.
pub(super) fn parse(section: &Mapping, errors: &mut Vec<ConfigError>) -> RawLabelJoin {
    read(section, Scope { path: "label_join", owner: None }, errors)
}

/// Checks the section; `None` when it added an error.
pub(super) fn check(raw: &RawLabelJoin, errors: &mut Vec<ConfigError>) -> Option<LabelJoin> {
    let start = errors.len();
    let mut cx = Check { errors };
    let request_id = cx.key("request_id", raw.request_id.as_ref(), Want::Id, true).map(|(s, _)| s);
    let user_id = match &raw.user_id {
        None => cx.error("label_join.user_id", "missing; e.g. {line_id: uid} or {feature: user_id}".into()),
        Some(v) => cx.key("user_id", Some(v), Want::Id, false).map(|(s, _)| s),
    };
    let request_time = cx.key("request_time", raw.request_time.as_ref(), Want::Time, true);
    let item_id = match &raw.item_id {
        None => cx.error("label_join.item_id", "missing; e.g. {line_id: item_id} or {feature: item_id}".into()),
        Some(v) => cx.key("item_id", Some(v), Want::Id, false).map(|(s, _)| s),
    };
    let refresh = raw.refresh.as_ref().map(|v| cx.key("refresh", Some(v), Want::Flag, false).map(|(s, _)| s));
    let emit = raw.emit.as_ref().map(|e| read::<RawEmit>(e, Scope { path: "label_join.emit", owner: None }, cx.errors));
    let emit = emit.unwrap_or_default();
    let requests_back = emit.requests_back.unwrap_or(DEFAULT_REQUESTS_BACK);
    if requests_back > MAX_REQUESTS_BACK {
        cx.error::<()>(
            "label_join.emit.requests_back",
            format!("found {requests_back}, allowed 0..={MAX_REQUESTS_BACK} (0 turns the event rule off)"),
        );
    }
    let after = match &emit.after {
        None if raw.emit.as_ref().is_some_and(|e| e.contains_key("after")) => None,
        None => {
            cx.error("label_join.emit.after", "missing; how long after its time a request is emitted, e.g. 30m".into())
        }
        Some(text) => cx.duration("label_join.emit.after", text, false),
    };
    let watermark_delay =
        cx.optional_duration("label_join.watermark_delay", &raw.watermark_delay, DEFAULT_WATERMARK_DELAY);
    let retention = cx.optional_duration("label_join.retention", &raw.retention, DEFAULT_RETENTION);
    let late_actions = match raw.late_actions.as_deref() {
        None | Some("drop") => Some(LateActions::Drop),
        Some("correction") => Some(LateActions::Correction),
        Some(other) => cx.error("label_join.late_actions", format!("found {other:?}, expected drop or correction")),
    };
    if cx.errors.len() > start {
        return None;
    }
    let (request_time, unit) = request_time?;
    Some(LabelJoin {
        request_id: request_id?,
        user_id: user_id?,
        request_time: TimeSource { source: request_time, unit },
        item_id: item_id?,
        refresh: refresh.flatten(),
        requests_back: requests_back as u32,
        after: after?,
        watermark_delay: watermark_delay?,
        late_actions: late_actions?,
        retention: retention?,
    })
}

/// What a key's value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// Integer or string: ids as text.
    Id,
    /// An integer: a time in `unit`.
    Time,
    /// Integer or bool: non-zero is true.
    Flag,
}

struct Check<'e> {
    errors: &'e mut Vec<ConfigError>,
}

impl Check<'_> {
    fn error<T>(&mut self, path: &str, message: String) -> Option<T> {
        self.errors.push(ConfigError { path: path.into(), message });
        None
    }

    /// A key's source: `log` (when `log_ok`), `{line_id: FIELD}` or
    /// `{feature: NAME}`, with `unit` for a time (default seconds).
    fn key(&mut self, key: &str, value: Option<&Value>, want: Want, log_ok: bool) -> Option<(KeySource, TimeUnit)> {
        let path = format!("label_join.{key}");
        let forms =
            if log_ok { "log, {line_id: FIELD} or {feature: NAME}" } else { "{line_id: FIELD} or {feature: NAME}" };
        let map = match value {
            None if log_ok => return Some((KeySource::Log, TimeUnit::Micros)),
            Some(Value::String(s)) if s == "log" && log_ok => return Some((KeySource::Log, TimeUnit::Micros)),
            Some(Value::Mapping(map)) => map,
            Some(other) => {
                let found =
                    serde_norway::to_string(other).map_or_else(|_| format!("{other:?}"), |s| s.trim().to_string());
                return self.error(&path, format!("found {found}, expected {forms}"));
            }
            None => return self.error(&path, format!("missing; expected {forms}")),
        };
        let start = self.errors.len();
        let raw: RawSource = read(map, Scope { path: &path, owner: None }, self.errors);
        let unit = match (want, raw.unit.as_deref()) {
            (Want::Time, None | Some("s")) => Some(TimeUnit::Seconds),
            (Want::Time, Some("ms")) => Some(TimeUnit::Millis),
            (Want::Time, Some("us")) => Some(TimeUnit::Micros),
            (Want::Time, Some(other)) => {
                self.error(&format!("{path}.unit"), format!("found {other:?}, expected s, ms or us"))
            }
            (_, None) => Some(TimeUnit::Seconds),
            (_, Some(_)) => self.error(&format!("{path}.unit"), "is only for request_time".into()),
        };
        let source = match (raw.line_id, raw.feature) {
            (Some(name), None) => self.line_id(&path, name, want),
            (None, Some(name)) => self.feature(&path, name),
            (Some(_), Some(_)) => self.error(&path, "give either line_id or feature, not both".into()),
            (None, None) if self.errors.len() > start => None,
            (None, None) => self.error(&path, format!("expected {forms}")),
        };
        Some((source?, unit?))
    }

    fn line_id(&mut self, path: &str, name: String, want: Want) -> Option<KeySource> {
        let path = format!("{path}.line_id");
        let Some(known) = known_field(&name) else {
            let names: Vec<_> = KNOWN_FIELDS.iter().map(|f| f.name).collect();
            return self.error(&path, format!("unknown LineId field {name:?}; use one of {}", names.join(", ")));
        };
        let field = LineIdField::known(known);
        let class = field.ty.class();
        let fits = !field.repeated
            && match want {
                Want::Id => class != ValueClass::Float,
                Want::Time | Want::Flag => class == ValueClass::Integer,
            };
        if !fits {
            let what = match want {
                Want::Id => "a singular integer or string field",
                Want::Time | Want::Flag => "a singular integer field",
            };
            return self.error(
                &path,
                format!(
                    "{name:?} is {}{}; expected {what}",
                    rep(field.repeated),
                    format!("{:?}", field.ty).to_lowercase()
                ),
            );
        }
        Some(KeySource::LineId { name, field })
    }

    fn feature(&mut self, path: &str, name: String) -> Option<KeySource> {
        if !is_plain_name(&name) {
            return self.error(
                &format!("{path}.feature"),
                format!("{name:?} is not a feature name (letters, digits, _ - . / :, at most 256 bytes)"),
            );
        }
        Some(KeySource::Feature(name))
    }

    fn optional_duration(&mut self, path: &str, text: &Option<String>, default: Duration) -> Option<Duration> {
        match text {
            None => Some(default),
            Some(t) => self.duration(path, t, true),
        }
    }

    fn duration(&mut self, path: &str, text: &str, zero_ok: bool) -> Option<Duration> {
        match parse_duration(text) {
            Ok(d) if d.is_zero() && !zero_ok => self.error(path, "must be more than 0".into()),
            Ok(d) => Some(d),
            Err(e) => self.error(path, e),
        }
    }
}

fn rep(repeated: bool) -> &'static str {
    if repeated { "repeated " } else { "" }
}

/// Letters, digits and `_ - . / :`, as feature names are written.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 256 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-./:".contains(&b))
}

/// "500ms", "30s", "30m", "2h", up to a week; a plain number is seconds, as
/// fex-server's duration flags read it.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = match text.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let expected = || format!("found {text:?}, expected a duration like 500ms, 30s, 30m or 2h");
    let n: f64 = number.trim().parse().map_err(|_| expected())?;
    let seconds = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("found {text:?}: unknown unit {unit:?}, expected ms, s, m or h")),
    };
    if !(0.0..=MAX_DURATION.as_secs_f64()).contains(&seconds) {
        return Err(format!("found {text:?}, allowed 0 to 168h"));
    }
    Ok(Duration::from_secs_f64(seconds))
}
