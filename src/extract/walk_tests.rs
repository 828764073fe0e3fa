//! Lists walked straight into their columns must give what the cell path
//! gives, results and errors alike, on well-formed and damaged batches:
//! split runs, unpacked and v1 fids, scalars, repeated lists, SHARED lists of
//! any length, lists longer or shorter than the batch, and flipped bytes.

use proptest::prelude::*;
use prost::Message;

use super::{Extracted, Extractor, Input, Policy};
use crate::Plan;
use crate::proto::monolith_pb::{self as pb, feature::Type};

const MODEL: &str = "name: m\ncompat: COMPAT\nfeatures:
  - {name: a, kind: sparse}
  - {name: b, kind: sparse, splits: i32, shared: once}
  - {name: d, kind: dense, shape: [2]DEFAULT}
  - {name: e, kind: dense, shape: [1]}
  - {name: h, op: hash, input: a, buckets: 7}
  - {name: s, kind: string}
";

fn feature() -> impl Strategy<Value = pb::Feature> {
    // Up to 16 fids: runs of every size up to and past a one-byte length,
    // and lists long enough for the padded copy (128 bytes after a run).
    let fids = prop_oneof![prop::collection::vec(any::<u64>(), 0..4), prop::collection::vec(any::<u64>(), 0..17)];
    let floats = prop::collection::vec(-2.0f32..2.0, 0..4);
    prop_oneof![
        fids.clone().prop_map(|value| Type::FidV2List(pb::FidList { value })),
        fids.prop_map(|value| Type::FidV1List(pb::FidList { value })),
        floats.prop_map(|value| Type::FloatList(pb::FloatList { value })),
        any::<i64>().prop_map(Type::Int64Value),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..6), 0..3)
            .prop_map(|value| Type::BytesList(pb::BytesList { value })),
        prop::collection::vec(any::<u8>(), 0..6).prop_map(Type::BytesValue),
    ]
    .prop_map(|t| pb::Feature { r#type: Some(t) })
}

fn batch() -> impl Strategy<Value = Vec<u8>> {
    let names = || prop::sample::select(vec!["a", "b", "d", "e", "s", "z"]);
    let features = prop_oneof![prop::collection::vec(feature(), 0..5), prop::collection::vec(feature(), 0..12)];
    let list = (names(), features, any::<bool>(), prop::option::weighted(0.15, names()));
    (prop::collection::vec(list, 0..6), prop_oneof![0..4i32, 0..12i32], any::<usize>(), any::<u8>(), 0..4u8).prop_map(
        |(lists, rows, at, byte, damage)| {
            let lists = lists
                .into_iter()
                .map(|(name, feature, shared, renamed)| {
                    (pb::NamedFeatureList { name: name.into(), feature, r#type: i32::from(shared), id: 0 }, renamed)
                })
                .collect();
            let mut buf = super::test_batches::encode(rows, lists);
            if damage == 1 && !buf.is_empty() {
                let i = at % buf.len();
                buf[i] = byte;
            }
            buf
        },
    )
}

fn run(plan: &Plan, buf: &[u8], outputs: Option<&[usize]>, cells_only: bool) -> Result<Extracted, String> {
    let mut ex = Extractor::new();
    ex.index.cells_only = cells_only;
    let mut out = Extracted::default();
    let policy = Policy { outputs, ..Default::default() };
    ex.extract(plan, Input::Batch(buf), policy, &mut out).map(|()| out).map_err(|e| e.to_string())
}

proptest! {
    #[test]
    fn walked_lists_agree_with_cells(buf in batch(), monolith in any::<bool>(), pick in any::<[bool; 6]>(), all in any::<bool>()) {
        let compat = if monolith { "monolith" } else { "native" };
        let default = if monolith { "" } else { ", default: 0.5" };
        let plan = Plan::from_yaml(&MODEL.replace("COMPAT", compat).replace("DEFAULT", default)).unwrap();
        // Every output, or a subset: a list no selected output reads must
        // still be judged as the checked path judges it.
        let names: Vec<&str> = ["a", "b", "d", "e", "h", "s"].into_iter().zip(pick).filter(|(_, p)| *p).map(|(n, _)| n).collect();
        let picked = plan.select(&names).unwrap();
        let outputs = (!all).then_some(picked.as_slice());
        prop_assert_eq!(run(&plan, &buf, outputs, false), run(&plan, &buf, outputs, true));
    }
}

/// The comparison above means something only if regular batches are walked.
#[test]
fn a_regular_batch_is_walked_without_cells() {
    let plan = Plan::from_yaml(&MODEL.replace("COMPAT", "native").replace("DEFAULT", "")).unwrap();
    let fids = |v: &[u64]| pb::Feature { r#type: Some(Type::FidV2List(pb::FidList { value: v.to_vec() })) };
    let list = |name: &str, feature, shared| pb::NamedFeatureList { name: name.into(), feature, r#type: shared, id: 0 };
    let bytes = |v: &[u8]| pb::Feature { r#type: Some(Type::BytesList(pb::BytesList { value: vec![v.to_vec()] })) };
    let batch = pb::ExampleBatch {
        named_feature_list: vec![
            list("a", vec![fids(&[1, 2]), fids(&[3])], 0),
            list("b", vec![fids(&[9])], 1),
            list("s", vec![bytes(b"x"), pb::Feature { r#type: Some(Type::BytesValue(b"yz".to_vec())) }], 0),
        ],
        batch_size: 2,
        ..Default::default()
    };
    let mut ex = Extractor::new();
    let mut out = Extracted::default();
    ex.extract_batch(&plan, &batch.encode_to_vec(), &mut out).unwrap();
    assert!(ex.index.has_direct() && ex.index.cells.is_empty(), "every list walked");
    assert_eq!(out.tensor("s").unwrap().strings(), [b"x".as_slice(), b"yz"]);
    let a = out.tensor("a").unwrap();
    assert_eq!((a.ragged_u64(), a.shape), (vec![vec![1, 2], vec![3]], vec![2, -1]));
    let b = out.tensor("b").unwrap();
    assert_eq!((b.ragged_u64(), b.shared, b.splits_dtype), (vec![vec![9]], true, crate::DataType::I32 as i32));
}

/// Runs of every size a one-byte length allows, most followed by 128 bytes
/// of their list (copied with one fixed-size copy), the last ones not.
#[test]
fn runs_of_every_length_are_copied_exactly() {
    let plan = Plan::from_yaml(&MODEL.replace("COMPAT", "native").replace("DEFAULT", "")).unwrap();
    let rows: Vec<Vec<u64>> = (0..16u64).map(|r| (0..r).map(|i| r << 32 | i).collect()).collect();
    let feature = |v: &Vec<u64>| pb::Feature { r#type: Some(Type::FidV2List(pb::FidList { value: v.clone() })) };
    let list = pb::NamedFeatureList { name: "a".into(), feature: rows.iter().map(feature).collect(), r#type: 0, id: 0 };
    let batch = pb::ExampleBatch { named_feature_list: vec![list], batch_size: 16, ..Default::default() };
    let buf = batch.encode_to_vec();
    let outputs = plan.select(&["a"]).unwrap();
    let walked = run(&plan, &buf, Some(&outputs), false).unwrap();
    assert_eq!(walked.tensor("a").unwrap().ragged_u64(), rows);
    assert_eq!(Ok(walked), run(&plan, &buf, Some(&outputs), true));
}

/// The LineId memo holds values before their outputs are charged, so it is
/// only built within the call's output limit; past it each output reads its
/// rows itself, after its own charge, and the call fails as it always has.
#[test]
fn the_line_id_memo_stays_within_the_output_limit() {
    let model = |limit: usize| {
        Plan::from_yaml(&format!(
            "name: m\nlimits: {{max_output_bytes: {limit}}}\nfeatures:\n  - {{name: uid, kind: line_id, field: uid}}\n  - {{name: actions, kind: line_id, field: actions, shape: [100]}}\n"
        ))
        .unwrap()
    };
    let line_id = crate::proto::matrix::LineId { uid: Some(7), actions: vec![1, 2], ..Default::default() };
    let feature = pb::Feature { r#type: Some(Type::BytesList(pb::BytesList { value: vec![line_id.encode_to_vec()] })) };
    let list = pb::NamedFeatureList { name: "__LINE_ID__".into(), feature: vec![feature; 100], r#type: 0, id: 0 };
    let batch =
        pb::ExampleBatch { named_feature_list: vec![list], batch_size: 100, ..Default::default() }.encode_to_vec();
    let mut ex = Extractor::new();
    let mut out = Extracted::default();
    ex.extract_batch(&model(1 << 20), &batch, &mut out).unwrap();
    assert!(ex.memo.borrow().was_built(), "within the limit the memo serves both outputs");
    assert_eq!(out.tensor("actions").unwrap().i64s()[..3], [1, 2, 0]);
    let err = ex.extract_batch(&model(1000), &batch, &mut out).unwrap_err();
    assert!(err.to_string().starts_with("output would take"), "{err}");
    assert!(!ex.memo.borrow().was_built(), "100 rows x 101 values would pass 1000 bytes");
}

const OPS_MODEL: &str = "name: m\nfeatures:
  - {name: a, kind: sparse}
  - {name: b, kind: sparse, splits: i32, shared: once}
  - {name: d, kind: dense, shape: [2], default: 0.5}
  - {name: e, kind: dense, shape: [1]}
  - {name: z, kind: string}
  - {name: h, op: hash, input: a, buckets: 7}
  - {name: ab, op: cross, inputs: [a, b]}
  - {name: de, op: concat, inputs: [d, e]}
  - {name: k, op: kjt, inputs: [a, b, h]}
";

proptest! {
    /// Rows of one batch (dropped, reordered, repeated) copied out of the
    /// batch extracted whole give what writing each row from its cells
    /// gives, results and errors alike, whichever way `write` goes.
    #[test]
    fn rows_of_a_batch_write_what_their_cells_give(
        buf in batch(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..16),
        all in any::<bool>(),
    ) {
        let plan = Plan::from_yaml(OPS_MODEL).unwrap();
        let mut ex = Extractor::new();
        let Ok(mut rows) = ex.index(&plan, Input::Batch(&buf), None) else { return Ok(()) };
        if !all && !rows.is_empty() {
            let order: Vec<usize> = picks.iter().map(|i| i.index(rows.len())).collect();
            rows.select(&order).unwrap();
        }
        let mut write = |whole: bool| {
            let mut out = Extracted::default();
            ex.write_rows(&plan, &rows, Policy::default(), &mut out, whole).map(|()| out).map_err(|e| e.to_string())
        };
        let (copied, written) = (write(true), write(false));
        prop_assert_eq!(copied, written);
    }
}

/// The comparison above means something only if rows are copied out of the
/// whole batch: a batch's rows, all of them or most, are.
#[test]
fn most_rows_of_a_batch_are_copied_out_of_it() {
    let plan = Plan::from_yaml(OPS_MODEL).unwrap();
    let fids = |v: &[u64]| pb::Feature { r#type: Some(Type::FidV2List(pb::FidList { value: v.to_vec() })) };
    let list = |name: &str, feature, shared| pb::NamedFeatureList { name: name.into(), feature, r#type: shared, id: 0 };
    let a = vec![fids(&[1, 2]), fids(&[3]), fids(&[]), fids(&[4, 5, 6])];
    let batch = pb::ExampleBatch {
        named_feature_list: vec![list("a", a, 0), list("b", vec![fids(&[9])], 1)],
        batch_size: 4,
        ..Default::default()
    }
    .encode_to_vec();
    let mut ex = Extractor::new();
    let mut rows = ex.index(&plan, Input::Batch(&batch), None).unwrap();
    rows.select(&[3, 0, 1]).unwrap();
    let mut out = Extracted::default();
    ex.write(&plan, &rows, Policy::default(), &mut out).unwrap();
    assert_eq!(ex.whole.batch_size, 4, "the batch was extracted whole");
    assert_eq!(out.batch_size, 3);
    assert_eq!(out.tensor("a").unwrap().ragged_u64(), vec![vec![4, 5, 6], vec![1, 2], vec![3]]);
    assert_eq!(out.tensor("b").unwrap().ragged_u64(), vec![vec![9]; 3]);
    // One row of four: written from its cells.
    rows.select(&[1]).unwrap();
    let mut ex = Extractor::new();
    ex.write(&plan, &rows, Policy::default(), &mut out).unwrap();
    assert_eq!((ex.whole.batch_size, out.tensor("a").unwrap().ragged_u64()), (0, vec![vec![1, 2]]));
}
