//! The plans every input is extracted with: the embedded default model, and
//! two models written here that between them use every output kind, both
//! compat modes, i32 and i64 splits, SHARED handling, `__meta__` fallbacks,
//! known and numbered LineId fields, and tight limits so the limit paths run
//! (`seq_wide` turns a 2-byte empty inner list into 32 KiB of output).

use std::sync::LazyLock;

use fex::Plan;

/// Monolith's quirks: FLT_MIN for empty lists, aborts on empty reserved lists,
/// zero padding, row-by-row reserved lists.
pub const MONOLITH_YAML: &str = r#"
name: fuzz-monolith
version: "1"
compat: monolith
limits: {max_batch_size: 64, max_output_bytes: 1048576}
features:
  - {name: fid_v1, kind: sparse, dtype: u64, splits: i32}
  - {name: fid_v2, kind: sparse}
  - {name: user_fid, kind: sparse, shared: once}
  - {name: float_dense, kind: dense, dtype: f32, shape: [4]}
  - {name: float_one, kind: dense, dtype: f32}
  - {name: int_dense, kind: dense, dtype: i64, shape: [2, 3]}
  - {name: int_one, kind: dense, dtype: i64}
  - {name: user_dense, kind: dense, dtype: f32, shape: [3], shared: once}
  - {name: meta_req_time, kind: dense, dtype: i64, source: __meta__req_time}
  - {name: title, kind: string}
  - {name: user_title, kind: string, shared: once}
  - {name: seq_fid, kind: sequence, dtype: i64, max_len: 4, width: 2, splits: i32}
  - {name: seq_float, kind: sequence, dtype: f32, max_len: 3, width: 3}
  - {name: seq_user, kind: sequence, dtype: u64, max_len: 5, shared: once}
  - {name: uid, kind: line_id, field: uid}
  - {name: uid_wide, kind: line_id, field: uid, shape: [3]}
  - {name: req_id, kind: line_id, field: req_id}
  - {name: actions, kind: line_id, field: actions, shape: [4]}
  - {name: sample_rate, kind: line_id, field: sample_rate}
  - {name: custom_sint, kind: line_id, field: 300, type: sint64}
  - {name: custom_doubles, kind: line_id, field: 301, type: double, shape: [3]}
  - {name: custom_fixed32, kind: line_id, field: 302, type: fixed32}
  - {name: custom_bytes, kind: line_id, field: 303, type: bytes}
  - {name: label, kind: label, shape: [2]}
  - {name: click, kind: label}
  - {name: instance_weight, kind: instance_weight}
"#;

/// Native mode: explicit defaults, f64, conversions, outputs sharing a source.
pub const NATIVE_YAML: &str = r#"
name: fuzz-native
compat: native
limits: {max_batch_size: 64, max_output_bytes: 65536}
features:
  - {name: ids, kind: sparse, dtype: u64, source: fid_v1, shared: once}
  - {name: float_once, kind: dense, dtype: f32, shape: [2], source: user_dense, shared: once}
  - {name: f64_dense, kind: dense, dtype: f64, shape: [3], default: -1.5, source: float_dense}
  - {name: f64_one, kind: dense, dtype: f64, default: 2.5, source: float_one}
  - {name: i64_of_int, kind: dense, dtype: i64, shape: [5], default: 7, source: int_dense}
  - {name: meta_sample_rate, kind: dense, dtype: f64, source: __meta__sample_rate}
  - {name: title_once, kind: string, source: title, shared: once}
  - {name: seq_double, kind: sequence, dtype: f64, max_len: 2, width: 4, source: seq_float, shared: once}
  - {name: seq_ids, kind: sequence, dtype: u64, max_len: 65536, splits: i32, source: seq_fid}
  - {name: draw, kind: line_id, field: is_draw}
  - {name: custom_enum, kind: line_id, field: 304, type: enum, shape: [2]}
  - {name: custom_sfixed64, kind: line_id, field: 305, type: sfixed64}
  - {name: labels, kind: label, shape: [3], default: -1}
  - {name: weight, kind: instance_weight}
  # Last, so that its TooLarge errors leave every other output exercised.
  - {name: seq_wide, kind: sequence, dtype: f64, max_len: 65536, width: 4096, source: seq_float}
"#;

static PLANS: LazyLock<[Plan; 3]> = LazyLock::new(|| {
    let parse = |yaml| Plan::from_yaml(yaml).unwrap_or_else(|e| panic!("fuzz plan does not validate: {e}"));
    [Plan::default_model(), parse(MONOLITH_YAML), parse(NATIVE_YAML)]
});

/// The default model, then the Monolith and native fuzz models.
pub fn all() -> &'static [Plan] {
    &PLANS[..]
}
