//! The one entry point: `extract` (index and write in one call), the serving
//! policy as an argument, rows edited between `index` and `write` (what the
//! offline filters and negative generation do), and legacy Instances.

mod common;

use common::{batch, examples};
use fex::proto::parser_pb::Instance;
use fex::{Extracted, Extractor, Input, Plan, Policy, SharedRows};
use prost::Message;

const MODEL: &str = "name: t
features:
  - {name: user_id, kind: sparse, shared: once}
  - {name: item_id, kind: sparse}
  - {name: ctr, kind: dense, shape: [1]}
";

fn plan() -> Plan {
    Plan::from_yaml(MODEL).unwrap()
}

/// Two candidates with a SHARED user.
fn request(user: u64, items: [u64; 2]) -> Vec<u8> {
    batch(&format!(
        "batch_size: 2
lists:
  - {{name: user_id, type: SHARED, features: [{{fid_v2_list: [{user}]}}]}}
  - {{name: item_id, features: [{{fid_v2_list: [{}]}}, {{fid_v2_list: [{}]}}]}}
  - {{name: ctr, features: [{{float_list: [0.5]}}, {{float_list: [0.25]}}]}}
",
        items[0], items[1]
    ))
}

fn extract(plan: &Plan, input: Input<'_>, policy: Policy<'_>) -> Extracted {
    let mut out = Extracted::default();
    Extractor::new().extract(plan, input, policy, &mut out).unwrap();
    out
}

#[test]
fn shared_rows_are_a_call_argument() {
    let (p, bytes) = (plan(), request(7, [1, 2]));
    let declared = extract(&p, Input::Batch(&bytes), Policy::default());
    let user = declared.tensor("user_id").unwrap();
    assert_eq!((user.shape.clone(), user.shared, user.u64s()), (vec![1, -1], true, vec![7]));
    // A training table wants one row per sample, whatever the model serves.
    let table = Policy { shared: SharedRows::Broadcast, ..Default::default() };
    let user = extract(&p, Input::Batch(&bytes), table).tensor("user_id").unwrap();
    assert_eq!((user.ragged_u64(), user.shared), (vec![vec![7], vec![7]], false));
}

#[test]
fn selected_outputs_and_limits_are_call_arguments() {
    let (p, bytes) = (plan(), request(7, [1, 2]));
    let picked = p.select(&["ctr"]).unwrap();
    let out = extract(&p, Input::Batch(&bytes), Policy { outputs: Some(&picked), ..Default::default() });
    assert_eq!(out.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["ctr"]);
    let tight = fex::config::Limits { max_batch_size: 1, ..p.limits };
    let policy = Policy { limits: Some(tight), ..Default::default() };
    let err = Extractor::new().extract(&p, Input::Batch(&bytes), policy, &mut Extracted::default()).unwrap_err();
    assert_eq!(err.to_string(), "batch_size is 2, allowed 0..=1");
}

#[test]
fn rows_can_be_dropped_and_taken_from_other_samples() {
    let p = plan();
    let (a, b) = (request(7, [1, 2]), request(8, [3, 4]));
    let mut ex = Extractor::new();
    let mut rows = ex.index(&p, Input::Batch(&a), None).unwrap();
    let other = ex.index(&p, Input::Batch(&b), None).unwrap();
    // Keep candidate 1 of the first request; add candidate 0 of the second
    // (a negative taken from another request, with its own user).
    rows.retain(|r| r == 1);
    rows.push_row(&other, 0).unwrap();
    assert_eq!(rows.len(), 2);
    let mut out = Extracted::default();
    ex.write(&p, &rows, Policy::default(), &mut out).unwrap();
    assert_eq!(out.batch_size, 2);
    assert_eq!(out.tensor("item_id").unwrap().ragged_u64(), [vec![2], vec![3]]);
    assert_eq!(out.tensor("user_id").unwrap().ragged_u64(), [vec![7], vec![8]], "each row keeps its own user");
    assert_eq!(out.tensor("ctr").unwrap().f32s(), [0.25, 0.5]);
}

#[test]
fn unedited_rows_write_what_extract_gives_row_by_row() {
    let p = plan();
    let bytes = request(7, [1, 2]);
    let mut ex = Extractor::new();
    let rows = ex.index(&p, Input::Batch(&bytes), None).unwrap();
    let mut written = Extracted::default();
    ex.write(&p, &rows, Policy::default(), &mut written).unwrap();
    let table = extract(&p, Input::Batch(&bytes), Policy { shared: SharedRows::Broadcast, ..Default::default() });
    assert_eq!(written.tensors(), table.tensors());
}

#[test]
fn rows_of_examples_keep_their_labels_and_line_ids() {
    let p = Plan::from_yaml(
        "name: t\nfeatures:\n  - {name: item_id, kind: sparse}\n  - {name: label, kind: label}\n  - {name: uid, kind: line_id, field: uid}\n",
    )
    .unwrap();
    let samples = examples(
        "  - {features: {item_id: {fid_v2_list: [1]}}, label: [1], line_id: {uid: 11}}
  - {features: {item_id: {fid_v2_list: [2]}}, label: [0], line_id: {uid: 12}}
",
    );
    let slices: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
    let mut ex = Extractor::new();
    let mut rows = ex.index(&p, Input::Examples(&slices), None).unwrap();
    let all = rows.clone();
    rows.retain(|r| r == 1);
    rows.push_row(&all, 0).unwrap();
    let mut out = Extracted::default();
    ex.write(&p, &rows, Policy::default(), &mut out).unwrap();
    assert_eq!(out.tensor("item_id").unwrap().ragged_u64(), [vec![2], vec![1]]);
    assert_eq!(out.tensor("label").unwrap().f32s(), [0.0, 1.0]);
    assert_eq!(out.tensor("uid").unwrap().i64s(), [12, 11]);
    let one = batch("batch_size: 1\nlists: []");
    let batch_rows = ex.index(&p, Input::Batch(&one), None).unwrap();
    let err = rows.push_row(&batch_rows, 0).unwrap_err();
    assert!(err.to_string().starts_with("rows indexed from Batch"), "{err}");
}

#[test]
fn legacy_instances_read_like_monolith_parse_instances() {
    let p = Plan::from_yaml(
        "name: t\nfeatures:
  - {name: slot_3, kind: sparse}
  - {name: goods, kind: sparse}
  - {name: score, kind: dense, shape: [2]}
  - {name: label, kind: label, shape: [2]}
  - {name: w, kind: instance_weight}
  - {name: uid, kind: line_id, field: uid}
",
    )
    .unwrap();
    let v1 = |slot: u64, id: u64| (slot << 54) | id;
    let matrix = |name: &str, fid: Vec<u64>, value: Vec<f32>| fex::proto::matrix::Feature {
        name: Some(name.into()),
        fid,
        float_value: value,
        ..Default::default()
    };
    let line_id = fex::proto::matrix::LineId { uid: Some(42), ..Default::default() };
    let instance = Instance {
        fid: vec![v1(3, 5), v1(4, 6), v1(3, 7)],
        label: vec![1.0, 0.0],
        instance_weight: Some(2.0),
        line_id: Some(line_id),
        feature: vec![matrix("goods", vec![99], vec![]), matrix("score", vec![], vec![0.5])],
        ..Default::default()
    }
    .encode_to_vec();
    let out = extract(&p, Input::Instances(&[&instance]), Policy::default());
    let v2 = |slot: u64, id: u64| (slot << 48) | id;
    assert_eq!(out.tensor("slot_3").unwrap().ragged_u64(), [vec![v2(3, 5), v2(3, 7)]], "v1 fids of slot 3, as v2");
    assert_eq!(out.tensor("goods").unwrap().ragged_u64(), [vec![99]]);
    assert_eq!(out.tensor("score").unwrap().f32s(), [0.5, 0.0]);
    assert_eq!(out.tensor("label").unwrap().f32s(), [1.0, 0.0]);
    assert_eq!(out.tensor("w").unwrap().f32s(), [2.0]);
    assert_eq!(out.tensor("uid").unwrap().i64s(), [42]);
    let err =
        Extractor::new().extract(&p, Input::Instances(&[b"\x0a\x05"]), Policy::default(), &mut Extracted::default());
    assert!(err.unwrap_err().to_string().starts_with("instance[0]"), "a bad Instance names its row");
}

/// Issue 21: a model written against the Examples Monolith's PBDataset makes
/// of Instances (`InstanceToExample`, monolith/native_training/data/
/// training_instance/cc/data_reader.cc lines 225-252: field 2 as a float_list
/// `value`, the fids of slot N as a fid_v1_list `fc_slot_<N>`) reads the same
/// Instances under those names, not empty tensors.
#[test]
fn instances_read_under_monolith_instance_to_example_names() {
    let p = Plan::from_yaml(
        "name: t\nfeatures:
  - {name: fc_slot_3, kind: sparse}
  - {name: slot_3, kind: sparse}
  - {name: fc_slot_9, kind: sparse}
  - {name: value, kind: dense, shape: [2]}
",
    )
    .unwrap();
    let v1 = |slot: u64, id: u64| (slot << 54) | id;
    let instance = Instance { fid: vec![v1(3, 5), v1(4, 6), v1(3, 7)], value: vec![0.5, 1.5], ..Default::default() }
        .encode_to_vec();
    let out = extract(&p, Input::Instances(&[&instance, &instance]), Policy::default());
    let v2 = |slot: u64, id: u64| (slot << 48) | id;
    let slot_3 = vec![v2(3, 5), v2(3, 7)];
    assert_eq!(out.tensor("fc_slot_3").unwrap().ragged_u64(), [slot_3.clone(), slot_3.clone()]);
    assert_eq!(out.tensor("slot_3").unwrap().ragged_u64(), [slot_3.clone(), slot_3]);
    assert_eq!(out.tensor("fc_slot_9").unwrap().ragged_u64(), [Vec::<u64>::new(), vec![]], "no fids of slot 9");
    assert_eq!(out.tensor("value").unwrap().f32s(), [0.5, 1.5, 0.5, 1.5]);
}

#[test]
fn once_policy_leaves_a_missing_individual_list_one_row_per_sample() {
    // Review finding: `SharedRows::Once` must not make an absent list of a
    // broadcast output come back as one shared row.
    let p =
        Plan::from_yaml("name: t\nfeatures:\n  - {name: u, kind: sparse}\n  - {name: v, kind: sparse, shared: once}\n")
            .unwrap();
    let bytes = batch("batch_size: 2\nlists: []");
    let out = extract(&p, Input::Batch(&bytes), Policy { shared: SharedRows::Once, ..Default::default() });
    let (u, v) = (out.tensor("u").unwrap(), out.tensor("v").unwrap());
    assert_eq!((u.shape, u.shared), (vec![2, -1], false));
    assert_eq!((v.shape, v.shared), (vec![1, -1], true), "declared shared: once, so one empty row");
}

#[test]
fn misused_selections_and_rows_are_errors_not_panics() {
    let p = plan();
    let bytes = request(7, [1, 2]);
    let mut ex = Extractor::new();
    let mut out = Extracted::default();
    for bad in [&[99][..], &[1, 1][..]] {
        let policy = Policy { outputs: Some(bad), ..Default::default() };
        let err = ex.extract(&p, Input::Batch(&bytes), policy, &mut out).unwrap_err();
        assert!(err.to_string().contains("is not a visible output"), "{err}");
    }
    let mut rows = ex.index(&p, Input::Batch(&bytes), None).unwrap();
    assert_eq!(rows.push_row(&rows.clone(), 5).unwrap_err().to_string(), "row 5 asked for, the rows hold 2");
    let other = Plan::from_yaml("name: o\nfeatures:\n  - {name: item_id, kind: sparse}\n").unwrap();
    let err = ex.write(&other, &rows, Policy::default(), &mut out).unwrap_err();
    assert!(err.to_string().contains("another model"), "{err}");
    // Rows are written one row per sample, whatever the policy says.
    let once = Policy { shared: SharedRows::Once, ..Default::default() };
    ex.write(&p, &rows, once, &mut out).unwrap();
    let user = out.tensor("user_id").unwrap();
    assert_eq!((user.shape, user.shared), (vec![2, -1], false));
}

/// Rows written one per sample decode a SHARED sequence once and copy it to
/// the rows that share it (`sequence::write`): the same columns as the
/// broadcast of the whole batch, an INDIVIDUAL sequence beside it, and the
/// output limit still holds on the copies.
#[test]
fn rows_sharing_a_sequence_write_what_the_broadcast_writes() {
    let plan = Plan::from_yaml(
        "name: t
features:
  - {name: clicks, kind: sequence, dtype: i64, max_len: 3}
  - {name: tags, kind: sequence, dtype: i64, max_len: 2}
",
    )
    .unwrap();
    let bytes = batch(
        "batch_size: 3
lists:
  - {name: clicks, type: SHARED, features: [{fid_v2_lists: [[1, 2], [3], [4, 5, 6]]}]}
  - {name: tags, features: [{fid_v2_lists: [[7]]}, {}, {fid_v2_lists: [[8], [9, 10]]}]}
",
    );
    let whole = extract(&plan, Input::Batch(&bytes), Policy { shared: SharedRows::Broadcast, ..Policy::default() });
    let mut ex = Extractor::new();
    let rows = ex.index(&plan, Input::Batch(&bytes), None).unwrap();
    let mut out = Extracted::default();
    ex.write(&plan, &rows, Policy::default(), &mut out).unwrap();
    assert_eq!(out, whole);
    assert_eq!(out.tensor("clicks").unwrap().ragged_u64().len(), 3);
    // Copies count against the output limit as decoded rows do: the
    // shared sequence alone is 3 rows of 3 positions, over 100 bytes.
    let mut tight = plan.limits;
    tight.max_output_bytes = 100;
    let err = ex.write(&plan, &rows, Policy { limits: Some(tight), ..Policy::default() }, &mut out).unwrap_err();
    assert!(matches!(err.kind(), fex::ErrorKind::TooLarge { .. }), "{err}");
}
