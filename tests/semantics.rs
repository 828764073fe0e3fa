//! What the golden corpus (tests/corpus/, run by tests/corpus.rs) cannot
//! state as a sample and expected text: corrupt bytes, buffer reuse, output
//! selection and its counters, typed error variants, and an output exactly at
//! the size limit. Every worked example of a rule of DESIGN.md section 3 is a
//! case file there.

mod common;

use common::batch;
use fex::{ErrorKind, Extracted, Plan};

fn plan(features: &str) -> Plan {
    Plan::from_yaml(&format!("name: t\ncompat: native\nfeatures:\n{features}")).unwrap()
}

/// Callers (the server's status mapping, offline row skipping) match on the
/// variant, not the message the corpus shows.
#[test]
fn errors_are_typed() {
    let floats = batch("batch_size: 1\nlists: [{name: x, features: [{float_list: [1]}]}]");
    let err = fex::extract_batch(&plan("  - {name: x, kind: sparse}\n"), &floats).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::TypeMismatch { .. }), "{err}");
    let p =
        Plan::from_yaml("name: t\nlimits: {max_output_bytes: 1000}\nfeatures:\n  - {name: f, kind: sparse}\n").unwrap();
    let many = batch("batch_size: 100\nlists: [{name: f, type: SHARED, features: [{fid_v2_list: [1, 2]}]}]");
    let err = fex::extract_batch(&p, &many).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::TooLarge { limit: 1000, .. }), "{err}");
}

#[test]
fn malformed_bytes_say_where() {
    let p = plan("  - {name: item_id, kind: sparse}\n");
    let good = batch(
        "batch_size: 1\nlists:\n  - {name: skip_me, features: [{fid_v2_list: [1]}]}\n  - {name: item_id, features: [{fid_v2_list: [1, 2]}]}\n",
    );
    // Cut the last fid short: the batch's own length prefix now overruns.
    let err = fex::extract_batch(&p, &good[..good.len() - 3]).unwrap_err();
    assert!(err.to_string().starts_with("named_feature_list[1] @ byte"), "{err}");
    // Corrupt the FidList's packed length inside the needed list.
    let mut bad = good.clone();
    let packed = [0x0a, 16, 1, 0, 0, 0, 0, 0, 0, 0, 2];
    let at = bad.windows(packed.len()).position(|w| w == packed).unwrap() + 1;
    bad[at] = 15;
    let err = fex::extract_batch(&p, &bad).unwrap_err().to_string();
    assert!(err.starts_with("named_feature_list[1].feature[0] @ byte"), "{err}");
    assert!(err.ends_with("packed run of 15 bytes is not a multiple of 8"), "{err}");
}

#[test]
fn unneeded_lists_are_not_decoded() {
    // Garbage inside a list the plan does not read is skipped by its length.
    let p = plan("  - {name: item_id, kind: sparse}\n");
    let mut bytes = batch("batch_size: 1\nlists: [{name: item_id, features: [{fid_v2_list: [5]}]}]");
    // named_feature_list { name: "junk"; feature: <garbage> }
    let junk = [0x0a, 4, b'j', b'u', b'n', b'k', 0x12, 3, 0xff, 0xff, 0xff];
    bytes.extend([0x0a, junk.len() as u8]);
    bytes.extend(junk);
    let out = fex::extract_batch(&p, &bytes).unwrap();
    assert_eq!(out.tensor("item_id").unwrap().u64s(), [5]);
}

#[test]
fn reused_buffers_give_the_same_result() {
    let p = Plan::default_model();
    let first = batch("batch_size: 2\nlists: [{name: item_id, features: [{fid_v2_list: [1, 2]}, {fid_v2_list: [3]}]}]");
    let second = batch("batch_size: 1\nlists: [{name: item_id, features: [{fid_v2_list: [9]}]}]");
    let mut ex = fex::Extractor::new();
    let mut out = Extracted::default();
    ex.extract_batch(&p, &first, &mut out).unwrap();
    ex.extract_batch(&p, &second, &mut out).unwrap();
    assert_eq!(out, fex::extract_batch(&p, &second).unwrap());
    // Whole-model calls hand over the column list whole; a selection, or
    // another model, in between must still find its own columns and names.
    let picked = p.select(&["item_id"]).unwrap();
    let policy = || fex::Policy { outputs: Some(&picked), ..Default::default() };
    let other = Plan::from_yaml("name: o\nfeatures:\n  - {name: ids, source: item_id, kind: sparse}\n").unwrap();
    for _ in 0..2 {
        ex.extract(&p, fex::Input::Batch(&first), policy(), &mut out).unwrap();
        let mut fresh = Extracted::default();
        fex::Extractor::new().extract(&p, fex::Input::Batch(&first), policy(), &mut fresh).unwrap();
        assert_eq!(out, fresh);
        ex.extract_batch(&other, &first, &mut out).unwrap();
        assert_eq!(out, fex::extract_batch(&other, &first).unwrap());
        ex.extract_batch(&p, &second, &mut out).unwrap();
        assert_eq!(out, fex::extract_batch(&p, &second).unwrap());
        // A call that fails while computing (whole-model calls compute
        // into `out`'s own columns) leaves no half result behind, and the
        // next call is whole again.
        let wrong = batch("batch_size: 1\nlists: [{name: item_id, features: [{float_list: [1.5]}]}]");
        assert!(ex.extract_batch(&p, &wrong, &mut out).is_err());
        assert!(out.columns.is_empty(), "{out:?}");
        ex.extract_batch(&p, &first, &mut out).unwrap();
        assert_eq!(out, fex::extract_batch(&p, &first).unwrap());
    }
}

#[test]
fn selected_outputs_only_and_list_counts() {
    let p = Plan::default_model();
    let bytes = batch(
        "batch_size: 1\nlists:\n  - {name: item_id, features: [{fid_v2_list: [4]}]}\n  - {name: noise, features: [{fid_v2_list: [1]}]}\n",
    );
    let picked = p.select(&["item_ctr_7d", "item_id"]).unwrap();
    let mut out = Extracted::default();
    let policy = fex::Policy { outputs: Some(&picked), ..Default::default() };
    fex::Extractor::new().extract(&p, fex::Input::Batch(&bytes), policy, &mut out).unwrap();
    let names: Vec<&str> = out.columns.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["item_ctr_7d", "item_id"]);
    assert_eq!((out.stats.lists_seen, out.stats.lists_decoded), (2, 1));
    assert_eq!(p.select(&["item_id", "item_id"]).unwrap_err().to_string(), r#"output "item_id" is asked for twice"#);
    let err = p.select(&["nope"]).unwrap_err().to_string();
    assert!(err.starts_with(r#"model "default" has no output "nope"; it has user_id, "#), "{err}");
}

/// The limit is inclusive, and a fixed output is charged once: 2 rows of 1024
/// f32 labels take exactly 8192 bytes. (Over the limit:
/// tests/corpus/wide_fixed_outputs_fail_before_allocating.yaml.)
#[test]
fn output_exactly_at_the_limit_is_allowed() {
    let p = Plan::from_yaml(
        "name: t\nlimits: {max_output_bytes: 8192}\nfeatures:\n  - {name: l, kind: label, shape: [1024]}\n",
    )
    .unwrap();
    let out = fex::extract_batch(&p, &batch("batch_size: 2")).unwrap();
    assert_eq!(out.tensor("l").unwrap().f32s(), vec![0.0; 2048]);
}
