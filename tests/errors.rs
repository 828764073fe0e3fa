//! The structured side of `ExtractError`: what offline callers (skip and
//! count bad rows) and the Python binding (structured exceptions) read
//! besides the message. Every error here comes from a real extraction.

mod common;

use common::batch;
use fex::{ErrorKind, Plan};

fn plan(features: &str) -> Plan {
    Plan::from_yaml(&format!("name: t\ncompat: native\nfeatures:\n{features}")).unwrap()
}

fn sparse_plan() -> Plan {
    plan("  - {name: item_id, kind: sparse}\n")
}

/// Row 1 of `item_id` holds a FidList whose packed length is cut to 15.
fn corrupt_second_row() -> Vec<u8> {
    let mut bytes = batch(
        "batch_size: 2\nlists:\n  - {name: skip_me, features: [{fid_v2_list: [1]}, {fid_v2_list: [1]}]}\n  - {name: item_id, features: [{fid_v2_list: [1]}, {fid_v2_list: [3, 4]}]}\n",
    );
    let packed = [0x0a, 16, 3, 0, 0, 0, 0, 0, 0, 0, 4];
    let at = bytes.windows(packed.len()).position(|w| w == packed).unwrap() + 1;
    bytes[at] = 15;
    bytes
}

#[test]
fn decode_error_has_path_offset_row_and_source() {
    let bytes = corrupt_second_row();
    let err = fex::extract_batch(&sparse_plan(), &bytes).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Decode(_)), "{err:?}");
    assert_eq!(err.path().as_deref(), Some("named_feature_list[1].feature[1]"));
    let offset = err.offset().expect("a decode error has an offset");
    assert!(offset < bytes.len(), "{offset} is past the input");
    assert_eq!(err.row(), Some(1));
    assert_eq!(err.source_name(), Some("item_id"));
    // The accessors and the message agree.
    let message =
        format!("named_feature_list[1].feature[1] @ byte {offset}: packed run of 15 bytes is not a multiple of 8");
    assert_eq!(err.to_string(), message);
}

#[test]
fn decode_error_outside_any_feature_has_no_row() {
    let good = batch("batch_size: 1\nlists:\n  - {name: item_id, features: [{fid_v2_list: [1, 2]}]}\n");
    let err = fex::extract_batch(&sparse_plan(), &good[..good.len() - 3]).unwrap_err();
    assert_eq!(err.path().as_deref(), Some("named_feature_list[0]"));
    assert!(err.offset().is_some(), "{err:?}");
    assert_eq!((err.row(), err.source_name()), (None, None));
}

#[test]
fn type_mismatch_has_row_source_and_path() {
    let bytes = batch("batch_size: 2\nlists: [{name: x, features: [{fid_v2_list: [1]}, {float_list: [1]}]}]");
    let err = fex::extract_batch(&plan("  - {name: x, kind: sparse}\n"), &bytes).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::TypeMismatch { .. }), "{err:?}");
    assert_eq!(err.row(), Some(1));
    assert_eq!(err.source_name(), Some("x"));
    assert_eq!(err.path().as_deref(), Some("named_feature_list[0].feature[1]"));
    assert_eq!(err.offset(), None);
}

#[test]
fn type_mismatch_in_examples_names_the_example() {
    let input = "examples:\n  - features: {x: {fid_v2_list: [1]}}\n  - features: {x: {float_list: [1]}}\n";
    let fex::corpus::Encoded::Examples(examples) = fex::corpus::Input::from_yaml(input).unwrap().encode().unwrap()
    else {
        panic!("examples encode as examples")
    };
    let bufs: Vec<&[u8]> = examples.iter().map(Vec::as_slice).collect();
    let err = fex::extract_examples(&plan("  - {name: x, kind: sparse}\n"), &bufs).unwrap_err();
    assert_eq!(err.row(), Some(1));
    assert_eq!(err.source_name(), Some("x"));
    assert_eq!(err.path().as_deref(), Some("example[1].named_feature[0].feature"));
}

#[test]
fn list_length_names_the_list_not_a_row() {
    let bytes = batch("batch_size: 3\nlists: [{name: item_id, features: [{fid_v2_list: [1]}]}]");
    let err = fex::extract_batch(&sparse_plan(), &bytes).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::ListLength { found: 1, batch: 3, .. }), "{err:?}");
    assert_eq!(err.source_name(), Some("item_id"));
    assert_eq!(err.path().as_deref(), Some("named_feature_list[0]"));
    assert_eq!((err.row(), err.offset()), (None, None));
}

#[test]
fn size_limit_is_about_the_whole_request() {
    let p =
        Plan::from_yaml("name: t\nlimits: {max_output_bytes: 1000}\nfeatures:\n  - {name: f, kind: sparse}\n").unwrap();
    let many = batch("batch_size: 100\nlists: [{name: f, type: SHARED, features: [{fid_v2_list: [1, 2]}]}]");
    let err = fex::extract_batch(&p, &many).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::TooLarge { limit: 1000, .. }), "{err:?}");
    assert_eq!((err.row(), err.source_name(), err.path(), err.offset()), (None, None, None, None));
}

#[test]
fn kind_moves_out_and_decode_errors_keep_their_cause() {
    let err = fex::extract_batch(&sparse_plan(), &corrupt_second_row()).unwrap_err();
    let cause = std::error::Error::source(&err).map(ToString::to_string);
    let ErrorKind::Decode(decode) = err.into_kind() else { panic!("a decode error") };
    assert_eq!(cause, Some(decode.to_string()));
}
