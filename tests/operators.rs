//! What the golden corpus (tests/corpus/op_*.yaml, run by tests/corpus.rs)
//! cannot state as a sample and expected text: the formulas behind the hash,
//! cross and multi-hot values the cases pin, the plan's signature and file
//! list, a statistical property of negative sampling, and config errors.
//! Every operator's worked example is a case file there.

mod common;

use common::batch;
use fex::{Extracted, Plan, Tensor};

/// An f64 as YAML writes it (`.nan`, `.inf`, `-.inf`, or Rust's shortest
/// round-tripping form), for samples written as text.
fn yaml(x: f64) -> String {
    if x.is_nan() {
        ".nan".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { ".inf".into() } else { "-.inf".into() }
    } else {
        format!("{x:?}")
    }
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
const DENSE: &str = "  - {name: x, kind: dense, shape: [4], output: false}\n";

/// XXH64 of the little-endian bytes of each id of a tuple, in input order.
/// A batch of a SHARED query `q` and one title `t` per row, each a string
/// of its words between 0x1D.
fn query_and_titles(query: &[&str], titles: &[Vec<&str>]) -> String {
    let join = |w: &[&str]| w.join("\\x1d");
    let mut sample = format!(
        "batch_size: {}\nlists:\n  - {{name: q, type: SHARED, features: [{{bytes_list: [\"{}\"]}}]}}\n  - name: t\n    features:\n",
        titles.len(),
        join(query)
    );
    for t in titles {
        sample.push_str(&format!("      - {{bytes_list: [\"{}\"]}}\n", join(t)));
    }
    sample
}

fn tuple_hash(ids: &[u64]) -> u64 {
    fex::ops::hash_bytes(&ids.iter().flat_map(|i| i.to_le_bytes()).collect::<Vec<u8>>())
}

#[test]
fn internal_features_are_not_in_the_signature() {
    let p = plan(&format!("{ITEMS}  - {{name: h, op: hash, input: ids, buckets: 10}}\n"));
    let names: Vec<String> = p.signature().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["h"]);
}

/// The formulas behind the numbers tests/corpus/op_hash_*.yaml and
/// op_cross_*.yaml pin: hash = XXH64(id as 8 LE bytes) mod buckets; a cross
/// hashes the tuple's LE bytes, a string taking part as its own hash, then
/// re-slots when asked.
#[test]
fn hash_and_cross_formulas() {
    let p = plan(&format!(
        "{ITEMS}  - {{name: h, op: hash, input: ids, buckets: 1000}}\n  - {{name: t, kind: string, source: title, output: false}}\n  - {{name: th, op: hash, input: t, buckets: 1000}}\n  - {{name: b, kind: sparse, output: false}}\n  - {{name: ib, op: cross, inputs: [ids, b], slot: 3}}\n  - {{name: itb, op: cross, inputs: [ids, t, b]}}\n"
    ));
    let out = run(
        &p,
        &batch(
            "batch_size: 1\nlists:\n  - {name: item, features: [{fid_v2_list: [42, 7]}]}\n  - {name: title, features: [{bytes_list: [abc]}]}\n  - {name: b, features: [{fid_v2_list: [10]}]}\n",
        ),
    );
    assert_eq!(get(&out, "h").u64s(), [fex::ops::hash_u64(42) % 1000, fex::ops::hash_u64(7) % 1000]);
    // XXH64("abc") = 0x44bc2cf5ad770999.
    assert_eq!(get(&out, "th").u64s(), [0x44bc_2cf5_ad77_0999 % 1000]);
    let reslot = |h: u64| (3u64 << 48) | (h & ((1 << 48) - 1));
    assert_eq!(get(&out, "ib").u64s(), [reslot(tuple_hash(&[42, 10])), reslot(tuple_hash(&[7, 10]))]);
    let abc = fex::ops::hash_bytes(b"abc");
    assert_eq!(get(&out, "itb").u64s(), [tuple_hash(&[42, abc, 10]), tuple_hash(&[7, abc, 10])]);
}

/// tests/corpus/op_multi_hot_matches_seed_004.yaml pins cat_3's expansion;
/// here it is derived: column 0 is the id, columns 1.. are
/// `multihot_weight(3, id, column, 9)`, seeded by the table index 3, each in
/// [0, num_embeddings).
#[test]
fn multi_hot_weights_are_seeded_by_table() {
    let cats: String = (0..4).map(|k| format!("  - {{name: cat_{k}, kind: sparse}}\n")).collect();
    let p = plan(&format!(
        "{cats}  - {{name: mh, op: multi_hot, inputs: [cat_0, cat_1, cat_2, cat_3], num_embeddings: [6, 7, 5, 9], min_table_size: 8, multi_hot_size: 3}}\n"
    ));
    let lists: String = [[1, 5], [2, 6], [3, 0], [4, 8]]
        .iter()
        .enumerate()
        .map(|(k, [a, b])| {
            format!("  - {{name: cat_{k}, features: [{{fid_v2_list: [{a}]}}, {{fid_v2_list: [{b}]}}]}}\n")
        })
        .collect();
    let v = get(&run(&p, &batch(&format!("batch_size: 2\nlists:\n{lists}"))), "mh").u64s();
    let w = |x, col| fex::ops::multihot_weight(3, x, col, 9);
    assert_eq!(v[6..], [4, w(4, 1), w(4, 2), 8, w(8, 1), w(8, 2)]);
    assert!(v[6..].iter().all(|&x| x < 9), "weights lie in [0, num_embeddings): {v:?}");
}

#[test]
fn vocab_files_are_recorded_in_the_plan() {
    let p = plan(&format!(
        "{ITEMS}  - {{name: v, op: vocab, input: ids, file: item_ids.txt}}\n  - {{name: c, kind: string, source: category, output: false}}\n  - {{name: cv, op: vocab, input: c, file: categories.txt}}\n"
    ));
    assert_eq!(p.files.len(), 2);
}

/// `bm25`'s file of document counts is read once when the config loads and
/// is part of the model's version: another count is another model.
#[test]
fn bm25_files_are_part_of_the_model_version() {
    let dir = tempfile::tempdir().unwrap();
    let model = "name: t\nfeatures:\n  - {name: q, kind: string, output: false}\n  - {name: s, op: bm25, inputs: [q, q], file: df.tsv, documents: 10, avg_len: 3}\n";
    let version = |counts: &str| {
        std::fs::write(dir.path().join("df.tsv"), counts).unwrap();
        let p = Plan::from_yaml_in(model, dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.files, [dir.path().join("df.tsv")]);
        p.identity().digest
    };
    assert_ne!(version("red\t2\n"), version("red\t3\n"));
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

#[test]
fn action_label_negative_sampling_is_deterministic() {
    let p = plan("  - {name: y, kind: action_label, tasks: [{pos: [1], sample_rate: 0.5}]}\n");
    let rows: String = (0..200).map(|i| format!("{{line_id: {{actions: [{}]}}}}, ", 100 + i)).collect();
    let bytes = batch(&format!("batch_size: 200\nlists: [{{name: __LINE_ID__, features: [{rows}]}}]"));
    let a = run(&p, &bytes);
    let kept = a.tensors()[0].f32s().iter().filter(|&&v| v == 0.0).count();
    assert!((60..140).contains(&kept), "about half the negatives are kept: {kept}");
    assert_eq!(a, run(&p, &bytes), "the same samples keep the same labels");
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
        "features.h.buckets: missing; give buckets (hashed) or num_buckets (the values are the ids)",
    );
    check(
        &format!("{ITEMS}  - {{name: h, op: hash, input: nope, buckets: 3}}\n"),
        r#"features.h.input: unknown feature "nope""#,
    );
    check(
        &format!("{ITEMS}  - {{name: l, op: ln, input: ids}}\n"),
        r#"features.l.input: op ln takes a dense tensor or a sequence; "ids" is LAYOUT_RAGGED DATA_TYPE_I64"#,
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
        r#"features.h: unknown key "factor" for op hash; allowed: name, op, input, buckets, num_buckets, need_prefix, value_dim, splits, separator, weighted, output"#,
    );
    check(
        "  - {name: m, op: multi_hot, inputs: [], num_embeddings: [3]}\n",
        "features.m.num_embeddings: found [3], expected one positive table size per input (0 inputs)",
    );
}

/// `expr` runs each step over the whole batch (a SHARED input standing for
/// every row, vectors beside scalars); run row by row, on one row's values
/// at a time, the same program must give the same bits. The expressions
/// cover each kind of step: inputs, numbers, muParser's folded linear and
/// power steps, functions, comparisons, the ternary, variadic functions and
/// reductions.
#[test]
fn expr_over_a_batch_equals_expr_row_by_row() {
    use proptest::prelude::*;
    const TEXTS: [&str; 6] = [
        "s * x + v",
        "x^3 - 2*x + s/x",
        "x > s ? sin(v) : -v^2",
        "min(x, s, 1) + max(v, x) + avg(s, x)",
        "dot(v, v) * x + len(v) + reduce_min(v)",
        "(x && s) + (v || 0) + sign(x - s) + rint(v) + abs(x)",
    ];
    let special = [0.0, -0.0, 0.5, -2.5, 1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300];
    let value = prop_oneof![3 => -5.0f64..5.0, 1 => prop::sample::select(special.to_vec())];
    let rows = 1usize..6;
    let case = rows.prop_flat_map(move |n| {
        (value.clone(), prop::collection::vec(value.clone(), n), prop::collection::vec(value.clone(), 2 * n))
    });
    let mut features = String::from(
        "  - {name: s, kind: dense, dtype: f64, shared: once, output: false}\n  - {name: x, kind: dense, dtype: f64, output: false}\n  - {name: v, kind: dense, dtype: f64, shape: [2], output: false}\n",
    );
    // The inputs a text names, in the order s, x, v.
    let names = |text: &str| -> Vec<&'static str> {
        let words: Vec<&str> = text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').collect();
        ["s", "x", "v"].into_iter().filter(|n| words.contains(n)).collect()
    };
    for (i, text) in TEXTS.iter().enumerate() {
        let inputs = names(text);
        features.push_str(&format!(
            "  - {{name: e{i}, op: expr, inputs: [{}], expression: \"{text}\", dtype: f64}}\n",
            inputs.join(", ")
        ));
    }
    let p = plan(&features);
    proptest!(ProptestConfig::with_cases(300), |((s, x, v) in case)| {
        let n = x.len();
        let mut sample = format!("batch_size: {n}\nlists:\n  - {{name: s, type: SHARED, features: [{{double_list: [{}]}}]}}\n", yaml(s));
        sample.push_str("  - name: x\n    features:\n");
        for xi in &x {
            sample.push_str(&format!("      - {{double_list: [{}]}}\n", yaml(*xi)));
        }
        sample.push_str("  - name: v\n    features:\n");
        for r in 0..n {
            sample.push_str(&format!("      - {{double_list: [{}, {}]}}\n", yaml(v[2 * r]), yaml(v[2 * r + 1])));
        }
        let out = run(&p, &batch(&sample));
        for (i, text) in TEXTS.iter().enumerate() {
            let names = names(text);
            let widths: Vec<(&str, usize)> = names.iter().map(|nm| (*nm, if *nm == "v" { 2 } else { 1 })).collect();
            let e = fex::ops::Expr::parse(text, &widths).unwrap();
            let got = get(&out, &format!("e{i}")).f64s();
            for r in 0..n {
                let row: Vec<Vec<f64>> = names.iter().map(|nm| match *nm {
                    "s" => vec![s],
                    "x" => vec![x[r]],
                    _ => v[2 * r..2 * r + 2].to_vec(),
                }).collect();
                let row: Vec<&[f64]> = row.iter().map(Vec::as_slice).collect();
                let want = e.eval(&row, 1);
                let have = &got[r * e.width..(r + 1) * e.width];
                for (h, w) in have.iter().zip(&want) {
                    prop_assert!(h.to_bits() == w.to_bits() || (h.is_nan() && w.is_nan()),
                        "{text} row {r}: batch {have:?}, row by row {want:?}");
                }
            }
        }
    });
}

/// `expr` over float sequences (issue 36) gives, position by position,
/// what the same expression gives run on that position as a one-row dense
/// input: the position's values as the sequence reads them (the first
/// `width`, padded with 0), a dense input's row (or its SHARED row) at
/// every position, bit for bit. Two sequences of the same positions per
/// row, a SHARED sequence against rows of its own length, positions cut at
/// `max_len`, empty rows and special values; the expressions cover each
/// kind of step.
#[test]
fn expr_per_position_equals_expr_on_each_position() {
    use proptest::prelude::*;
    /// A row: its dense `x`, and each position's `p` value and `v` values.
    type Row = (f64, Vec<(f64, Vec<f64>)>);
    const TEXTS: [&str; 7] = [
        "p * x + s",
        "p^3 - 2*p + s/p",
        "p > x ? sin(v) : -v^2",
        "min(p, s, 1) + max(v, x) + avg(s, p)",
        "dot(v, v) * p + len(v) + reduce_min(v)",
        "(p && x) + (v || 0) + sign(p - s) + rint(v) + abs(x)",
        "g * x + s",
    ];
    const MAX_LEN: usize = 3;
    let special = [0.0, -0.0, 0.5, -2.5, 1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300];
    let value = prop_oneof![3 => -5.0f64..5.0, 1 => prop::sample::select(special.to_vec())];
    // A position: p's one value and v's values (0 to 3: read as 2).
    let position = (value.clone(), prop::collection::vec(value.clone(), 0..4));
    let row = (value.clone(), prop::collection::vec(position, 0..5));
    let shared = (value.clone(), prop::collection::vec(value.clone(), 0..5));
    let case = (shared, prop::collection::vec(row, 1..5));
    let mut features = format!(
        "  - {{name: s, kind: dense, dtype: f64, shared: once, output: false}}\n  - {{name: x, kind: dense, dtype: f64, output: false}}\n  - {{name: g, kind: sequence, dtype: f64, max_len: {MAX_LEN}, width: 1, shared: once, output: false}}\n  - {{name: p, kind: sequence, dtype: f64, max_len: {MAX_LEN}, width: 1, output: false}}\n  - {{name: v, kind: sequence, dtype: f64, max_len: {MAX_LEN}, width: 2, output: false}}\n"
    );
    // The inputs a text names, in the order s, x, g, p, v.
    let names = |text: &str| -> Vec<&'static str> {
        let words: Vec<&str> = text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').collect();
        ["s", "x", "g", "p", "v"].into_iter().filter(|n| words.contains(n)).collect()
    };
    for (i, text) in TEXTS.iter().enumerate() {
        features.push_str(&format!(
            "  - {{name: e{i}, op: expr, inputs: [{}], expression: \"{text}\", dtype: f64}}\n",
            names(text).join(", ")
        ));
    }
    let p = plan(&features);
    proptest!(ProptestConfig::with_cases(200), |(((s, g), rows) in case)| {
        let list = |xs: &[f64]| format!("[{}]", xs.iter().map(|x| yaml(*x)).collect::<Vec<_>>().join(", "));
        let lists = |inner: Vec<String>| format!("{{double_lists: [{}]}}", inner.join(", "));
        let mut sample = format!(
            "batch_size: {}\nlists:\n  - {{name: s, type: SHARED, features: [{{double_list: [{}]}}]}}\n  - {{name: g, type: SHARED, features: [{}]}}\n",
            rows.len(),
            yaml(s),
            lists(g.iter().map(|x| list(&[*x])).collect())
        );
        let column = |f: &dyn Fn(&Row) -> String| {
            rows.iter().map(f).collect::<Vec<_>>().join(", ")
        };
        sample.push_str(&format!("  - {{name: x, features: [{}]}}\n", column(&|(x, _)| format!("{{double_list: [{}]}}", yaml(*x)))));
        sample.push_str(&format!("  - {{name: p, features: [{}]}}\n", column(&|(_, ps)| lists(ps.iter().map(|q| list(&[q.0])).collect()))));
        sample.push_str(&format!("  - {{name: v, features: [{}]}}\n", column(&|(_, ps)| lists(ps.iter().map(|q| list(&q.1)).collect()))));
        let out = run(&p, &batch(&sample));
        let g = &g[..g.len().min(MAX_LEN)];
        for (i, text) in TEXTS.iter().enumerate() {
            let names = names(text);
            let widths: Vec<(&str, usize)> = names.iter().map(|nm| (*nm, if *nm == "v" { 2 } else { 1 })).collect();
            let e = fex::ops::Expr::parse(text, &widths).unwrap();
            let got = get(&out, &format!("e{i}"));
            let (mut want, mut splits) = (Vec::new(), vec![0i64]);
            for (x, ps) in &rows {
                let n = if names.contains(&"g") { g.len() } else { ps.len().min(MAX_LEN) };
                for k in 0..n {
                    let at: Vec<Vec<f64>> = names.iter().map(|nm| match *nm {
                        "s" => vec![s],
                        "x" => vec![*x],
                        "g" => vec![g[k]],
                        "p" => vec![ps[k].0],
                        _ => (0..2).map(|j| ps[k].1.get(j).copied().unwrap_or(0.0)).collect(),
                    }).collect();
                    let at: Vec<&[f64]> = at.iter().map(Vec::as_slice).collect();
                    want.extend(e.eval(&at, 1));
                }
                splits.push(splits.last().unwrap() + n as i64);
            }
            prop_assert_eq!(got.splits(), splits, "{} in {}", text, sample);
            let have = got.f64s();
            prop_assert_eq!(have.len(), want.len(), "{} in {}", text, sample);
            for (h, w) in have.iter().zip(&want) {
                prop_assert!(h.to_bits() == w.to_bits() || (h.is_nan() && w.is_nan()),
                    "{text}: per position {have:?}, position by position {want:?} in {sample}");
            }
        }
    });
}

/// The numbers tests/corpus/op_lookup_finds_keys_in_a_map.yaml and
/// op_match_finds_keys_in_a_two_level_map.yaml pin for `need_discrete`:
/// each value found, hashed as the `hash` op hashes a string (XXH64 of its
/// bytes) into `buckets`.
#[test]
fn discrete_lookup_hashes_the_value_bytes() {
    assert_eq!(fex::ops::hash_bytes(b"2") % 1000, 251);
    assert_eq!(fex::ops::hash_bytes(b"3.5") % 1000, 42);
    assert_eq!(fex::ops::hash_bytes(b"3") % 1000, 796);
    assert_eq!(fex::ops::hash_bytes(b"x") % 1000, 299);
}

/// The formula behind tests/corpus/op_hash_need_prefix_and_num_buckets.yaml,
/// op_lookup_need_key_and_value_dim.yaml and op_match_show_pkey_and_show_skey.yaml:
/// need_prefix, need_key and show_pkey / show_skey hash the parts joined by
/// `_` (FG's `item_is_main_100`, `item_match_item_k2_v2`), as `hash` hashes
/// that string; an id is its decimal text.
#[test]
fn prefixed_and_keyed_ids_hash_the_joined_string() {
    let h = |s: &[u8]| fex::ops::hash_bytes(s) % 1000;
    assert_eq!([h(b"p_a"), h(b"p_b"), h(b"p_ids_7"), h(b"p_seq_3")], [974, 177, 206, 311]);
    assert_eq!([h(b"c1_2"), h(b"c2_3.5"), h(b"7_4")], [964, 306, 195]);
    assert_eq!([h(b"c1_b1_2"), h(b"b1_2"), h(b"b2_3")], [302, 8, 298]);
    assert_eq!(fex::ops::hash_joined(&[b"c1", b"b1", b"2"]), fex::ops::hash_bytes(b"c1_b1_2"));
}

/// `hash` with `num_buckets` over a batch: each part that is a whole number
/// in 0..num_buckets is the id, in order; every other part is dropped.
#[test]
fn num_buckets_keeps_the_whole_numbers_below_it() {
    use proptest::prelude::*;
    let p = plan(
        "  - {name: t, kind: string, output: false}
  - {name: n, op: hash, input: t, num_buckets: 10, separator: \",\"}
",
    );
    let part =
        prop::sample::select(vec!["0", "9", "10", "-1", "3", "+4", "x", "2.0", "", " 5", "99999999999999999999"]);
    let case = prop::collection::vec(prop::collection::vec(part, 0..12), 1..4);
    proptest!(ProptestConfig::with_cases(200), |(rows in case)| {
        let mut sample = format!("batch_size: {}\nlists:\n  - name: t\n    features:\n", rows.len());
        for r in &rows {
            sample.push_str(&format!("      - {{bytes_list: [\"{}\"]}}\n", r.join(",")));
        }
        let out = run(&p, &batch(&sample));
        let t = get(&out, "n");
        let (splits, got) = (t.splits(), t.u64s());
        for (r, parts) in rows.iter().enumerate() {
            let want: Vec<u64> = parts.iter().filter_map(|x| x.parse::<i64>().ok()).filter(|x| (0..10).contains(x)).map(|x| x as u64).collect();
            let row = &got[splits[r] as usize..splits[r + 1] as usize];
            prop_assert_eq!(row, &want[..], "row {}: {:?}", r, parts);
        }
    });
}

/// `hash` with `value_dim` (FG's id_feature value_dimension) keeps each
/// row's first ids, and their weights, what hashing every part and cutting
/// the row gives; the rows after a cut one keep their own ids.
#[test]
fn hash_value_dim_keeps_each_rows_first_ids() {
    use proptest::prelude::*;
    let mut features = String::from("  - {name: t, kind: string, output: false}\n");
    for n in 1..=3 {
        features.push_str(&format!(
            "  - {{name: h{n}, op: hash, input: t, buckets: 97, separator: \",\", value_dim: {n}, splits: i32}}\n  - {{name: w{n}, op: hash, input: t, buckets: 97, separator: \",\", weighted: true, value_dim: {n}}}\n"
        ));
    }
    let p = plan(&features);
    let part = prop::sample::select(vec!["a", "b:1", "c:2.5", "d:x", ":3", "e"]);
    let case = prop::collection::vec(prop::collection::vec(part, 0..6), 1..5);
    proptest!(ProptestConfig::with_cases(200), |(rows in case)| {
        let mut sample = format!("batch_size: {}\nlists:\n  - name: t\n    features:\n", rows.len());
        for r in &rows {
            sample.push_str(&format!("      - {{bytes_list: [\"{}\"]}}\n", r.join(",")));
        }
        let out = run(&p, &batch(&sample));
        for n in 1..=3usize {
            let (h, w) = (get(&out, &format!("h{n}")), get(&out, &format!("w{n}")));
            let (mut want_h, mut want_w, mut want_weights) = (vec![0i64], vec![0i64], Vec::new());
            let mut ids: (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
            for parts in &rows {
                let hashed: Vec<u64> = parts.iter().map(|x| fex::ops::hash_bytes(x.as_bytes()) % 97).take(n).collect();
                ids.0.extend(&hashed);
                want_h.push(ids.0.len() as i64);
                let weighted: Vec<(u64, f32)> = parts
                    .iter()
                    .filter_map(|x| {
                        let (k, v) = x.rsplit_once(':')?;
                        Some((fex::ops::hash_bytes(k.as_bytes()) % 97, v.parse::<f32>().ok().filter(|_| !k.is_empty())?))
                    })
                    .take(n)
                    .collect();
                ids.1.extend(weighted.iter().map(|p| p.0));
                want_weights.extend(weighted.iter().map(|p| p.1));
                want_w.push(ids.1.len() as i64);
            }
            prop_assert_eq!(h.splits(), want_h);
            prop_assert_eq!(h.u64s(), ids.0.clone());
            prop_assert_eq!(w.splits(), want_w);
            prop_assert_eq!(w.u64s(), ids.1.clone());
            let weights: Vec<f32> = w.weights.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
            prop_assert_eq!(weights, want_weights);
        }
    });
}

/// `lookup` with `value_dim` over a batch (a SHARED map through its index,
/// a map per row scanned) gives, element by element, each combiner over the
/// values of the row's keys that hold that element: a value is its numbers
/// between commas, none when it has more than value_dim or a part is not a
/// number; `default` where no value holds the element.
#[test]
fn lookup_value_dim_combines_element_by_element() {
    use proptest::prelude::*;
    let mut features = String::from(
        "  - {name: shared_map, kind: string, shared: once, output: false}\n  - {name: row_map, kind: string, output: false}\n  - {name: k, kind: string, output: false}\n",
    );
    let combiners = ["sum", "mean", "min", "max"];
    for c in combiners {
        for m in ["shared_map", "row_map"] {
            features.push_str(&format!(
                "  - {{name: {c}_{m}, op: lookup, inputs: [{m}, k], value_dim: 3, combiner: {c}, default: -7}}\n"
            ));
        }
    }
    let p = plan(&features);
    let value = prop::sample::select(vec!["1", "2,3", "-1,0.5,4", "1,2,3,4", "1,x", "", "5,,6", "nan,1"]);
    let entry = (prop::sample::select(vec!["a", "b", "c"]), value);
    let map = prop::collection::vec(entry, 0..6);
    let keys = prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d"]), 0..5);
    let case = (map.clone(), prop::collection::vec((map, keys), 2..4));
    proptest!(ProptestConfig::with_cases(200), |((shared, rows) in case)| {
        let text = |m: &[(&str, &str)]| m.iter().map(|(k, v)| format!("{k}:{v}")).collect::<Vec<_>>().join("\\x1d");
        let mut sample = format!(
            "batch_size: {}\nlists:\n  - {{name: shared_map, type: SHARED, features: [{{bytes_list: [\"{}\"]}}]}}\n  - name: row_map\n    features:\n",
            rows.len(),
            text(&shared)
        );
        for (m, _) in &rows {
            sample.push_str(&format!("      - {{bytes_list: [\"{}\"]}}\n", text(m)));
        }
        sample.push_str("  - name: k\n    features:\n");
        for (_, k) in &rows {
            sample.push_str(&format!("      - {{bytes_list: [\"{}\"]}}\n", k.join("\\x1d")));
        }
        let out = run(&p, &batch(&sample));
        // The first entry of a key wins; its value's numbers, if it is one.
        let vector = |m: &[(&str, &str)], key: &str| -> Option<Vec<f64>> {
            let v = m.iter().find(|(k, _)| *k == key)?.1;
            let xs: Vec<f64> = v.split(',').map(|x| x.parse::<f64>().ok()).collect::<Option<_>>()?;
            (xs.len() <= 3).then_some(xs)
        };
        for c in combiners {
            for (m, name) in [(None, "shared_map"), (Some(()), "row_map")] {
                let got = get(&out, &format!("{c}_{name}")).f32s();
                for (r, (own, keys)) in rows.iter().enumerate() {
                    let map = if m.is_some() { own } else { &shared };
                    for e in 0..3 {
                        let xs: Vec<f64> = keys.iter().filter_map(|k| vector(map, k)?.get(e).copied()).collect();
                        let want = match (c, xs.is_empty()) {
                            (_, true) => -7.0,
                            ("sum", _) => xs.iter().sum(),
                            ("mean", _) => xs.iter().sum::<f64>() / xs.len() as f64,
                            ("min", _) => xs.iter().copied().fold(f64::NAN, f64::min),
                            _ => xs.iter().copied().fold(f64::NAN, f64::max),
                        };
                        let g = got[r * 3 + e];
                        prop_assert!(g == want as f32 || (g.is_nan() && want.is_nan()), "{} {} row {} element {}: {} != {}", c, name, r, e, g, want);
                    }
                }
            }
        }
    });
}

/// One encoding of a map of (key, number, integer) entries as a Feature of
/// the sample: `kv` and `kvi` the `key:value` string of its numbers or its
/// integers; `skeys`, `ikeys` its keys as strings or int64s; `strs`,
/// `istrs`, `nums`, `ints` its values as strings or numbers. A number's
/// text is its exact f64 (`nan` for NaN), so that every encoding reads the
/// same f64.
fn encoded(name: &str, map: &[(&str, f32, i64)]) -> String {
    let text = |x: f32| if x.is_nan() { "nan".to_string() } else { f64::from(x).to_string() };
    let all =
        |part: &dyn Fn(&(&str, f32, i64)) -> String, sep: &str| map.iter().map(part).collect::<Vec<_>>().join(sep);
    match name {
        "kv" => format!("{{bytes_list: [\"{}\"]}}", all(&|(k, x, _)| format!("{k}:{}", text(*x)), "\\x1d")),
        "kvi" => format!("{{bytes_list: [\"{}\"]}}", all(&|(k, _, i)| format!("{k}:{i}"), "\\x1d")),
        "skeys" => format!("{{bytes_list: [{}]}}", all(&|(k, _, _)| format!("\"{k}\""), ", ")),
        "ikeys" => format!("{{int64_list: [{}]}}", all(&|(k, _, _)| k.to_string(), ", ")),
        "strs" => format!("{{bytes_list: [{}]}}", all(&|(_, x, _)| format!("\"{}\"", text(*x)), ", ")),
        "istrs" => format!("{{bytes_list: [{}]}}", all(&|(_, _, i)| format!("\"{i}\""), ", ")),
        "nums" => {
            let yaml = |x: f32| if x.is_nan() { ".nan".to_string() } else { f64::from(x).to_string() };
            format!("{{float_list: [{}]}}", all(&|(_, x, _)| yaml(*x), ", "))
        }
        _ => format!("{{int64_list: [{}]}}", all(&|(_, _, i)| i.to_string(), ", ")),
    }
}

/// A map given as parallel lists (`map_keys`, `map_values`) gives, bit for
/// bit, what the same map as a `key:value` string gives, whatever the map
/// holds (repeated keys, NaN, nothing) and however it is given: keys as
/// strings or int64s, values as number strings, a float_list or an
/// int64_list; a map per row (scanned) or a SHARED one (indexed); every
/// combiner, `value_dim`, and hashed values with their keys.
#[test]
fn lookup_over_parallel_lists_equals_the_kv_string() {
    use proptest::prelude::*;
    let lists = [
        ("kv", "kind: string"),
        ("kvi", "kind: string"),
        ("skeys", "kind: string, join: \"\\x1d\""),
        ("ikeys", "kind: list, dtype: i64"),
        ("strs", "kind: string, join: \"\\x1d\""),
        ("istrs", "kind: string, join: \"\\x1d\""),
        ("nums", "kind: list"),
        ("ints", "kind: list, dtype: i64"),
    ];
    let plan_of = |shared: &str| {
        let mut f: String =
            lists.iter().map(|(n, k)| format!("  - {{name: {n}, {k}{shared}, output: false}}\n")).collect();
        f.push_str("  - {name: k, kind: string, output: false}\n");
        let lists = |m: &str| match m {
            "kv" | "kvi" => format!("inputs: [{m}, k]"),
            m => {
                let (keys, values) = m.split_once('+').unwrap();
                format!("inputs: [k], map_keys: {keys}, map_values: {values}")
            }
        };
        let ops = [
            ("", ["kv", "skeys+strs", "ikeys+nums"]),
            (", value_dim: 2", ["kv", "skeys+strs", "ikeys+nums"]),
            (", need_discrete: true, need_key: true, buckets: 1000003", ["kvi", "skeys+istrs", "ikeys+ints"]),
        ];
        for c in ["sum", "mean", "min", "max"] {
            for (i, (extra, maps)) in ops.iter().enumerate() {
                let settings = if i == 2 { extra.to_string() } else { format!(", combiner: {c}, default: -7{extra}") };
                for (j, m) in maps.iter().enumerate() {
                    f.push_str(&format!("  - {{name: {c}_{i}_{j}, op: lookup, {}{settings}}}\n", lists(m)));
                }
            }
        }
        plan(&f)
    };
    let (per_row, shared) = (plan_of(""), plan_of(", shared: once"));
    let key = prop::sample::select(vec!["7", "8", "-3", "0"]);
    let number = prop::sample::select(vec![1.5f32, -2.0, 0.1, 3.0e7, f32::NAN, 0.0, 1.0e-3]);
    let map = prop::collection::vec((key.clone(), number, -5i64..100), 0..6);
    let keys = prop::collection::vec(prop::sample::select(vec!["7", "8", "-3", "0", "9", "x", "07"]), 0..5);
    let case = (any::<bool>(), prop::collection::vec((map, keys), 1..4));
    proptest!(ProptestConfig::with_cases(200), |((once, rows) in case)| {
        let mut sample = format!("batch_size: {}\nlists:\n", rows.len());
        for name in ["kv", "kvi", "skeys", "ikeys", "strs", "istrs", "nums", "ints"] {
            if once {
                sample.push_str(&format!("  - {{name: {name}, type: SHARED, features: [{}]}}\n", encoded(name, &rows[0].0)));
            } else {
                let features: Vec<String> = rows.iter().map(|(m, _)| encoded(name, m)).collect();
                sample.push_str(&format!("  - {{name: {name}, features: [{}]}}\n", features.join(", ")));
            }
        }
        let keys: Vec<String> = rows.iter().map(|(_, k)| format!("{{bytes_list: [\"{}\"]}}", k.join("\\x1d"))).collect();
        sample.push_str(&format!("  - {{name: k, features: [{}]}}\n", keys.join(", ")));
        let out = run(if once { &shared } else { &per_row }, &batch(&sample));
        for c in ["sum", "mean", "min", "max"] {
            for i in 0..3 {
                let of = |j: usize| get(&out, &format!("{c}_{i}_{j}"));
                let want = of(0);
                for j in 1..3 {
                    let got = of(j);
                    if i == 2 {
                        prop_assert_eq!(got.u64s(), want.u64s(), "{}_{}_{} in {}", c, i, j, sample);
                        prop_assert_eq!(got.splits(), want.splits());
                    } else {
                        let bits = |t: &Tensor| t.f32s().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        prop_assert_eq!(bits(&got), bits(&want), "{}_{}_{} in {}", c, i, j, sample);
                    }
                }
            }
        }
    });
}

/// A `value_dim` past the 32 elements `lookup` keeps on the stack works
/// the same (its buffers on the heap), for a map per row and a SHARED one.
#[test]
fn lookup_value_dim_past_the_stack_buffer() {
    let p = plan(
        "  - {name: m, kind: string, output: false}\n  - {name: k, kind: string, output: false}\n  - {name: v, op: lookup, inputs: [m, k], value_dim: 40, combiner: max, default: -1}\n",
    );
    let numbers: Vec<String> = (1..=39).map(|i| i.to_string()).collect();
    let sample = format!(
        "batch_size: 2\nlists:\n  - {{name: m, features: [{{bytes_list: [\"a:{0}\\x1db:7\"]}}, {{bytes_list: [\"a:{0}\"]}}]}}\n  - {{name: k, features: [{{bytes_list: [\"a\\x1db\"]}}, {{bytes_list: [\"b\"]}}]}}\n",
        numbers.join(",")
    );
    let got = get(&run(&p, &batch(&sample)), "v").f32s();
    let mut row0: Vec<f32> = (1..=39).map(|i| i as f32).collect();
    row0[0] = 7.0;
    row0.push(-1.0);
    assert_eq!(&got[..40], &row0[..]);
    assert_eq!(&got[40..], &[-1.0; 40][..]);
}

/// `match` with id sequences as keys (issue 36) gives, position by
/// position, what the same match gives run on each position as a row of its
/// own: the position's ids (truncated or padded with 0 to the sequence's
/// width) as string keys, a key that is not a sequence the row's, ALL every
/// key of the map. For every combiner, primary, secondary or both keys a
/// sequence, a SHARED map (indexed) and a map per row (scanned); maps with
/// repeated and malformed entries and values that are not numbers.
#[test]
fn match_per_position_equals_match_per_row() {
    use proptest::prelude::*;
    /// A position's primary and secondary ids.
    type Position = (Vec<u64>, Vec<u64>);
    const COMBINERS: [&str; 4] = ["sum", "mean", "min", "max"];
    // (name, primary, secondary) over the sequence plan's keys `p`, `s`, `k`
    // and the reference's `pk`, `sk`, `k`.
    const KEYS: [(&str, &str, &str); 5] =
        [("ps", "p", "k"), ("ks", "k", "s"), ("pp", "p", "s"), ("pa", "p", "ALL"), ("as", "ALL", "s")];
    fn reference_key(k: &str) -> &str {
        match k {
            "p" => "pk",
            "s" => "sk",
            k => k,
        }
    }
    let mut seq = String::from(
        "  - {name: shared_m, kind: string, shared: once, output: false}\n  - {name: row_m, kind: string, output: false}\n  - {name: p, kind: sequence, dtype: i64, max_len: 4, width: 2, output: false}\n  - {name: s, kind: sequence, dtype: i64, max_len: 4, width: 1, output: false}\n  - {name: k, kind: string, output: false}\n",
    );
    let mut reference = String::from(
        "  - {name: m, kind: string, output: false}\n  - {name: pk, kind: string, output: false}\n  - {name: sk, kind: string, output: false}\n  - {name: k, kind: string, output: false}\n",
    );
    for c in COMBINERS {
        for (name, pk, sk) in KEYS {
            for m in ["shared_m", "row_m"] {
                seq.push_str(&format!(
                    "  - {{name: {c}_{name}_{m}, op: match, inputs: [{m}, {pk}, {sk}], combiner: {c}, default: -7}}\n"
                ));
            }
            let (pk, sk) = (reference_key(pk), reference_key(sk));
            reference.push_str(&format!(
                "  - {{name: {c}_{name}, op: match, inputs: [m, {pk}, {sk}], combiner: {c}, default: -7}}\n"
            ));
        }
    }
    let (seq, reference) = (plan(&seq), plan(&reference));
    let key = || prop::sample::select(vec!["0", "1", "2", "3"]);
    let value = prop::sample::select(vec!["1", "2.5", "-3", "x", "", "nan", "1,2"]);
    let inner = prop::collection::vec((key(), prop::option::of(value)), 0..4).prop_map(|entries| {
        let entry = |(k, v): (&str, Option<&str>)| v.map_or(k.to_string(), |v| format!("{k}:{v}"));
        entries.into_iter().map(entry).collect::<Vec<_>>().join(",")
    });
    let map = prop::collection::vec((key(), inner), 0..5)
        .prop_map(|m| m.into_iter().map(|(pk, inner)| format!("{pk}^{inner}")).collect::<Vec<_>>().join("|"));
    // A row: its map, its positions (primary ids, secondary ids) and its keys.
    let position = (prop::collection::vec(0u64..4, 0..4), prop::collection::vec(0u64..4, 0..3));
    let row = (map.clone(), prop::collection::vec(position, 0..4), prop::collection::vec(key(), 0..3));
    let case = (map, prop::collection::vec(row, 1..4));
    proptest!(ProptestConfig::with_cases(100), |((shared, rows) in case)| {
        let lists = |ids: &[u64]| format!("[{}]", ids.iter().map(u64::to_string).collect::<Vec<_>>().join(", "));
        let bytes = |s: &str| format!("{{bytes_list: [\"{s}\"]}}");
        let sequence = |which: usize| -> Vec<String> {
            rows.iter()
                .map(|(_, ps, _)| match ps.is_empty() {
                    true => "{}".to_string(),
                    false => {
                        let inner: Vec<String> =
                            ps.iter().map(|pos| lists(if which == 0 { &pos.0 } else { &pos.1 })).collect();
                        format!("{{fid_v2_lists: [{}]}}", inner.join(", "))
                    }
                })
                .collect()
        };
        let mut sample = format!(
            "batch_size: {}\nlists:\n  - {{name: shared_m, type: SHARED, features: [{}]}}\n",
            rows.len(),
            bytes(&shared)
        );
        let row_maps: Vec<String> = rows.iter().map(|(m, _, _)| bytes(m)).collect();
        let keys: Vec<String> = rows.iter().map(|(_, _, k)| bytes(&k.join("\\x1d"))).collect();
        sample.push_str(&format!("  - {{name: row_m, features: [{}]}}\n", row_maps.join(", ")));
        sample.push_str(&format!("  - {{name: p, features: [{}]}}\n", sequence(0).join(", ")));
        sample.push_str(&format!("  - {{name: s, features: [{}]}}\n", sequence(1).join(", ")));
        sample.push_str(&format!("  - {{name: k, features: [{}]}}\n", keys.join(", ")));
        let out = run(&seq, &batch(&sample));
        // The reference: a row per (row, position), the position's ids as
        // the sequence reads them (the first `width`, padded with 0).
        let padded = |ids: &[u64], width: usize| -> String {
            (0..width).map(|i| ids.get(i).copied().unwrap_or(0).to_string()).collect::<Vec<_>>().join("\\x1d")
        };
        let places: Vec<(usize, &Position)> =
            rows.iter().enumerate().flat_map(|(r, (_, ps, _))| ps.iter().map(move |p| (r, p))).collect();
        let splits: Vec<i64> = std::iter::once(0)
            .chain(rows.iter().scan(0, |n, (_, ps, _)| { *n += ps.len() as i64; Some(*n) }))
            .collect();
        for m in ["shared_m", "row_m"] {
            let want = (!places.is_empty()).then(|| {
                let column = |f: &dyn Fn(usize, &Position) -> String| {
                    places.iter().map(|&(r, p)| bytes(&f(r, p))).collect::<Vec<_>>().join(", ")
                };
                let map_of = |r: usize, _: &Position| if m == "shared_m" { shared.clone() } else { rows[r].0.clone() };
                let sample = format!(
                    "batch_size: {}\nlists:\n  - {{name: m, features: [{}]}}\n  - {{name: pk, features: [{}]}}\n  - {{name: sk, features: [{}]}}\n  - {{name: k, features: [{}]}}\n",
                    places.len(),
                    column(&map_of),
                    column(&|_, p| padded(&p.0, 2)),
                    column(&|_, p| padded(&p.1, 1)),
                    column(&|r, _| rows[r].2.join("\\x1d")),
                );
                run(&reference, &batch(&sample))
            });
            for c in COMBINERS {
                for (name, _, _) in KEYS {
                    let got = get(&out, &format!("{c}_{name}_{m}"));
                    prop_assert_eq!(got.splits(), splits.clone(), "{}_{}_{} in {}", c, name, m, sample);
                    let want = want.as_ref().map_or(vec![], |w| get(w, &format!("{c}_{name}")).f32s());
                    let bits = |xs: Vec<f32>| xs.into_iter().map(f32::to_bits).collect::<Vec<_>>();
                    prop_assert_eq!(bits(got.f32s()), bits(want), "{}_{}_{} in {}", c, name, m, sample);
                }
            }
        }
    });
}

/// `overlap` over a whole batch (a SHARED query split once, titles per row,
/// short rows compared term by term and long ones through sorted ranks)
/// gives, row by row, what FG lite's loops give (OverLapFeatureEvaluator.h:
/// `intersect` counts each query term found, `isContain` looks for the
/// query as a contiguous run, `isEqual` compares in order), and what brute
/// force gives for `index_of` and `proximity_min_cover` (TorchEasyRec's
/// docs/source/feature/feature.md, "OverlapFeature", names them; FG lite
/// lacks them), with `default` where a side has no terms.
#[test]
fn overlap_over_a_batch_agrees_with_fg_lites_loops() {
    use proptest::prelude::*;
    let methods =
        ["query_common_ratio", "title_common_ratio", "is_contain", "is_equal", "index_of", "proximity_min_cover"];
    let mut features = String::from(
        "  - {name: q, kind: string, shared: once, output: false}\n  - {name: t, kind: string, output: false}\n",
    );
    for m in methods {
        features.push_str(&format!("  - {{name: {m}, op: overlap, inputs: [q, t], method: {m}, default: -1}}\n"));
    }
    let p = plan(&features);
    let word = prop::sample::select(vec!["a", "b", "c", "ab", "longer_word_1", "longer_word_2"]);
    let words = move |max| prop::collection::vec(word.clone(), 0..max);
    let case = (words(8), prop::collection::vec(words(60), 1..5));
    proptest!(ProptestConfig::with_cases(200), |((q, titles) in case)| {
        let sample = query_and_titles(&q, &titles);
        let out = run(&p, &batch(&sample));
        for m in methods {
            let got = get(&out, m).f32s();
            for (r, t) in titles.iter().enumerate() {
                let found = q.iter().filter(|w| t.contains(w)).count();
                let start = t.windows(q.len().max(1)).position(|w| w == q.as_slice()).filter(|_| t.len() >= q.len());
                // The shortest window holding every query term (0: some term is missing).
                let cover = (1..=t.len())
                    .find(|&n| t.windows(n).any(|w| q.iter().all(|x| w.contains(x))))
                    .filter(|_| q.iter().all(|x| t.contains(x)));
                let want = match m {
                    _ if q.is_empty() || t.is_empty() => -1.0,
                    "query_common_ratio" => (found as f64 / q.len() as f64) as f32,
                    "title_common_ratio" => (found as f64 / t.len() as f64) as f32,
                    "is_contain" => f32::from(u8::from(start.is_some())),
                    "index_of" => start.map_or(-1.0, |s| s as f32),
                    "proximity_min_cover" => cover.map_or(0.0, |n| n as f32),
                    _ => f32::from(u8::from(q == *t)),
                };
                prop_assert_eq!(got[r], want, "{} row {}: query {:?}, title {:?}", m, r, &q, t);
            }
        }
    });
}

/// `overlap`'s `proximity_min_dist`, `proximity_max_dist` and
/// `proximity_avg_dist` over a whole batch (short rows labelled term by
/// term, long ones through sorted ranks; each pair's distance a merge of
/// two position lists) give, row by row, Tao and Zhai's MinDist, MaxDist
/// and AvgDist written as brute force (every occurrence of one matched
/// term against every occurrence of another, O(q² t²)): over the distinct
/// query terms in the title; the title's length when one is, the length
/// plus 1 when none is or a side has no terms.
#[test]
fn overlap_distances_agree_with_brute_force() {
    use proptest::prelude::*;
    let methods = ["proximity_min_dist", "proximity_max_dist", "proximity_avg_dist"];
    let mut features = String::from(
        "  - {name: q, kind: string, shared: once, output: false}\n  - {name: t, kind: string, output: false}\n",
    );
    for m in methods {
        features.push_str(&format!("  - {{name: {m}, op: overlap, inputs: [q, t], method: {m}}}\n"));
    }
    let p = plan(&features);
    let word = prop::sample::select(vec!["a", "b", "c", "d", "ab", "longer_word_1", "longer_word_2"]);
    let words = move |max| prop::collection::vec(word.clone(), 0..max);
    let case = (words(8), prop::collection::vec(words(60), 1..5));
    proptest!(ProptestConfig::with_cases(200), |((q, titles) in case)| {
        let sample = query_and_titles(&q, &titles);
        let out = run(&p, &batch(&sample));
        for (r, t) in titles.iter().enumerate() {
            let mut matched: Vec<&str> = q.iter().copied().filter(|w| t.contains(w)).collect();
            matched.sort_unstable();
            matched.dedup();
            let mut pairs = vec![];
            for (k, a) in matched.iter().enumerate() {
                for b in &matched[k + 1..] {
                    let d = (0..t.len())
                        .flat_map(|i| (0..t.len()).map(move |j| (i, j)))
                        .filter(|&(i, j)| t[i] == *a && t[j] == *b)
                        .map(|(i, j)| i.abs_diff(j))
                        .min()
                        .unwrap();
                    pairs.push(d as f64);
                }
            }
            let none = [t.len() as f64 + 1.0; 3];
            let want = match matched.len() {
                0 => none,
                1 => [t.len() as f64; 3],
                _ => [
                    pairs.iter().copied().fold(f64::MAX, f64::min),
                    pairs.iter().copied().fold(0.0, f64::max),
                    pairs.iter().sum::<f64>() / pairs.len() as f64,
                ],
            };
            for (m, w) in methods.iter().zip(want) {
                let got = get(&out, m).f32s()[r];
                prop_assert_eq!(got, w as f32, "{} row {}: query {:?}, title {:?}", m, r, &q, t);
            }
        }
    });
}

/// `bm25` over a whole batch (a SHARED query split and looked up once,
/// titles per row, short rows counted term by term and long ones through
/// sorted runs) gives, row by row, Okapi BM25 with Lucene's idf as the
/// reference's "BM25 (op: bm25)" section writes it, term by term in query
/// order; `default` where a side has no terms.
#[test]
fn bm25_over_a_batch_agrees_with_the_formula() {
    use proptest::prelude::*;
    let p = plan(
        "  - {name: q, kind: string, shared: once, output: false}\n  - {name: t, kind: string, output: false}\n  - {name: s, op: bm25, inputs: [q, t], file: ../bm25/title_df.tsv, documents: 10, avg_len: 6, k1: 1.5, b: 0.5, default: -1}\n",
    );
    // title_df.tsv: red 2, shoes 5, running 1 (of 10 documents).
    let df = |w: &str| match w {
        "red" => 2.0f64,
        "shoes" => 5.0,
        "running" => 1.0,
        _ => 0.0,
    };
    let word = prop::sample::select(vec!["red", "shoes", "running", "blue", "a_longer_word"]);
    let words = move |max| prop::collection::vec(word.clone(), 0..max);
    let case = (words(8), prop::collection::vec(words(60), 1..5));
    proptest!(ProptestConfig::with_cases(200), |((q, titles) in case)| {
        let sample = query_and_titles(&q, &titles);
        let got = get(&run(&p, &batch(&sample)), "s").f32s();
        let (k1, b, avg_len) = (1.5f64, 0.5f64, 6.0f64);
        for (r, t) in titles.iter().enumerate() {
            let norm = k1 * (1.0 - b + b * t.len() as f64 / avg_len);
            let share = |w: &&str| {
                let tf = t.iter().filter(|x| *x == w).count() as f64;
                let idf = (1.0 + (10.0 - df(w) + 0.5) / (df(w) + 0.5)).ln();
                if tf == 0.0 { 0.0 } else { idf * (tf * (k1 + 1.0)) / (tf + norm) }
            };
            let want = if q.is_empty() || t.is_empty() { -1.0 } else { q.iter().fold(0.0, |s, w| s + share(w)) as f32 };
            prop_assert_eq!(got[r], want, "row {}: query {:?}, title {:?}", r, &q, t);
        }
    });
}

/// `kv_dot` over a whole batch (a SHARED query read once, documents per
/// row) gives, row by row, the dot product a map of keys gives: weights of
/// a repeated key added, a part without a weight weighing 1.
#[test]
fn kv_dot_over_a_batch_agrees_with_a_map() {
    use proptest::prelude::*;
    use std::collections::HashMap;
    let p = plan(
        "  - {name: q, kind: string, shared: once, output: false}\n  - {name: d, kind: string, output: false}\n  - {name: dot, op: kv_dot, inputs: [q, d], separator: \",\"}\n",
    );
    let entry = (prop::sample::select(vec!["a", "b", "c", "dd", "e:e"]), prop::option::of(-3i32..4));
    let vector = move || prop::collection::vec(entry.clone(), 0..40);
    let case = (vector(), prop::collection::vec(vector(), 1..4));
    proptest!(ProptestConfig::with_cases(200), |((q, docs) in case)| {
        let text = |v: &[(&str, Option<i32>)]| {
            v.iter().map(|(k, w)| w.map_or(k.to_string(), |w| format!("{k}:{w}"))).collect::<Vec<_>>().join(",")
        };
        // The key is up to the part's last colon: "e:e:3" is the key "e:e"
        // weighing 3, and "e:e" alone is skipped (its weight "e" is no number).
        let bag = |v: &[(&str, Option<i32>)]| {
            let mut m: HashMap<String, f64> = HashMap::new();
            for (k, w) in v {
                let (key, weight) = match (k.rsplit_once(':'), w) {
                    (_, Some(w)) => (k.to_string(), f64::from(*w)),
                    (Some((key, weight)), None) => match weight.parse::<f64>() {
                        Ok(x) if !key.is_empty() => (key.to_string(), x),
                        _ => continue,
                    },
                    (None, None) => (k.to_string(), 1.0),
                };
                *m.entry(key).or_default() += weight;
            }
            m
        };
        let mut sample = format!(
            "batch_size: {}\nlists:\n  - {{name: q, type: SHARED, features: [{{bytes_list: [\"{}\"]}}]}}\n  - name: d\n    features:\n",
            docs.len(),
            text(&q)
        );
        for d in &docs {
            sample.push_str(&format!("      - {{bytes_list: [\"{}\"]}}\n", text(d)));
        }
        let got = get(&run(&p, &batch(&sample)), "dot").f32s();
        let qb = bag(&q);
        for (r, d) in docs.iter().enumerate() {
            let db = bag(d);
            let want: f64 = qb.iter().filter_map(|(k, w)| Some(w * db.get(k)?)).fold(0.0, |a, x| a + x);
            prop_assert_eq!(got[r], want as f32, "row {}: {:?} . {:?}", r, text(&q), text(d));
        }
    });
}

/// `tokenize` keeps each thread's recent strings and their ids: a string
/// that comes again, and the same strings through another tokenizer in
/// turn on one thread, give what a first encoding gives (the cache is keyed
/// by the tokenizer file's digest as well as the bytes).
#[test]
fn tokenize_answers_from_its_cache_as_from_the_tokenizer() {
    let word_level = br#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],"normalizer":null,
        "pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,
        "model":{"type":"WordLevel","vocab":{"red":0,"running":1,"shoes":2,"[UNK]":3},"unk_token":"[UNK]"}}"#;
    let bpe = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokenizer/bpe.json")).unwrap();
    let plan_with = |bytes: &[u8]| {
        let mut files = fex::files::InMemory::new();
        files.insert("t.json", bytes.to_vec());
        let yaml = "name: t\nfeatures:\n  - {name: s, kind: string, output: false}\n  - {name: ids, op: tokenize, input: s, file: t.json}\n";
        Plan::from_yaml_with(yaml, std::path::Path::new("."), &files).unwrap()
    };
    let (a, b) = (plan_with(&bpe), plan_with(word_level));
    let sample = batch(
        "batch_size: 3\nlists:\n  - name: s\n    features: [{bytes_list: [\"red running shoes\"]}, {bytes_list: [\"red running shoes\"]}, {bytes_list: [\"blue\"]}]",
    );
    let rows = |p: &Plan| get(&run(p, &sample), "ids").ragged_u64();
    let first = (rows(&a), rows(&b));
    assert_eq!(first.1, [vec![0, 1, 2], vec![0, 1, 2], vec![3]], "the word-level tokenizer's own ids");
    assert_eq!(first.0[0], [82, 267, 282, 280], "the BPE's ids (tests/corpus/op_tokenize_gives_token_ids.yaml)");
    for _ in 0..3 {
        assert_eq!((rows(&a), rows(&b)), first, "answers from the cache, tokenizers in turn");
    }
}

/// A damaged SentencePiece model (cut short, or bytes changed) is the
/// config's error or a model that encodes, never a crash: the C++ library
/// parses the file, so the process must survive whatever it holds. Every
/// model that loads encodes a string without failing the process.
#[test]
fn a_damaged_sentencepiece_model_is_refused_or_encodes() {
    let good = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokenizer/unigram.model")).unwrap();
    let yaml = "name: t\nfeatures:\n  - {name: s, kind: string, output: false}\n  - {name: ids, op: tokenize, input: s, tokenizer_type: sentencepiece, file: m.model}\n";
    let sample =
        batch("batch_size: 1\nlists:\n  - name: s\n    features: [{bytes_list: [\"red running shoes 红色 ＲＥＤ\"]}]");
    let mut seed = 36u64;
    let mut next = |n: usize| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as usize % n
    };
    let (mut loaded, mut refused) = (0, 0);
    for i in 0..200 {
        let mut bytes = good.clone();
        if i % 4 == 0 {
            bytes.truncate(next(good.len()));
        } else {
            for _ in 0..1 + next(20) {
                let at = next(bytes.len());
                bytes[at] = next(256) as u8;
            }
        }
        let mut files = fex::files::InMemory::new();
        files.insert("m.model", bytes);
        match Plan::from_yaml_with(yaml, std::path::Path::new("."), &files) {
            Ok(plan) => {
                let _ = fex::extract_batch(&plan, &sample);
                loaded += 1;
            }
            Err(e) => {
                assert!(e.to_string().contains("m.model is not a sentencepiece model: "), "{e}");
                refused += 1;
            }
        }
    }
    assert!(loaded > 0 && refused > 0, "both kinds seen: {loaded} loaded, {refused} refused");
}
