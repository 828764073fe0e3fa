//! Inputs the fuzz targets (fuzz/, run by scripts/fuzz.sh) once failed on,
//! kept as ordinary tests: one test per finding, saying what broke and where.

mod common;

use common::batch;
use fex::{ErrorKind, ExtractError, Extracted, Extractor, Plan};

/// The `seq_wide` output of the native fuzz plan (fuzz/src/plans.rs): each
/// inner list, even an empty 2-byte one, becomes 4096 f64 values (32 KiB).
const WIDE_SEQUENCE: &str = r#"
name: fuzz-regression
limits: {max_output_bytes: 65536}
features:
  - {name: seq_wide, kind: sequence, dtype: f64, max_len: 65536, width: 4096, source: seq_float}
"#;
const LIMIT: usize = 65536;

/// Extracts with scratch the test can inspect afterwards, as a server reuses
/// it: the result, and the largest buffer any tensor was left holding.
fn extract_keeping_buffers(plan: &Plan, input: &[u8]) -> (Result<(), ExtractError>, usize) {
    let mut out = Extracted::default();
    let result = Extractor::new().extract_batch(plan, input, &mut out);
    let largest = out.columns.iter().map(|c| c.column.largest_capacity()).max();
    (result, largest.unwrap_or(0))
}

/// One `seq_float` row holding `lists` empty inner lists.
fn empty_inner_lists(lists: usize) -> Vec<u8> {
    let inner = vec!["[]"; lists].join(", ");
    batch(&format!("batch_size: 1\nlists: [{{name: seq_float, features: [{{float_lists: [{inner}]}}]}}]"))
}

fn assert_too_large_within_limit(plan: &Plan, input: &[u8]) {
    let err = fex::extract_batch(plan, input).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::TooLarge { limit: LIMIT, .. }), "{err}");
    let (result, largest) = extract_keeping_buffers(plan, input);
    assert!(matches!(result.as_ref().map_err(ExtractError::kind), Err(ErrorKind::TooLarge { .. })), "{result:?}");
    assert!(largest <= 2 * LIMIT, "a {} B input left a {largest} B buffer; the limit is {LIMIT}", input.len());
}

/// fuzz decode_batch, minimized (113 bytes): three rows of `seq_float` with two
/// inner lists each. src/extract/sequence.rs wrote every position and the
/// budget was charged only after the whole tensor, so 192 KiB were written
/// against a 64 KiB limit; 128 KiB of empty inner lists made 2 GiB. The limit
/// is now checked before each position is written.
#[test]
fn sequence_output_limit_is_checked_before_writing() {
    const INPUT: &[u8] = b"@\x00\x0ak\x0a\x09seq_float\x12\x1eB\x1c\x0a\x12\x0a\x10\x00\x00\x00?\x00\x00\x00?\
      \x00\x00\x00?\x00\x00\x00?\x0a\x06\x0a\x04\x00\x00\xc0?\x12\x1eB\x1c\x0a\x12\x0a\x10\
      \x00?\x12\x08\x1a\x06\x0a\x04\x00\x00\x00@\x18\x03\x00?\x0a\x06\x0a\x04\x00\x00\xc0?\
      \x12\x1eB\x1c\x0a\x12\x0a\x10\x00\x00\x00?\x00\x03\x00\x00\x00\x00\x00\x00\x09?\x12\
      \x08\x1a\x06\x0a\x04\x00\x00\x00@\x18\x03";
    let plan = Plan::from_yaml(WIDE_SEQUENCE).unwrap();
    assert_too_large_within_limit(&plan, INPUT);
    // The same amplification at a larger scale: 2 KiB in, 32 MiB before the fix.
    assert_too_large_within_limit(&plan, &empty_inner_lists(1024));
}

/// The early check must not change results that fit: one position, 32 KiB.
#[test]
fn sequence_under_the_limit_is_unchanged() {
    let plan = Plan::from_yaml(WIDE_SEQUENCE).unwrap();
    let out = fex::extract_batch(&plan, &empty_inner_lists(1)).unwrap();
    let t = out.tensor("seq_wide").unwrap();
    assert_eq!(t.shape, [1, -1, 4096]);
    assert_eq!(t.splits(), [0, 1]);
    assert_eq!(t.f64s(), vec![0.0; 4096]);
}

/// Review finding: a 4-byte request (batch_size 65536, no lists) against a
/// wide per-position sequence used to write 2 GiB of zeros before the output
/// limit was checked. Dense operator results are now charged before writing.
#[test]
fn derived_dense_outputs_are_charged_before_writing() {
    let plan = fex::Plan::from_yaml(
        "name: t\nlimits: {max_batch_size: 65536, max_output_bytes: 1048576}\nfeatures:\n  - {name: s, kind: sequence, dtype: f64, max_len: 2, width: 4096, per_position: true}\n",
    )
    .unwrap();
    let mut ex = fex::Extractor::new();
    let mut out = fex::Extracted::default();
    let peak_before = peak_rss_kib();
    let err = ex.extract_batch(&plan, &[0x18, 0x80, 0x80, 0x04], &mut out).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::TooLarge { limit: 1048576, .. }), "{err}");
    // Refused before writing: the 2 GiB never existed.
    let grown = peak_rss_kib().saturating_sub(peak_before);
    assert!(grown < 256 * 1024, "peak RSS grew by {grown} KiB");
}

/// This process's peak resident set size (Linux VmHWM), in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Review finding: cross results were charged twice against the output limit.
#[test]
fn cross_output_is_charged_once() {
    let ids: Vec<String> = (0..16).map(|i| i.to_string()).collect();
    let list = |name: &str| format!("  - {{name: {name}, features: [{{fid_v2_list: [{}]}}]}}\n", ids.join(", "));
    let bytes = batch(&format!("batch_size: 1\nlists:\n{}{}", list("a"), list("b")));
    // a and b: 16 ids + 2 splits each (144 B); the cross: 256 ids + 2 splits (2064 B): 2352 in all.
    let yaml = |limit: usize| {
        format!(
            "name: t\nlimits: {{max_output_bytes: {limit}}}\nfeatures:\n  - {{name: a, kind: sparse}}\n  - {{name: b, kind: sparse}}\n  - {{name: ab, op: cross, inputs: [a, b]}}\n"
        )
    };
    assert!(fex::extract_batch(&fex::Plan::from_yaml(&yaml(2352)).unwrap(), &bytes).is_ok());
    assert!(fex::extract_batch(&fex::Plan::from_yaml(&yaml(2351)).unwrap(), &bytes).is_err());
}
