//! Worked examples for every operator (input, parameters and expected output
//! written by hand), their edge cases, and the seed 004 KeyedJaggedTensor and
//! multi-hot example checked field by field.

use fex::proto::matrix::LineId;
use fex::proto::monolith_pb::{self as pb, feature::Type};
use fex::{Extracted, Plan, Tensor};
use prost::Message;

fn feature(t: Type) -> pb::Feature {
    pb::Feature { r#type: Some(t) }
}
fn fids(v: &[u64]) -> pb::Feature {
    feature(Type::FidV2List(pb::FidList { value: v.to_vec() }))
}
fn floats(v: &[f32]) -> pb::Feature {
    feature(Type::FloatList(pb::FloatList { value: v.to_vec() }))
}
fn strings(v: &str) -> pb::Feature {
    feature(Type::BytesList(pb::BytesList { value: vec![v.as_bytes().to_vec()] }))
}
fn list(name: &str, features: Vec<pb::Feature>) -> pb::NamedFeatureList {
    pb::NamedFeatureList { name: name.into(), feature: features, r#type: 0, id: 0 }
}
fn shared(name: &str, f: pb::Feature) -> pb::NamedFeatureList {
    pb::NamedFeatureList { name: name.into(), feature: vec![f], r#type: 1, id: 0 }
}
fn batch(rows: i32, lists: Vec<pb::NamedFeatureList>) -> Vec<u8> {
    pb::ExampleBatch { named_feature_list: lists, batch_size: rows, ..Default::default() }.encode_to_vec()
}
fn plan(features: &str) -> Plan {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vocab");
    Plan::from_yaml_in(&format!("name: t\nfeatures:\n{features}"), std::path::Path::new(dir))
        .unwrap_or_else(|e| panic!("{e}"))
}
fn run(p: &Plan, bytes: &[u8]) -> Extracted {
    fex::extract_batch(p, bytes).unwrap_or_else(|e| panic!("{e}"))
}
fn get(out: &Extracted, name: &str) -> Tensor {
    out.tensor(name).unwrap_or_else(|| {
        panic!("no output {name}; have {:?}", out.tensors().iter().map(|t| &t.name).collect::<Vec<_>>())
    })
}
fn errors(features: &str) -> String {
    Plan::from_yaml(&format!("name: t\nfeatures:\n{features}")).unwrap_err().to_string()
}

const ITEMS: &str = "  - {name: ids, kind: sparse, source: item, output: false}\n";

fn items(rows: &[&[u64]]) -> Vec<u8> {
    batch(rows.len() as i32, vec![list("item", rows.iter().map(|r| fids(r)).collect())])
}

#[test]
fn internal_features_are_not_returned() {
    let p = plan(&format!("{ITEMS}  - {{name: h, op: hash, input: ids, buckets: 10}}\n"));
    let out = run(&p, &items(&[&[1]]));
    assert_eq!(out.columns.len(), 1);
    assert!(out.get("ids").is_none());
    assert_eq!(p.signature().len(), 1);
}

#[test]
fn v1_to_v2_slot_and_reslot() {
    let v1 = (5u64 << 54) | 0x1234;
    let p = plan(&format!(
        "{ITEMS}  - {{name: v2, op: v1_to_v2, input: ids}}\n  - {{name: s1, op: slot, input: ids, method: v1}}\n  - {{name: s2, op: slot, input: v2}}\n  - {{name: moved, op: reslot, input: v2, slot: 9}}\n"
    ));
    let out = run(&p, &items(&[&[v1], &[]]));
    assert_eq!(get(&out, "v2").ragged_u64(), [vec![(5u64 << 48) | 0x1234], vec![]]);
    assert_eq!(get(&out, "s1").u64s(), [5]);
    assert_eq!(get(&out, "s2").u64s(), [5]);
    assert_eq!(get(&out, "moved").u64s(), [(9u64 << 48) | 0x1234]);
}

#[test]
fn hash_into_buckets_is_xxh64_mod_n() {
    let p = plan(&format!(
        "{ITEMS}  - {{name: h, op: hash, input: ids, buckets: 1000}}\n  - {{name: t, kind: string, source: title, output: false}}\n  - {{name: th, op: hash, input: t, buckets: 1000}}\n"
    ));
    let bytes =
        batch(2, vec![list("item", vec![fids(&[42, 7]), fids(&[])]), list("title", vec![strings("abc"), strings("")])]);
    let out = run(&p, &bytes);
    assert_eq!(
        get(&out, "h").ragged_u64(),
        [vec![fex::ops::hash_u64(42) % 1000, fex::ops::hash_u64(7) % 1000], vec![]]
    );
    // XXH64("abc") = 0x44bc2cf5ad770999; an empty string is a missing value.
    assert_eq!(get(&out, "th").ragged_u64(), [vec![0x44bc_2cf5_ad77_0999 % 1000], vec![]]);
}

#[test]
fn filter_slots_keeps_listed_slots() {
    let p = plan(&format!("{ITEMS}  - {{name: f, op: filter_slots, input: ids, slots: [3, 1]}}\n"));
    let out = run(&p, &items(&[&[1 << 48 | 5, 2 << 48 | 6, 3 << 48 | 7]]));
    assert_eq!(get(&out, "f").u64s(), [1 << 48 | 5, 3 << 48 | 7]);
}

#[test]
fn cross_hashes_every_combination() {
    let p = plan(
        "  - {name: a, kind: sparse, output: false}\n  - {name: b, kind: sparse, output: false}\n  - {name: ab, op: cross, inputs: [a, b], slot: 3}\n  - {name: ab_small, op: cross, inputs: [a, b], max_per_row: 2}\n",
    );
    let bytes = batch(2, vec![list("a", vec![fids(&[1, 2]), fids(&[5])]), list("b", vec![fids(&[10]), fids(&[])])]);
    let tuple = |x: u64, y: u64| {
        let mut bytes = x.to_le_bytes().to_vec();
        bytes.extend(y.to_le_bytes());
        fex::ops::hash_bytes(&bytes)
    };
    let mut ex = fex::Extractor::new();
    let mut out = Extracted::default();
    let only = p.select(&["ab"]).unwrap();
    ex.extract_batch_selected(&p, &bytes, Some(&only), &mut out).unwrap();
    let reslot = |h: u64| (3u64 << 48) | (h & ((1 << 48) - 1));
    // Row 1 has no b: no combinations.
    assert_eq!(out.tensors()[0].ragged_u64(), [vec![reslot(tuple(1, 10)), reslot(tuple(2, 10))], vec![]]);
    let three = batch(1, vec![list("a", vec![fids(&[1, 2, 3])]), list("b", vec![fids(&[1])])]);
    let err = fex::extract_batch(&p, &three).unwrap_err().to_string();
    assert_eq!(err, "ab_small: row 0 has 3 combinations of a x b, the limit is 2");
}

#[test]
fn cross_of_shared_ids_a_string_and_ids() {
    let p = plan(
        "  - {name: u, kind: sparse, output: false}\n  - {name: s, kind: string, output: false}\n  - {name: b, kind: sparse, output: false}\n  - {name: usb, op: cross, inputs: [u, s, b]}\n",
    );
    let bytes = batch(
        2,
        vec![
            shared("u", fids(&[7, 8])),
            list("s", vec![strings("x"), strings("")]),
            list("b", vec![fids(&[10, 11]), fids(&[12])]),
        ],
    );
    // A string takes part as its hash; the last input varies fastest.
    let tuple = |ids: [u64; 3]| fex::ops::hash_bytes(&ids.iter().flat_map(|i| i.to_le_bytes()).collect::<Vec<u8>>());
    let x = fex::ops::hash_bytes(b"x");
    let out = run(&p, &bytes);
    // The shared ids are crossed with every row; row 1's empty string gives none.
    let row0 = vec![tuple([7, x, 10]), tuple([7, x, 11]), tuple([8, x, 10]), tuple([8, x, 11])];
    assert_eq!(get(&out, "usb").ragged_u64(), [row0, vec![]]);
}

#[test]
fn vocab_maps_to_contiguous_ids() {
    let p = plan(&format!(
        "{ITEMS}  - {{name: v, op: vocab, input: ids, file: item_ids.txt}}\n  - {{name: c, kind: string, source: category, output: false}}\n  - {{name: cv, op: vocab, input: c, file: categories.txt}}\n"
    ));
    let bytes = batch(
        3,
        vec![
            list("item", vec![fids(&[1002, 9999]), fids(&[]), fids(&[1001])]),
            list("category", vec![strings("news"), strings(""), strings("jazz")]),
        ],
    );
    let out = run(&p, &bytes);
    // 2.. = position in the file, 1 = out of vocabulary, 0 = missing.
    assert_eq!(get(&out, "v").ragged_u64(), [vec![3, 1], vec![0], vec![2]]);
    assert_eq!(get(&out, "cv").ragged_u64(), [vec![4], vec![0], vec![1]]);
    assert_eq!(p.files.len(), 2);
}

#[test]
fn vocab_file_errors_are_config_errors() {
    let e = errors(&format!("{ITEMS}  - {{name: v, op: vocab, input: ids, file: no/such.txt}}\n"));
    assert!(e.contains("features.v.file: cannot read ./no/such.txt"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dup.txt"), "a\nb\na\n").unwrap();
    let err = Plan::from_yaml_in(
        &format!("name: t\nfeatures:\n{ITEMS}  - {{name: v, op: vocab, input: ids, file: dup.txt}}\n"),
        dir.path(),
    )
    .unwrap_err();
    assert!(err.to_string().contains(r#"dup.txt:3: "a" repeats the entry of id 2"#), "{err}");
}

const DENSE: &str = "  - {name: x, kind: dense, shape: [4], output: false}\n";

fn dense_batch(values: &[f32]) -> Vec<u8> {
    batch(1, vec![list("x", vec![floats(values)])])
}

#[test]
fn ln_defines_non_positive_and_nan() {
    // Seed 004: empty values are 0, then ln(x + 3); x + 3 <= 0 gives `floor`.
    let p = plan(&format!("{DENSE}  - {{name: y, op: ln, input: x, c: 3, floor: -1}}\n"));
    let out = run(&p, &dense_batch(&[0.0, 1.0, -5.0, f32::NAN]));
    let y = get(&out, "y").f32s();
    assert_eq!(y[0], 3f64.ln() as f32);
    assert_eq!(y[1], 4f64.ln() as f32);
    assert_eq!(&y[2..], [-1.0, -1.0]);
}

#[test]
fn clip_normalize_scale_pow() {
    let p = plan(&format!(
        "{DENSE}  - {{name: c, op: clip, input: x, min: 0, max: 2}}\n  - {{name: z, op: normalize, input: x, method: zscore, mean: 1, std: 2}}\n  - {{name: m, op: normalize, input: x, method: minmax, min: -1, max: 3}}\n  - {{name: s, op: scale, input: x, factor: 10}}\n  - {{name: p, op: pow, input: x, exponent: 2}}\n"
    ));
    let out = run(&p, &dense_batch(&[-1.0, 1.0, 3.0, f32::INFINITY]));
    assert_eq!(get(&out, "c").f32s(), [0.0, 1.0, 2.0, 2.0]);
    assert_eq!(get(&out, "z").f32s(), [-1.0, 0.0, 1.0, f32::INFINITY]);
    assert_eq!(get(&out, "m").f32s(), [0.0, 0.5, 1.0, f32::INFINITY]);
    assert_eq!(get(&out, "s").f32s(), [-10.0, 10.0, 30.0, f32::INFINITY]);
    assert_eq!(get(&out, "p").f32s(), [1.0, 1.0, 9.0, f32::INFINITY]);
    assert_eq!(get(&out, "c").shape, [1, 4]);
}

#[test]
fn bucketize_counts_boundaries_at_or_below() {
    let p = plan(&format!("{DENSE}  - {{name: b, op: bucketize, input: x, boundaries: [0, 10]}}\n"));
    let out = run(&p, &dense_batch(&[-1.0, 0.0, 10.0, f32::NAN]));
    let b = get(&out, "b");
    assert_eq!(b.dtype, fex::DataType::I64 as i32);
    // A value equal to a boundary goes above it; NaN goes to bucket 0.
    assert_eq!(b.i64s(), [0, 1, 2, 0]);
}

#[test]
fn cast_between_dtypes() {
    let p = plan(&format!(
        "{DENSE}  - {{name: i, op: cast, input: x, dtype: i64}}\n  - {{name: d, op: cast, input: x, dtype: f64}}\n"
    ));
    let out = run(&p, &dense_batch(&[1.9, -1.9, f32::NAN, 1e30]));
    assert_eq!(get(&out, "i").i64s(), [1, -1, 0, i64::MAX]);
    let d = get(&out, "d").f64s();
    assert_eq!((d[0], d[1], d[3]), (1.9f32 as f64, -1.9f32 as f64, 1e30f32 as f64));
    assert!(d[2].is_nan(), "NaN stays NaN between float types");
}

#[test]
fn operators_compose() {
    // ln, then bucketize the result; hash then vocab-free reslot.
    let p = plan(&format!(
        "{DENSE}  - {{name: l, op: ln, input: x, c: 1, output: false}}\n  - {{name: lb, op: bucketize, input: l, boundaries: [0.5, 1.5]}}\n"
    ));
    let out = run(&p, &dense_batch(&[0.0, 1.0, 4.0, 20.0]));
    // ln(1)=0, ln(2)=0.69, ln(5)=1.61, ln(21)=3.04
    assert_eq!(get(&out, "lb").i64s(), [0, 1, 2, 2]);
}

#[test]
fn group_concatenates_rows() {
    let p = plan(
        "  - {name: a, kind: sparse}\n  - {name: b, kind: sparse}\n  - {name: g, op: group, inputs: [a, b], splits: i32}\n",
    );
    let bytes = batch(2, vec![list("a", vec![fids(&[1]), fids(&[2, 3])]), list("b", vec![fids(&[4, 5]), fids(&[])])]);
    let g = run(&p, &bytes);
    let g = get(&g, "g");
    assert_eq!(g.ragged_u64(), [vec![1, 4, 5], vec![2, 3]]);
    assert_eq!(g.row_splits.len(), 12, "i32 splits");
}

#[test]
fn concat_dense() {
    let p = plan(
        "  - {name: a, kind: dense, shape: [2]}\n  - {name: b, kind: dense, dtype: i64}\n  - {name: ab, op: concat, inputs: [a, b]}\n",
    );
    let bytes = batch(
        2,
        vec![
            list("a", vec![floats(&[1., 2.]), floats(&[3., 4.])]),
            list("b", vec![feature(Type::Int64List(pb::Int64List { value: vec![7] })), pb::Feature::default()]),
        ],
    );
    let out = run(&p, &bytes);
    assert_eq!(get(&out, "ab").shape, [2, 3]);
    assert_eq!(get(&out, "ab").f32s(), [1., 2., 7., 3., 4., 0.]);
}

#[test]
fn shared_inputs_broadcast_inside_operators() {
    let p = plan(
        "  - {name: u, kind: sparse, shared: once}\n  - {name: i, kind: sparse}\n  - {name: ui, op: group, inputs: [u, i]}\n  - {name: uh, op: hash, input: u, buckets: 100}\n",
    );
    let bytes = batch(2, vec![shared("u", fids(&[9])), list("i", vec![fids(&[1]), fids(&[2])])]);
    let out = run(&p, &bytes);
    assert_eq!(get(&out, "ui").ragged_u64(), [vec![9, 1], vec![9, 2]]);
    assert!(!get(&out, "ui").shared);
    // An operator over shared-once inputs only stays shared, with one row.
    assert_eq!((get(&out, "uh").shape[0], get(&out, "uh").shared), (1, true));
}

#[test]
fn sequence_per_position_tensors() {
    let p = plan("  - {name: clicks, kind: sequence, dtype: i64, max_len: 3, width: 1, per_position: true}\n");
    let lists = |v: &[u64]| {
        feature(Type::FidV2Lists(pb::FidLists { list: v.iter().map(|&x| pb::FidList { value: vec![x] }).collect() }))
    };
    let out = run(&p, &batch(2, vec![list("clicks", vec![lists(&[7, 8, 9, 10]), lists(&[5])])]));
    let names: Vec<_> = out.columns.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["clicks_0", "clicks_1", "clicks_2"]);
    assert_eq!(get(&out, "clicks_0").i64s(), [7, 5]);
    assert_eq!(get(&out, "clicks_1").i64s(), [8, 0]);
    assert_eq!(get(&out, "clicks_2").i64s(), [9, 0]);
    assert_eq!(get(&out, "clicks_2").shape, [2, 1]);
}

/// Seed 004: B = 2, cat_0..cat_3, values key-major, lengths all 1.
#[test]
fn keyed_jagged_matches_seed_004() {
    let cats = "  - {name: cat_0, kind: sparse}\n  - {name: cat_1, kind: sparse}\n  - {name: cat_2, kind: sparse}\n  - {name: cat_3, kind: sparse}\n";
    let p = plan(&format!("{cats}  - {{name: kjt, op: kjt, inputs: [cat_0, cat_1, cat_2, cat_3]}}\n"));
    // I[a][k] = 10 * a + k for row a, key k.
    let lists = (0..4).map(|k| list(&format!("cat_{k}"), vec![fids(&[k]), fids(&[10 + k])])).collect();
    let out = run(&p, &batch(2, lists));
    let kjt = get(&out, "kjt");
    assert_eq!(kjt.layout, fex::Layout::KeyedJagged as i32);
    assert_eq!(kjt.keys, ["cat_0", "cat_1", "cat_2", "cat_3"]);
    // values: [I00, I10, I01, I11, I02, I12, I03, I13]
    assert_eq!(kjt.u64s(), [0, 10, 1, 11, 2, 12, 3, 13]);
    // lengths: batch_size * 26 ones (here 2 * 4); offsets 0..=8.
    let lengths: Vec<i32> = kjt.lengths.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(lengths, [1; 8]);
    assert_eq!(kjt.splits(), (0..=8).collect::<Vec<i64>>());
    // length_per_key = [B; keys]; offset_per_key = [0, B, 2B, ...], derivable:
    let per_key: Vec<i32> = lengths.chunks(2).map(|c| c.iter().sum()).collect();
    assert_eq!(per_key, [2, 2, 2, 2]);
    let offset_per_key: Vec<i32> = std::iter::once(0)
        .chain(per_key.iter().scan(0, |acc, n| {
            *acc += n;
            Some(*acc)
        }))
        .collect();
    assert_eq!(offset_per_key, [0, 2, 4, 6, 8]);
    assert_eq!(kjt.shape, [4, 2], "[keys, rows]");
}

/// Seed 004's worked example: num_embeddings [6, 7, 5, 9], min size 8,
/// multi_hot_size 3: only cat_3 expands; offsets [0, 1, 2, 3, 4, 5, 6, 9, 12].
#[test]
fn multi_hot_matches_seed_004() {
    let cats = "  - {name: cat_0, kind: sparse}\n  - {name: cat_1, kind: sparse}\n  - {name: cat_2, kind: sparse}\n  - {name: cat_3, kind: sparse}\n";
    let p = plan(&format!(
        "{cats}  - {{name: mh, op: multi_hot, inputs: [cat_0, cat_1, cat_2, cat_3], num_embeddings: [6, 7, 5, 9], min_table_size: 8, multi_hot_size: 3}}\n"
    ));
    let rows = [[1u64, 2, 3, 4], [5, 6, 0, 8]];
    let lists = (0..4).map(|k| list(&format!("cat_{k}"), vec![fids(&[rows[0][k]]), fids(&[rows[1][k]])])).collect();
    let out = run(&p, &batch(2, lists));
    let mh = get(&out, "mh");
    assert_eq!(mh.splits(), [0, 1, 2, 3, 4, 5, 6, 9, 12]);
    let v = mh.u64s();
    assert_eq!(&v[..6], [1, 5, 2, 6, 3, 0], "tables below the minimum pass through, key-major");
    // cat_3: [I03, w[I03][1], w[I03][2], I13, w[I13][1], w[I13][2]], column 0 = the id.
    assert_eq!((v[6], v[9]), (4, 8));
    for (j, x) in [(7, 4u64), (8, 4), (10, 8), (11, 8)] {
        let col = if j < 9 { j - 6 } else { j - 9 } as u64;
        assert_eq!(v[j], fex::ops::multihot_weight(3, x, col, 9), "seeded by the table index 3");
        assert!(v[j] < 9, "weights lie in [0, num_embeddings)");
    }
    let lengths: Vec<i32> = mh.lengths.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(lengths, [1, 1, 1, 1, 1, 1, 3, 3]);
    // An id outside its table is an error, not a wrong lookup.
    let bad = (0..4).map(|k| list(&format!("cat_{k}"), vec![fids(&[9]), fids(&[0])])).collect();
    let err = fex::extract_batch(&p, &batch(2, bad)).unwrap_err().to_string();
    assert_eq!(err, "cat_0: id 9 of row 0 is outside table 0 (num_embeddings 6)");
}

fn line_id_list(actions: &[Vec<i32>]) -> pb::NamedFeatureList {
    let f = |a: &Vec<i32>| {
        feature(Type::BytesList(pb::BytesList {
            value: vec![LineId { actions: a.clone(), ..Default::default() }.encode_to_vec()],
        }))
    };
    list("__LINE_ID__", actions.iter().map(f).collect())
}

#[test]
fn action_labels_like_monolith_add_label() {
    // Task 0: click (1) positive, nothing listed negative: all others are 0.
    // Task 1: like (2) positive, skip (3) negative: others are INVALID.
    let p = plan("  - {name: y, kind: action_label, tasks: [{pos: [1]}, {pos: [2], neg: [3]}]}\n");
    let out = run(&p, &batch(3, vec![line_id_list(&[vec![1, 2], vec![3], vec![5]])]));
    let y = get(&out, "y");
    assert_eq!(y.shape, [3, 2]);
    assert_eq!(y.f32s(), [1.0, 1.0, 0.0, 0.0, 0.0, f32::MIN]);
}

#[test]
fn action_label_negative_sampling_is_deterministic() {
    let p = plan("  - {name: y, kind: action_label, tasks: [{pos: [1], sample_rate: 0.5}]}\n");
    let rows: Vec<Vec<i32>> = (0..200).map(|i| vec![100 + i]).collect();
    let bytes = batch(200, vec![line_id_list(&rows)]);
    let a = run(&p, &bytes);
    let kept = a.tensors()[0].f32s().iter().filter(|&&v| v == 0.0).count();
    assert!((60..140).contains(&kept), "about half the negatives are kept: {kept}");
    assert_eq!(a, run(&p, &bytes), "the same samples keep the same labels");
}

#[test]
fn label_normalisation() {
    let p = plan(
        "  - {name: watch, kind: label, output: false}\n  - {name: log_watch, op: ln, input: watch, c: 1}\n  - {name: scaled, op: scale, input: watch, factor: 0.5}\n  - {name: sq, op: pow, input: watch, exponent: 0.5}\n",
    );
    let out = run(&p, &batch(1, vec![list("__LABEL__", vec![floats(&[4.0])])]));
    assert_eq!(get(&out, "log_watch").f32s(), [5f64.ln() as f32]);
    assert_eq!(get(&out, "scaled").f32s(), [2.0]);
    assert_eq!(get(&out, "sq").f32s(), [2.0]);
}

#[test]
fn operator_config_errors_are_precise() {
    let check = |features: &str, want: &str| {
        let e = errors(features);
        assert!(e.contains(want), "want {want:?} in\n{e}");
    };
    check(
        &format!("{ITEMS}  - {{name: item_tags, op: hsh_bucket, input: ids}}\n"),
        r#"features.item_tags.op: unknown operator "hsh_bucket", expected one of v1_to_v2"#,
    );
    check(
        &format!("{ITEMS}  - {{name: h, op: hash, input: ids}}\n"),
        "features.h.buckets: missing; required for this op",
    );
    check(
        &format!("{ITEMS}  - {{name: h, op: hash, input: nope, buckets: 3}}\n"),
        r#"features.h.input: unknown feature "nope""#,
    );
    check(
        &format!("{ITEMS}  - {{name: l, op: ln, input: ids}}\n"),
        r#"features.l.input: op ln takes a dense tensor; "ids" is LAYOUT_RAGGED DATA_TYPE_I64"#,
    );
    check(
        &format!("{DENSE}  - {{name: b, op: bucketize, input: x, boundaries: [2, 1]}}\n"),
        "features.b.boundaries: found [2.0, 1.0], expected finite numbers in strictly increasing order",
    );
    check(
        &format!("{DENSE}  - {{name: n, op: normalize, input: x, method: zscore, mean: 0, std: 0}}\n"),
        "features.n.std: found 0, expected a positive number",
    );
    check(
        &format!("{ITEMS}  - {{name: c, op: cross, inputs: [ids]}}\n"),
        "features.c.inputs: op cross takes 2..=64 inputs, found 1",
    );
    check(
        &format!("{ITEMS}  - {{name: r, op: reslot, input: ids, slot: 40000}}\n"),
        "features.r.slot: found 40000, allowed 0..=32767",
    );
    check(
        "  - {name: a, op: hash, input: b, buckets: 2}\n  - {name: b, op: hash, input: a, buckets: 2}\n",
        r#"features.a.input: "b" depends on "a" in a cycle"#,
    );
    check(
        &format!("{ITEMS}  - {{name: h, op: hash, input: ids, buckets: 3, factor: 2}}\n"),
        r#"features.h: unknown key "factor" for op hash; allowed: name, op, input, buckets, splits, output"#,
    );
    check(
        "  - {name: m, op: multi_hot, inputs: [], num_embeddings: [3]}\n",
        "features.m.num_embeddings: found [3], expected one positive table size per input (0 inputs)",
    );
}
