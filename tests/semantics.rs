//! Worked examples, one per rule of DESIGN.md section 3 (what Monolith's
//! parse_example_batch means) and of the native mode. Inputs are built with
//! prost; expected tensors are written out by hand.

use fex::proto::matrix::LineId;
use fex::proto::monolith_pb::{self as pb, feature::Type};
use fex::{ExtractError, Extracted, Plan, Tensor};
use prost::Message;

const SHARED: i32 = 1;
const INDIVIDUAL: i32 = 0;

fn feature(t: Type) -> pb::Feature {
    pb::Feature { r#type: Some(t) }
}
fn fids(v: &[u64]) -> pb::Feature {
    feature(Type::FidV2List(pb::FidList { value: v.to_vec() }))
}
fn fids_v1(v: &[u64]) -> pb::Feature {
    feature(Type::FidV1List(pb::FidList { value: v.to_vec() }))
}
fn floats(v: &[f32]) -> pb::Feature {
    feature(Type::FloatList(pb::FloatList { value: v.to_vec() }))
}
fn doubles(v: &[f64]) -> pb::Feature {
    feature(Type::DoubleList(pb::DoubleList { value: v.to_vec() }))
}
fn int64s(v: &[i64]) -> pb::Feature {
    feature(Type::Int64List(pb::Int64List { value: v.to_vec() }))
}
fn bytes(v: &[&str]) -> pb::Feature {
    feature(Type::BytesList(pb::BytesList { value: v.iter().map(|s| s.as_bytes().to_vec()).collect() }))
}
fn line_id(l: &LineId) -> pb::Feature {
    feature(Type::BytesList(pb::BytesList { value: vec![l.encode_to_vec()] }))
}
fn list(name: &str, kind: i32, features: Vec<pb::Feature>) -> pb::NamedFeatureList {
    pb::NamedFeatureList { name: name.into(), feature: features, r#type: kind, id: 0 }
}
fn batch(batch_size: i32, lists: Vec<pb::NamedFeatureList>) -> Vec<u8> {
    pb::ExampleBatch { named_feature_list: lists, batch_size, ..Default::default() }.encode_to_vec()
}

fn plan(compat: &str, features: &str) -> Plan {
    Plan::from_yaml(&format!("name: t\ncompat: {compat}\nfeatures:\n{features}")).unwrap()
}
fn run(plan: &Plan, bytes: &[u8]) -> Extracted {
    fex::extract_batch(plan, bytes).unwrap_or_else(|e| panic!("{e}"))
}
fn tensor(out: &Extracted, name: &str) -> Tensor {
    out.tensor(name).unwrap_or_else(|| panic!("no tensor {name}"))
}

#[test]
fn shared_list_broadcasts_feature_0_to_every_row() {
    let p = plan("native", "  - {name: user_id, kind: sparse}\n");
    let out = run(&p, &batch(3, vec![list("user_id", SHARED, vec![fids(&[7, 8])])]));
    let t = tensor(&out, "user_id");
    assert_eq!(t.shape, [3, -1]);
    assert_eq!(t.splits(), [0, 2, 4, 6]);
    assert_eq!(t.u64s(), [7, 8, 7, 8, 7, 8]);
    assert!(!t.shared);
}

#[test]
fn shared_once_returns_one_row_marked_shared() {
    let p = plan(
        "native",
        "  - {name: user_id, kind: sparse, shared: once, splits: i32}\n  - {name: user_city, kind: sparse, shared: once}\n",
    );
    let out = run(&p, &batch(3, vec![list("user_id", SHARED, vec![fids(&[7, 8])])]));
    let t = tensor(&out, "user_id");
    assert_eq!((t.shape.as_slice(), t.shared), (&[1i64, -1][..], true));
    assert_eq!((t.splits(), t.u64s()), (vec![0, 2], vec![7, 8]));
    assert_eq!(t.row_splits.len(), 8, "i32 splits");
    // A missing list of a shared-once output keeps the [1, -1] shape.
    let city = tensor(&out, "user_city");
    assert_eq!((city.shape.as_slice(), city.shared, city.splits()), (&[1i64, -1][..], true, vec![0, 0]));
}

#[test]
fn individual_list_gives_one_row_per_feature() {
    let p = plan("native", "  - {name: item_id, kind: sparse}\n");
    let out = run(&p, &batch(2, vec![list("item_id", INDIVIDUAL, vec![fids(&[1, 2, 3]), fids(&[])])]));
    assert_eq!(tensor(&out, "item_id").ragged_u64(), [vec![1, 2, 3], vec![]]);
}

#[test]
fn fid_v1_becomes_v2() {
    let p = plan("native", "  - {name: f, kind: sparse}\n");
    let v1 = (5u64 << 54) | (0x3f << 48) | 0x1234;
    let out = run(&p, &batch(1, vec![list("f", INDIVIDUAL, vec![fids_v1(&[v1])])]));
    assert_eq!(tensor(&out, "f").u64s(), [(5u64 << 48) | 0x1234]);
}

#[test]
fn missing_features_give_empty_rows_and_defaults() {
    let p = plan(
        "native",
        "  - {name: f, kind: sparse}\n  - {name: d, kind: dense, shape: [2], default: 0.5}\n  - {name: s, kind: string}\n",
    );
    let out = run(&p, &batch(2, vec![list("unrelated", SHARED, vec![fids(&[1])])]));
    assert_eq!(tensor(&out, "f").splits(), [0, 0, 0]);
    assert_eq!(tensor(&out, "d").f32s(), [0.5; 4]);
    assert_eq!(tensor(&out, "s").strings(), [b"", b""]);
}

#[test]
fn dense_copies_a_prefix_then_pads() {
    let p = plan("native", "  - {name: d, kind: dense, shape: [3], default: -1}\n");
    let rows = vec![floats(&[1., 2., 3., 4.]), floats(&[9.]), pb::Feature::default()];
    let out = run(&p, &batch(3, vec![list("d", INDIVIDUAL, rows)]));
    let t = tensor(&out, "d");
    assert_eq!(t.shape, [3, 3]);
    assert_eq!(t.f32s(), [1., 2., 3., 9., -1., -1., -1., -1., -1.]);
}

#[test]
fn dense_multi_dimensional_shape_is_kept() {
    let p = plan("native", "  - {name: d, kind: dense, shape: [2, 2]}\n");
    let out = run(&p, &batch(1, vec![list("d", INDIVIDUAL, vec![floats(&[1., 2., 3.])])]));
    let t = tensor(&out, "d");
    assert_eq!((t.shape.as_slice(), t.f32s()), (&[1i64, 2, 2][..], vec![1., 2., 3., 0.]));
}

#[test]
fn double_list_is_cast_to_the_declared_float() {
    let p = plan(
        "native",
        "  - {name: d, kind: dense, shape: [2]}\n  - {name: e, kind: dense, dtype: f64, shape: [2], source: d}\n",
    );
    let out = run(&p, &batch(1, vec![list("d", INDIVIDUAL, vec![doubles(&[0.1, 2.5])])]));
    assert_eq!(tensor(&out, "d").f32s(), [0.1f64 as f32, 2.5]);
    assert_eq!(tensor(&out, "e").f64s(), [0.1, 2.5]);
}

#[test]
fn int64_dense() {
    let p = plan("native", "  - {name: d, kind: dense, dtype: i64, shape: [2]}\n");
    let out = run(&p, &batch(1, vec![list("d", INDIVIDUAL, vec![int64s(&[-5, 6, 7])])]));
    assert_eq!(tensor(&out, "d").i64s(), [-5, 6]);
}

#[test]
fn flt_min_quirk_only_in_monolith_mode() {
    let lists = || batch(2, vec![list("d", INDIVIDUAL, vec![floats(&[]), pb::Feature::default()])]);
    let mono = run(&plan("monolith", "  - {name: d, kind: dense}\n"), &lists());
    // Present but empty float_list → FLT_MIN; an empty Feature → 0.
    assert_eq!(tensor(&mono, "d").f32s(), [f32::MIN_POSITIVE, 0.0]);
    let native = run(&plan("native", "  - {name: d, kind: dense, default: 0.25}\n"), &lists());
    assert_eq!(tensor(&native, "d").f32s(), [0.25, 0.25]);
    // Only dim 1 has the quirk.
    let wide = run(&plan("monolith", "  - {name: d, kind: dense, shape: [2]}\n"), &lists());
    assert_eq!(tensor(&wide, "d").f32s(), [0.0; 4]);
}

#[test]
fn monolith_ignores_scalar_values_native_reads_them() {
    let rows = || batch(1, vec![list("d", INDIVIDUAL, vec![feature(Type::FloatValue(3.5))])]);
    assert_eq!(tensor(&run(&plan("monolith", "  - {name: d, kind: dense}\n"), &rows()), "d").f32s(), [0.0]);
    assert_eq!(tensor(&run(&plan("native", "  - {name: d, kind: dense}\n"), &rows()), "d").f32s(), [3.5]);
}

#[test]
fn type_mismatch_is_an_error_in_native_mode_and_an_empty_row_in_monolith() {
    let bytes = batch(1, vec![list("x", INDIVIDUAL, vec![floats(&[1.0])])]);
    let err = fex::extract_batch(&plan("native", "  - {name: x, kind: sparse}\n"), &bytes).unwrap_err();
    assert!(matches!(err, ExtractError::TypeMismatch { .. }));
    assert_eq!(
        err.to_string(),
        r#"named_feature_list[0].feature[0] ("x"): found float_list, expected fid_v1_list or fid_v2_list"#
    );
    let out = run(&plan("monolith", "  - {name: x, kind: sparse}\n"), &bytes);
    assert_eq!(tensor(&out, "x").splits(), [0, 0]);
    let err = fex::extract_batch(&plan("native", "  - {name: x, kind: dense, dtype: i64}\n"), &bytes).unwrap_err();
    assert!(err.to_string().contains("found float_list, expected int64_list"), "{err}");
}

#[test]
fn strings_take_bytes_list_0() {
    let p = plan("native", "  - {name: title, kind: string}\n");
    let rows = vec![bytes(&["hello", "ignored"]), feature(Type::BytesValue(b"raw".to_vec())), bytes(&[])];
    let out = run(&p, &batch(3, vec![list("title", INDIVIDUAL, rows)]));
    let t = tensor(&out, "title");
    assert_eq!(t.strings(), [&b"hello"[..], b"raw", b""]);
    assert_eq!(t.splits(), [0, 5, 8, 8]);
}

#[test]
fn sequences_truncate_positions_and_pad_width() {
    let p = plan("native", "  - {name: seq, kind: sequence, dtype: i64, max_len: 2, width: 2}\n");
    let lists = |v: &[&[u64]]| {
        let list = v.iter().map(|l| pb::FidList { value: l.to_vec() }).collect();
        feature(Type::FidV2Lists(pb::FidLists { list }))
    };
    let rows = vec![lists(&[&[1, 2, 3], &[4], &[5]]), lists(&[&[6]])];
    let out = run(&p, &batch(2, vec![list("seq", INDIVIDUAL, rows)]));
    let t = tensor(&out, "seq");
    assert_eq!(t.shape, [2, -1, 2]);
    assert_eq!(t.splits(), [0, 2, 3]);
    assert_eq!(t.i64s(), [1, 2, 4, 0, 6, 0]);
}

fn sample_line_id() -> LineId {
    LineId {
        uid: Some(42),
        req_time: Some(1_700_000_000),
        req_id: Some("r-1".into()),
        actions: vec![3, 5],
        sample_rate: Some(0.25),
        rank: Some(7),
        ..Default::default()
    }
}

#[test]
fn line_id_fields_by_name_and_number() {
    let p = plan(
        "native",
        "  - {name: uid, kind: line_id, field: uid}\n  - {name: t, kind: line_id, field: req_time}\n  - {name: req_id, kind: line_id, field: req_id}\n  - {name: actions, kind: line_id, field: actions, shape: [3]}\n  - {name: sr, kind: line_id, field: sample_rate}\n  - {name: rank, kind: line_id, field: 145, type: int32}\n",
    );
    let empty = LineId::default();
    let out =
        run(&p, &batch(2, vec![list("__LINE_ID__", INDIVIDUAL, vec![line_id(&sample_line_id()), line_id(&empty)])]));
    assert_eq!(tensor(&out, "uid").i64s(), [42, 0]);
    assert_eq!(tensor(&out, "t").i64s(), [1_700_000_000, 0]);
    assert_eq!(tensor(&out, "req_id").strings(), [&b"r-1"[..], b""]);
    assert_eq!(tensor(&out, "actions").i64s(), [3, 5, 0, 0, 0, 0]);
    // sample_rate is proto2 with default 1.0 when the field is absent.
    assert_eq!(tensor(&out, "sr").f32s(), [0.25, 1.0]);
    assert_eq!(tensor(&out, "rank").i64s(), [7, 0]);
}

#[test]
fn missing_line_id_list_defaults_differ_by_mode() {
    let yaml = "  - {name: sr, kind: line_id, field: sample_rate}\n";
    let bytes = batch(1, vec![]);
    assert_eq!(tensor(&run(&plan("native", yaml), &bytes), "sr").f32s(), [1.0]);
    assert_eq!(tensor(&run(&plan("monolith", yaml), &bytes), "sr").f32s(), [0.0]);
}

#[test]
fn meta_features_equal_extra_features() {
    // dense_features=['__meta__actions'] equals extra_features=['actions'].
    let p = plan(
        "native",
        "  - {name: a, kind: line_id, field: actions}\n  - {name: __meta__actions, kind: dense, dtype: i64}\n",
    );
    let from_line_id = run(&p, &batch(1, vec![list("__LINE_ID__", INDIVIDUAL, vec![line_id(&sample_line_id())])]));
    assert_eq!(tensor(&from_line_id, "a").i64s(), [3]);
    assert_eq!(tensor(&from_line_id, "__meta__actions").i64s(), [3]);
    // A dual-written __meta__ feature is read as it is.
    let dual = batch(
        1,
        vec![
            list("__LINE_ID__", INDIVIDUAL, vec![line_id(&sample_line_id())]),
            list("__meta__actions", INDIVIDUAL, vec![int64s(&[3])]),
        ],
    );
    assert_eq!(tensor(&run(&p, &dual), "__meta__actions").i64s(), [3]);
}

#[test]
fn labels_and_instance_weight() {
    let p = plan(
        "native",
        "  - {name: label, kind: label, shape: [2], default: -1}\n  - {name: w, kind: instance_weight}\n",
    );
    let bytes = batch(
        3,
        vec![
            list("__LABEL__", INDIVIDUAL, vec![floats(&[1., 0.]), floats(&[1.]), pb::Feature::default()]),
            list("instance_weight", INDIVIDUAL, vec![floats(&[0.5]), floats(&[-2.]), floats(&[])]),
        ],
    );
    let out = run(&p, &bytes);
    assert_eq!(tensor(&out, "label").f32s(), [1., 0., 1., -1., -1., -1.]);
    // The weight is the value when positive, else 1.
    assert_eq!(tensor(&out, "w").f32s(), [0.5, 1.0, 1.0]);
    assert_eq!(tensor(&out, "w").shape, [3]);
}

#[test]
fn missing_weight_list_is_1_natively_and_0_in_monolith() {
    let yaml = "  - {name: w, kind: instance_weight}\n";
    assert_eq!(tensor(&run(&plan("native", yaml), &batch(2, vec![])), "w").f32s(), [1.0, 1.0]);
    assert_eq!(tensor(&run(&plan("monolith", yaml), &batch(2, vec![])), "w").f32s(), [0.0, 0.0]);
}

#[test]
fn monolith_reads_special_lists_row_by_row_even_when_shared() {
    let yaml = "  - {name: label, kind: label}\n";
    let bytes = batch(2, vec![list("__LABEL__", SHARED, vec![floats(&[1.])])]);
    assert_eq!(tensor(&run(&plan("monolith", yaml), &bytes), "label").f32s(), [1., 0.]);
    assert_eq!(tensor(&run(&plan("native", yaml), &bytes), "label").f32s(), [1., 1.]);
}

#[test]
fn examples_input_reads_named_features_and_fields_100_to_102() {
    let p = plan(
        "native",
        "  - {name: item_id, kind: sparse}\n  - {name: label, kind: label}\n  - {name: w, kind: instance_weight}\n  - {name: sr, kind: line_id, field: sample_rate}\n",
    );
    let named =
        |name: &str, f: pb::Feature| pb::NamedFeature { name: name.into(), feature: Some(f), id: 0, sorted_id: 0 };
    let a = pb::Example {
        named_feature: vec![named("item_id", fids(&[11, 12]))],
        line_id: Some(sample_line_id()),
        label: vec![1.0],
        instance_weight: 2.0,
        ..Default::default()
    };
    let b = pb::Example { named_feature: vec![named("other", fids(&[1]))], ..Default::default() };
    let (a, b) = (a.encode_to_vec(), b.encode_to_vec());
    let out = fex::extract_examples(&p, &[&a, &b]).unwrap();
    assert_eq!(out.batch_size, 2);
    assert_eq!(tensor(&out, "item_id").ragged_u64(), [vec![11, 12], vec![]]);
    assert_eq!(tensor(&out, "label").f32s(), [1.0, 0.0]);
    assert_eq!(tensor(&out, "w").f32s(), [2.0, 1.0]);
    assert_eq!(tensor(&out, "sr").f32s(), [0.25, 1.0]);
}

#[test]
fn monolith_examples_pad_missing_labels_with_invalid_label() {
    let p = plan("monolith", "  - {name: label, kind: label, shape: [2]}\n");
    let e = pb::Example { label: vec![1.0], ..Default::default() }.encode_to_vec();
    assert_eq!(tensor(&fex::extract_examples(&p, &[&e]).unwrap(), "label").f32s(), [1.0, f32::MIN]);
}

#[test]
fn individual_list_must_have_batch_size_features() {
    let p = plan("native", "  - {name: item_id, kind: sparse}\n");
    let err = fex::extract_batch(&p, &batch(3, vec![list("item_id", INDIVIDUAL, vec![fids(&[1])])])).unwrap_err();
    assert_eq!(err.to_string(), r#"named_feature_list[0] "item_id" has 1 features, batch_size is 3"#);
}

#[test]
fn batch_size_is_bounded() {
    let p = Plan::from_yaml("name: t\nlimits: {max_batch_size: 8}\nfeatures:\n  - {name: f, kind: sparse}\n").unwrap();
    let err = fex::extract_batch(&p, &batch(9, vec![])).unwrap_err();
    assert_eq!(err.to_string(), "batch_size is 9, allowed 0..=8");
    let err = fex::extract_batch(&p, &batch(-1, vec![])).unwrap_err();
    assert_eq!(err.to_string(), "batch_size is -1, allowed 0..=8");
}

#[test]
fn broadcast_output_is_bounded() {
    let p =
        Plan::from_yaml("name: t\nlimits: {max_output_bytes: 1000}\nfeatures:\n  - {name: f, kind: sparse}\n").unwrap();
    let many: Vec<u64> = (0..100).collect();
    let err = fex::extract_batch(&p, &batch(100, vec![list("f", SHARED, vec![fids(&many)])])).unwrap_err();
    assert!(matches!(err, ExtractError::TooLarge { limit: 1000, .. }), "{err}");
}

#[test]
fn malformed_bytes_say_where() {
    let p = plan("native", "  - {name: item_id, kind: sparse}\n");
    let good =
        batch(1, vec![list("skip_me", INDIVIDUAL, vec![fids(&[1])]), list("item_id", INDIVIDUAL, vec![fids(&[1, 2])])]);
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
    let p = plan("native", "  - {name: item_id, kind: sparse}\n");
    let mut bytes = batch(1, vec![list("item_id", INDIVIDUAL, vec![fids(&[5])])]);
    // named_feature_list { name: "junk"; feature: <garbage> }
    let junk = [0x0a, 4, b'j', b'u', b'n', b'k', 0x12, 3, 0xff, 0xff, 0xff];
    bytes.extend([0x0a, junk.len() as u8]);
    bytes.extend(junk);
    assert_eq!(tensor(&run(&p, &bytes), "item_id").u64s(), [5]);
}

#[test]
fn reused_buffers_give_the_same_result() {
    let p = Plan::default_model();
    let first = batch(2, vec![list("item_id", INDIVIDUAL, vec![fids(&[1, 2]), fids(&[3])])]);
    let second = batch(1, vec![list("item_id", INDIVIDUAL, vec![fids(&[9])])]);
    let mut ex = fex::Extractor::new();
    let mut out = Extracted::default();
    ex.extract_batch(&p, &first, &mut out).unwrap();
    ex.extract_batch(&p, &second, &mut out).unwrap();
    assert_eq!(out, fex::extract_batch(&p, &second).unwrap());
}

#[test]
fn selected_outputs_only_and_list_counts() {
    let p = Plan::default_model();
    let bytes =
        batch(1, vec![list("item_id", INDIVIDUAL, vec![fids(&[4])]), list("noise", INDIVIDUAL, vec![fids(&[1])])]);
    let picked = p.select(&["item_ctr_7d", "item_id"]).unwrap();
    let mut out = Extracted::default();
    fex::Extractor::new().extract_batch_selected(&p, &bytes, Some(&picked), &mut out).unwrap();
    let names: Vec<&str> = out.columns.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["item_ctr_7d", "item_id"]);
    assert_eq!((out.stats.lists_seen, out.stats.lists_decoded), (2, 1));
    assert_eq!(p.select(&["item_id", "item_id"]).unwrap_err().to_string(), r#"output "item_id" is asked for twice"#);
    let err = p.select(&["nope"]).unwrap_err().to_string();
    assert!(err.starts_with(r#"model "default" has no output "nope"; it has user_id, "#), "{err}");
}

#[test]
fn wide_fixed_outputs_fail_before_allocating() {
    let p = Plan::from_yaml(
        "name: t\nlimits: {max_output_bytes: 4096}\nfeatures:\n  - {name: l, kind: label, shape: [1024]}\n",
    )
    .unwrap();
    let err = fex::extract_batch(&p, &batch(2, vec![])).unwrap_err();
    assert_eq!(err.to_string(), "output would take 8192 bytes, the limit is 4096");
    // Exactly at the limit is fine, and counted once.
    let p = Plan::from_yaml(
        "name: t\nlimits: {max_output_bytes: 8192}\nfeatures:\n  - {name: l, kind: label, shape: [1024]}\n",
    )
    .unwrap();
    assert_eq!(tensor(&fex::extract_batch(&p, &batch(2, vec![])).unwrap(), "l").f32s().len(), 2048);
}

#[test]
fn a_repeated_list_is_judged_by_its_last_copy() {
    let p = plan("native", "  - {name: item_id, kind: sparse}\n");
    let bytes = batch(
        2,
        vec![
            list("item_id", INDIVIDUAL, vec![fids(&[1]), fids(&[2]), fids(&[3])]),
            list("item_id", INDIVIDUAL, vec![fids(&[7]), fids(&[8])]),
        ],
    );
    assert_eq!(tensor(&run(&p, &bytes), "item_id").ragged_u64(), [vec![7], vec![8]]);
}
