//! The offline sample transforms (`offline:` in the model YAML) on the entry
//! point's rows: index → `Transforms::apply` → write. Each test is a worked
//! example of Monolith's behaviour, citing the file it comes from
//! (bytedance/monolith, monolith/native_training/data/).

mod common;

use common::{batch, examples};
use fex::samples::{TransformCount, Transforms};
use fex::{Extracted, Extractor, Input, Plan, Policy};
use rand::{Rng, SeedableRng};

/// A model with `features` and an `offline:` section of `transforms`.
fn plan(features: &str, transforms: &str) -> Plan {
    let text = format!("name: t\ncompat: native\nfeatures:\n{features}offline:\n  transforms:\n{transforms}");
    Plan::from_yaml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Runs `plan`'s transforms over `inputs` (Examples each), in order, and
/// writes every input's remaining rows; returns the columns of each.
fn run(plan: &Plan, inputs: &[Vec<Vec<u8>>], t: &mut Transforms) -> Vec<Extracted> {
    let mut ex = Extractor::new();
    inputs
        .iter()
        .map(|input| {
            let slices: Vec<&[u8]> = input.iter().map(Vec::as_slice).collect();
            let mut rows = ex.index(plan, Input::Examples(&slices), None).unwrap();
            t.apply(&mut rows).unwrap();
            let mut out = Extracted::default();
            ex.write(plan, &rows, Policy::default(), &mut out).unwrap();
            out
        })
        .collect()
}

fn ids(out: &Extracted, name: &str) -> Vec<Vec<u64>> {
    out.tensor(name).unwrap().ragged_u64()
}

const FIDS: &str = "  - {name: user, kind: sparse}\n  - {name: item, kind: sparse}\n";

/// `IsInstanceOfInterest` (training_instance/cc/instance_utils.h, lines
/// 117-197): req_time below req_time_min drops; any filter_fid drops; some
/// has_fid, every select_fid, every select_slot and some has_action are
/// required. Slots are read v1 (>> 54) or v2 (>> 48) by the list's variant.
#[test]
fn filter_by_fids_keeps_rows_as_instance_of_interest() {
    let v2 = |slot: u64, x: u64| (slot << 48) | x;
    let samples = examples(&format!(
        "
    - {{features: {{user: {{fid_v2_list: [{a}]}}, item: {{fid_v2_list: [{b}]}}}}, line_id: {{req_time: 100, actions: [1]}}}}
    - {{features: {{user: {{fid_v2_list: [{a}]}}, item: {{fid_v2_list: [{c}]}}}}, line_id: {{req_time: 100, actions: [2]}}}}
    - {{features: {{user: {{fid_v2_list: [{a}]}}}}, line_id: {{req_time: 100, actions: [1]}}}}
    - {{features: {{user: {{fid_v2_list: [{a}]}}, item: {{fid_v2_list: [{b}]}}}}, line_id: {{req_time: 5, actions: [1]}}}}
    - {{features: {{user: {{fid_v2_list: [{a}]}}, item: {{fid_v2_list: [{d}]}}}}, line_id: {{req_time: 100, actions: [1]}}}}
",
        a = v2(1, 7),
        b = v2(2, 8),
        c = v2(3, 9),
        d = v2(2, 99),
    ));
    let check = |transform: &str, kept: &[u64]| {
        let p = plan(FIDS, &format!("    - {{transform: filter_by_fids, {transform}}}\n"));
        let mut t = Transforms::new(&p);
        let out = run(&p, std::slice::from_ref(&samples), &mut t);
        let items: Vec<u64> =
            ids(&out[0], "item").iter().map(|r| r.first().map_or(0, |f| f & 0xffff_ffff_ffff)).collect();
        assert_eq!(items, kept, "{transform}");
        assert_eq!(t.counts()[0].dropped, (5 - kept.len()) as u64, "{transform}");
    };
    check(&format!("filter_fids: [{}]", v2(3, 9)), &[8, 0, 8, 99]);
    check(&format!("has_fids: [{}, {}]", v2(3, 9), v2(2, 99)), &[9, 99]);
    check(&format!("select_fids: [{}, {}]", v2(1, 7), v2(2, 8)), &[8, 8]);
    check("select_slots: [1, 2]", &[8, 8, 99]);
    check("has_actions: [2]", &[9]);
    check("req_time_min: 50", &[8, 9, 0, 99]);
}

const LINE_ID: &str = "  - {name: rt, kind: line_id, field: req_time}\n";

/// Keeps the req_time of each row that `transform` lets through, from
/// Examples with the given LineIds.
fn value_filter(transform: &str, line_ids: &[&str]) -> Vec<i64> {
    let p = plan(LINE_ID, &format!("    - {{transform: filter_by_value, {transform}}}\n"));
    let text: String = line_ids.iter().map(|l| format!("    - {{line_id: {l}}}\n")).collect();
    let out = run(&p, &[examples(&text)], &mut Transforms::new(&p));
    out[0].tensor("rt").unwrap().i64s()
}

/// `LineIdValueFilter` (kernels/internal/value_filter_by_line_id.cc, lines
/// 165-293) with relational_utils.h's `compare`/`contains`: `between` is
/// [lo, hi); singular fields read their default when absent (sample_rate
/// 1.0); repeated fields take any/all/diff, and keep_empty decides rows
/// without values.
#[test]
fn filter_by_value_compares_line_id_fields_as_the_kernel() {
    let rows = ["{req_time: 1}", "{req_time: 2}", "{req_time: 3}", "{req_time: 4}"];
    assert_eq!(value_filter("field: req_time, op: gt, operand: 2", &rows), [3, 4]);
    assert_eq!(value_filter("field: req_time, op: le, operand: 2", &rows), [1, 2]);
    assert_eq!(value_filter("field: req_time, op: neq, operand: 2", &rows), [1, 3, 4]);
    assert_eq!(value_filter("field: req_time, op: between, operand: [2, 4]", &rows), [2, 3]);
    assert_eq!(value_filter("field: req_time, op: in, operand: [4, 1]", &rows), [1, 4]);
    assert_eq!(value_filter("field: req_time, op: not-in, operand: [4, 1]", &rows), [2, 3]);
    let rates = ["{req_time: 1, sample_rate: 0.5}", "{req_time: 2}"];
    assert_eq!(value_filter("field: sample_rate, op: eq, operand: 1.0", &rates), [2]);
    assert_eq!(value_filter("field: sample_rate, op: lt, operand: 0.75", &rates), [1]);
    let strings = ["{req_time: 1, req_id: abc-x}", "{req_time: 2, req_id: zz-abc}", "{req_time: 3}"];
    assert_eq!(value_filter("field: req_id, op: startswith, operand: [abc, q]", &strings), [1]);
    assert_eq!(value_filter("field: req_id, op: endswith, operand: abc", &strings), [2]);
    assert_eq!(value_filter("field: req_id, op: eq, operand: \"\"", &strings), [3]);
    let actions = [
        "{req_time: 1, actions: [1, 2]}",
        "{req_time: 2, actions: [2, 3]}",
        "{req_time: 3}",
        "{req_time: 4, actions: [5]}",
    ];
    assert_eq!(value_filter("field: actions, op: any, operand: [1, 3]", &actions), [1, 2]);
    assert_eq!(value_filter("field: actions, op: all, operand: [2, 3]", &actions), [2]);
    assert_eq!(value_filter("field: actions, op: diff, operand: [2]", &actions), [4]);
    assert_eq!(value_filter("field: actions, op: diff, operand: [2], keep_empty: true", &actions), [3, 4]);
    // A field by number and type: chnid is 19, int64.
    let chn = ["{req_time: 1, chnid: 7}", "{req_time: 2, chnid: 8}"];
    assert_eq!(value_filter("field: 19, type: int64, op: eq, operand: 8", &chn), [2]);
}

/// `operand_filepath` (value_filter_by_line_id.cc `EnsureLoadFilterValues`):
/// a serialized FilterValues whose list matches the field's type; or, our
/// addition, a text file of one value per line.
#[test]
fn filter_by_value_reads_operands_from_files() {
    use fex::files::InMemory;
    // FilterValues { int64_list (2) { value (1): [2, 4] packed } }.
    let filter_values = vec![0x12, 0x04, 0x0a, 0x02, 0x02, 0x04];
    let files: InMemory = [("m/in.pb", filter_values), ("m/in.txt", b"3\n\n1\n".to_vec())].into_iter().collect();
    let model = |file: &str, format: &str| {
        format!(
            "name: t\nfeatures:\n{LINE_ID}offline:\n  transforms:\n    - {{transform: filter_by_value, field: req_time, op: in, operand_file: {file}{format}}}\n"
        )
    };
    let kept = |p: &Plan| {
        let rows = examples(
            "    - {line_id: {req_time: 1}}\n    - {line_id: {req_time: 2}}\n    - {line_id: {req_time: 3}}\n    - {line_id: {req_time: 4}}\n",
        );
        run(p, &[rows], &mut Transforms::new(p))[0].tensor("rt").unwrap().i64s()
    };
    let pb = Plan::from_yaml_with(&model("in.pb", ""), "m".as_ref(), &files).unwrap();
    assert_eq!(kept(&pb), [2, 4]);
    let txt = Plan::from_yaml_with(&model("in.txt", ", operand_format: lines"), "m".as_ref(), &files).unwrap();
    assert_eq!(kept(&txt), [1, 3]);
}

const LABELS: &str = "  - {name: label, kind: label, shape: [2]}\n";

/// Examples with these labels, one per row.
fn labelled(labels: &[&str]) -> Vec<Vec<u8>> {
    examples(&labels.iter().map(|l| format!("    - {{label: {l}}}\n")).collect::<String>())
}

/// filter_by_label's docstring (feature_utils.py, lines 443-449):
/// thresholds [-100.0, 0.0]; [-1000, -1] is dropped, [-1000, 0], [-1, -1]
/// and [-1, 1] are kept; filter_equal drops a label equal to its threshold
/// (filter_by_label_kernel.cc, lines 74-80); fewer labels than thresholds
/// drop the row.
#[test]
fn filter_by_label_follows_the_docstring() {
    let rows = labelled(&["[-1000, -1]", "[-1000, 0]", "[-1, -1]", "[-1, 1]", "[5]"]);
    let kept = |extra: &str| {
        let p = plan(LABELS, &format!("    - {{transform: filter_by_label, label_threshold: [-100.0, 0.0]{extra}}}\n"));
        run(&p, std::slice::from_ref(&rows), &mut Transforms::new(&p))[0].tensor("label").unwrap().f32s()
    };
    assert_eq!(kept(""), [-1000.0, 0.0, -1.0, -1.0, -1.0, 1.0]);
    assert_eq!(kept(", filter_equal: true"), [-1.0, -1.0, -1.0, 1.0]);
}

const INVALID: f32 = f32::MIN;

/// add_label's docstring (feature_utils.py, lines 338-352) and kernel
/// (add_label_kernel.cc, lines 84-125): config "1,2:3:1.0;4::0.5" is two
/// tasks; a label per task is appended to the row's labels (a first label
/// <= 0 becomes INVALID_LABEL); task 1 gives 1 with action 1 or 2, the
/// negative value with 3, INVALID_LABEL with neither; LineId.sample_rate
/// becomes new_sample_rate.
#[test]
fn add_label_follows_the_docstring() {
    let features = "  - {name: label, kind: label, shape: [3]}\n  - {name: sr, kind: line_id, field: sample_rate}\n";
    let p = plan(
        features,
        "    - {transform: add_label, config: \"1,2:3:1.0;4::1.0\", negative_value: -1.0, new_sample_rate: 0.5}\n",
    );
    let rows = examples(
        "    - {line_id: {actions: [2, 4]}, label: [1.0]}
    - {line_id: {actions: [3]}, label: [0.0]}
    - {line_id: {actions: [7]}, label: [1.0]}
    - {line_id: {actions: [3]}}
",
    );
    let out = &run(&p, &[rows], &mut Transforms::new(&p))[0];
    let labels = out.tensor("label").unwrap().f32s();
    #[rustfmt::skip]
    assert_eq!(labels, [
        1.0, 1.0, 1.0,
        INVALID, -1.0, -1.0,
        1.0, INVALID, -1.0,
        -1.0, -1.0, 0.0, // no label of its own: the two tasks, then the label default
    ]);
    assert_eq!(out.tensor("sr").unwrap().f32s(), [0.5; 4]);
}

/// With a sample rate below 1, add_label keeps a negative when a draw from
/// the row's LineId falls below it: the same draw the online `action_label`
/// kind makes, so offline labels and online labels agree row for row.
#[test]
fn add_label_samples_negatives_as_action_label_does_online() {
    let features = "  - {name: label, kind: label, shape: [1]}
  - {name: online, kind: action_label, tasks: [{pos: [4], sample_rate: 0.5}]}
";
    let p =
        plan(features, "    - {transform: add_label, config: \"4::0.5\", negative_value: 0.0, new_sample_rate: 1.0}\n");
    let text: String =
        (0..64).map(|i| format!("    - {{line_id: {{uid: {i}, actions: [{}]}}}}\n", i % 3 + 3)).collect();
    let rows = examples(&text);
    // The online column is computed from the original LineId; compare it
    // with the offline labels of the same rows.
    let mut ex = Extractor::new();
    let slices: Vec<&[u8]> = rows.iter().map(Vec::as_slice).collect();
    let mut online = Extracted::default();
    ex.extract(&p, Input::Examples(&slices), Policy::default(), &mut online).unwrap();
    let offline = &run(&p, std::slice::from_ref(&rows), &mut Transforms::new(&p))[0];
    let (on, off) = (online.tensor("online").unwrap().f32s(), offline.tensor("label").unwrap().f32s());
    assert_eq!(on.len(), 64);
    assert!(on.contains(&0.0) && on.contains(&INVALID) && on.contains(&1.0), "{on:?}");
    assert_eq!(off, on);
}

/// Keeps column `name` of the rows `transform` leaves of `rows` (Examples).
fn after(features: &str, transform: &str, rows: &str) -> Extracted {
    let p = plan(features, &format!("    - {transform}\n"));
    run(&p, &[examples(rows)], &mut Transforms::new(&p)).remove(0)
}

const RT: &str = "  - {name: rt, kind: line_id, field: req_time}\n";

/// special_strategy (variant_filter_kernel.cc, `SpecialStrategyOp::DoCompute`,
/// lines 323-372): a row without special strategies is kept by
/// keep_empty_strategy (331-338); the first listed strategy the row has
/// decides (340-343); at sample rate 1 it is kept and takes the
/// strategy's label as its first (348-362); a listed strategy without a
/// rate keeps the row (366-367); strategies none of them listed drop it.
#[test]
fn special_strategy_keeps_relabels_and_drops_as_the_kernel() {
    let features = format!("{RT}  - {{name: label, kind: label, shape: [1]}}\n");
    let rows = "    - {line_id: {req_time: 1}, label: [0.0]}
    - {line_id: {req_time: 2, special_strategies: [5]}, label: [0.0]}
    - {line_id: {req_time: 3, special_strategies: [6]}, label: [0.0]}
    - {line_id: {req_time: 4, special_strategies: [9, 7]}, label: [0.0]}
    - {line_id: {req_time: 5, special_strategies: [8]}, label: [0.0]}
";
    let t = "{transform: special_strategy, strategy_list: [7, 5, 8], strategy_conf: \"5:1.0:2.0,7:1:3.0,8:0:4.0\"}";
    let out = after(&features, t, rows);
    // Row 5's rate 0 keeps it only for a draw of exactly 0.
    assert_eq!(out.tensor("rt").unwrap().i64s(), [1, 2, 4]);
    assert_eq!(out.tensor("label").unwrap().f32s(), [0.0, 2.0, 3.0]);
    let t = "{transform: special_strategy, strategy_list: [6], keep_empty_strategy: false}";
    assert_eq!(after(&features, t, rows).tensor("rt").unwrap().i64s(), [3]);
}

/// special_strategy below rate 1 keeps a row when its draw is at most the
/// rate (line 351). The draw is a hash of the row under `seed`, so the
/// same seed keeps the same rows; over 1000 rows at rate 0.3 the kept
/// count is Binomial(1000, 0.3): mean 300, sd 14.5, and the bound below
/// is 5 sd.
#[test]
fn special_strategy_samples_at_its_rate_reproducibly() {
    let rows: String =
        (0..1000).map(|i| format!("    - {{line_id: {{req_time: {i}, special_strategies: [5]}}}}\n")).collect();
    let kept = |seed: u64| {
        let t = format!("{{transform: special_strategy, strategy_list: [5], strategy_conf: \"5:0.3\", seed: {seed}}}");
        after(RT, &t, &rows).tensor("rt").unwrap().i64s()
    };
    let (a, b) = (kept(1), kept(2));
    assert!((228..=372).contains(&a.len()), "{}", a.len());
    assert_eq!(kept(1), a, "a seed fixes the draws");
    assert_ne!(a, b, "another seed draws again");
}

/// negative_sample (variant_filter_kernel.cc, `NegativeSampleOp`, lines
/// 413-492): a row whose label[label_index] is below threshold is dropped
/// when its draw in [0, 0.999] is below the drop rate: drop_rate 1 drops
/// every negative and keeps every positive; with action_priority and
/// per_action_drop_rate the row's most prior listed action picks the rate
/// (483-492); a row with no listed action falls back to drop_rate.
#[test]
fn negative_sample_drops_negatives_by_rate_and_action() {
    let features = format!("{RT}  - {{name: label, kind: label, shape: [2]}}\n");
    let rows = "    - {line_id: {req_time: 1, actions: [2, 1]}, label: [1.0, -1.0]}
    - {line_id: {req_time: 2, actions: [2, 1]}, label: [1.0, 0.0]}
    - {line_id: {req_time: 3, actions: [2]}, label: [1.0, -1.0]}
    - {line_id: {req_time: 4, actions: [3]}, label: [1.0, -1.0]}
    - {line_id: {req_time: 5}, label: [1.0]}
";
    let rt = |t: &str| after(&features, t, rows).tensor("rt").unwrap().i64s();
    assert_eq!(rt("{transform: negative_sample, drop_rate: 1.0, label_index: 1}"), [2, 5]);
    assert_eq!(rt("{transform: negative_sample, drop_rate: 0.0, label_index: 1}"), [1, 2, 3, 4, 5]);
    assert_eq!(rt("{transform: negative_sample, drop_rate: 1.0}"), [1, 2, 3, 4, 5], "label 0 is positive");
    let per_action = "{transform: negative_sample, drop_rate: 1.0, label_index: 1, action_priority: \"1,2\", per_action_drop_rate: \"1:0.0,2:1.0\"}";
    assert_eq!(rt(per_action), [1, 2, 5]);
}

/// negative_sample with only one of action_priority and
/// per_action_drop_rate (or one empty) runs as Monolith runs it: the wrapper
/// passes the kernel neither unless both are given (feature_utils.py line
/// 548, `if action_priority and per_action_drop_rate:`), so no action
/// picks a rate (`enable_drop_by_action_` stays false,
/// variant_filter_kernel.cc 408-410) and every negative is dropped at
/// drop_rate, rows 1 and 3 whose action 1 the ignored rates would keep too.
#[test]
fn negative_sample_without_both_action_keys_drops_at_drop_rate() {
    let features = format!("{RT}  - {{name: label, kind: label, shape: [2]}}\n");
    let rows = "    - {line_id: {req_time: 1, actions: [1]}, label: [1.0, -1.0]}
    - {line_id: {req_time: 2, actions: [1]}, label: [1.0, 0.0]}
    - {line_id: {req_time: 3, actions: [2, 1]}, label: [1.0, -1.0]}
    - {line_id: {req_time: 4}, label: [1.0, -1.0]}
";
    let rt = |t: &str| after(&features, t, rows).tensor("rt").unwrap().i64s();
    let base = "transform: negative_sample, label_index: 1";
    for only in [
        "action_priority: \"1,2\"",
        "per_action_drop_rate: \"1:0.0,2:0.0\"",
        "action_priority: \"1,2\", per_action_drop_rate: \"\"",
        "action_priority: \"\", per_action_drop_rate: \"1:0.0\"",
    ] {
        assert_eq!(rt(&format!("{{{base}, drop_rate: 1.0, {only}}}")), [2], "{only}");
        assert_eq!(rt(&format!("{{{base}, drop_rate: 0.0, {only}}}")), [1, 2, 3, 4], "{only}");
    }
    let both = format!("{{{base}, drop_rate: 1.0, action_priority: \"1,2\", per_action_drop_rate: \"1:0.0\"}}");
    assert_eq!(rt(&both), [1, 2, 3], "with both, action 1's rate 0 keeps rows 1 and 3");
}

/// negative_sample at drop_rate 0.5 over 1000 negatives keeps
/// Binomial(1000, 0.5) of them (the draw is in steps of 1/1000, line 428):
/// mean 500, sd 15.8; the bound is 5 sd.
#[test]
fn negative_sample_keeps_about_one_minus_the_drop_rate() {
    let rows: String = (0..1000).map(|i| format!("    - {{line_id: {{req_time: {i}}}, label: [-1.0]}}\n")).collect();
    let kept = after(RT, "{transform: negative_sample, drop_rate: 0.5, seed: 9}", &rows).tensor("rt").unwrap().i64s();
    assert!((421..=579).contains(&kept.len()), "{}", kept.len());
}

/// filter_by_feature_value (value_filter_by_feature.cc,
/// `IsInstanceOfInterest`, lines 178-416): the feature's single value is
/// compared as relational_utils.h compares (between is [lo, hi)); set ops
/// read an int64 list whole; a row without the feature, with another list
/// type, or with a list of several values, is kept only by keep_empty.
#[test]
fn filter_by_feature_value_compares_one_feature_value() {
    let rows = "    - {line_id: {req_time: 1}, features: {price: {float_list: [1.5]}, tags: {int64_list: [1, 2]}, name: {bytes_list: [abc]}}}
    - {line_id: {req_time: 2}, features: {price: {float_list: [3.0]}, tags: {int64_list: [3]}, name: {bytes_list: [xbc]}}}
    - {line_id: {req_time: 3}, features: {price: {float_list: [1.0, 2.0]}, tags: {int64_list: []}}}
    - {line_id: {req_time: 4}, features: {price: {double_list: [2.0]}}}
    - {line_id: {req_time: 5}}
";
    let rt =
        |t: &str| after(RT, &format!("{{transform: filter_by_feature_value, {t}}}"), rows).tensor("rt").unwrap().i64s();
    assert_eq!(rt("field: price, type: float, op: ge, operand: 1.5"), [1, 2]);
    assert_eq!(rt("field: price, type: float, op: between, operand: [1.0, 3.0]"), [1]);
    assert_eq!(rt("field: price, type: float, op: lt, operand: 2.0, keep_empty: true"), [1, 3, 4, 5]);
    assert_eq!(rt("field: price, type: double, op: eq, operand: 2.0"), [4]);
    assert_eq!(rt("field: tags, type: int64, op: any, operand: [2, 3]"), [1, 2]);
    assert_eq!(rt("field: tags, type: int64, op: all, operand: [1, 2]"), [1]);
    assert_eq!(rt("field: tags, type: int64, op: eq, operand: 3"), [2]);
    assert_eq!(rt("field: tags, type: int64, op: diff, operand: [9], keep_empty: true"), [1, 2, 3, 4, 5]);
    assert_eq!(rt("field: name, type: bytes, op: endswith, operand: bc"), [1, 2]);
    assert_eq!(rt("field: name, type: bytes, op: in, operand: [xbc]"), [2]);
}

const LABEL5: &str = "  - {name: label, kind: label, shape: [5]}\n";

/// scatter_label's docstring (feature_utils.py, lines 401-410) and kernel
/// (scatter_label_kernel.cc, lines 88-104): config "100:3,200:1,300:4" is
/// 5 tasks; the first label moves to the chnid's index, every other label
/// is INVALID_LABEL, all of them for another chnid.
#[test]
fn scatter_label_follows_the_docstring() {
    let rows = "    - {line_id: {chnid: 100}, label: [0.7, 9.0]}
    - {line_id: {chnid: 200}, label: [1.0]}
    - {line_id: {chnid: 400}, label: [1.0]}
    - {line_id: {chnid: 300}}
";
    let out = after(LABEL5, "{transform: scatter_label, config: \"100:3,200:1,300:4\"}", rows);
    let i = INVALID;
    #[rustfmt::skip]
    assert_eq!(out.tensor("label").unwrap().f32s(), [
        i, i, i, 0.7, i,
        i, 1.0, i, i, i,
        i, i, i, i, i,
        i, i, i, i, i,
    ]);
}

const LABEL2: &str = "  - {name: label, kind: label, shape: [2]}\n";

/// label_upper_bound (label_upper_bound_kernel.cc, lines 68-81): label i
/// above bound i becomes the bound; a row with fewer labels than bounds is
/// left as it is. label_normalization (label_normalization_kernel.cc,
/// lines 73-102) runs each label through every method in order.
#[test]
fn label_upper_bound_and_normalization_rewrite_labels() {
    let rows = "    - {label: [3.0, 0.25]}\n    - {label: [7.0]}\n";
    let out = after(LABEL2, "{transform: label_upper_bound, label_upper_bounds: [1.0, 0.5]}", rows);
    assert_eq!(out.tensor("label").unwrap().f32s(), [1.0, 0.25, 7.0, 0.0]);
    let norm = |methods: &str, values: &str, label: &str| {
        let t = format!("{{transform: label_normalization, norm_methods: {methods}, norm_values: {values}}}");
        after(LABEL2, &t, &format!("    - {{label: {label}}}\n")).tensor("label").unwrap().f32s()
    };
    // scale by 2, then log(x + 1): 2 -> 1 -> ln 2.
    assert_eq!(norm("[scale, log]", "[2.0, 1.0]", "[2.0, 7.0]"), [(2.0f64).ln() as f32, (4.5f64).ln() as f32]);
    assert_eq!(norm("[scale2int]", "[2.0]", "[7.0, -7.0]"), [3.0, -3.0]);
    assert_eq!(norm("[repow]", "[2.0]", "[3.0, -1.0]"), [9.0, 0.0]);
    assert_eq!(norm("[pow]", "[2.0]", "[2.0, -1.0]"), [9.0, 0.0]);
    assert_eq!(norm("[scalelog]", "[2.0]", "[2.0, -6.0]"), [(2.0f64).ln() as f32, f32::NEG_INFINITY]);
}

/// use_field_as_label as feature_utils_test.py (lines 529-567) shows it,
/// and its kernel (use_field_as_label_kernel.cc, lines 78-88, cited from
/// the copy in 0x1997/monolith at 292b556: bytedance/monolith's published
/// tree lacks the file): every label becomes
/// max(label, value of the field), the value counting 0 when
/// overwrite_invalid_value and value >= label_threshold. With labels [0,
/// 0.5] and sample_rate 1: threshold 1.1 gives [1, 1], 0.9 gives [0, 0.5].
#[test]
fn use_field_as_label_follows_the_monolith_test() {
    let rows = "    - {line_id: {sample_rate: 1.0}, label: [0.0, 0.5]}\n    - {label: [2.0, 0.5]}\n";
    let labels = |extra: &str| {
        let t = format!("{{transform: use_field_as_label, field: sample_rate{extra}}}");
        after(LABEL2, &t, rows).tensor("label").unwrap().f32s()
    };
    // The second row has no sample_rate: its default, 1.0.
    assert_eq!(labels(""), [1.0, 1.0, 2.0, 1.0]);
    assert_eq!(labels(", overwrite_invalid_value: true, label_threshold: 1.1"), [1.0, 1.0, 2.0, 1.0]);
    assert_eq!(labels(", overwrite_invalid_value: true, label_threshold: 0.9"), [0.0, 0.5, 2.0, 0.5]);
}

/// add_action (add_action_kernel.cc, lines 94-169): when the LineId field
/// passes the comparison, the action is appended to LineId.actions (the
/// field's default when absent: req_time 0).
#[test]
fn add_action_appends_an_action_when_the_field_passes() {
    let features = "  - {name: acts, kind: line_id, field: actions, shape: [3]}\n";
    let rows = "    - {line_id: {req_time: 100, actions: [1]}}
    - {line_id: {req_time: 50, actions: [1]}}
    - {line_id: {req_id: abc}}
";
    let acts =
        |t: &str| after(features, &format!("{{transform: add_action, {t}}}"), rows).tensor("acts").unwrap().i64s();
    assert_eq!(acts("field: req_time, op: ge, operand: 100, action: 9"), [1, 9, 0, 1, 0, 0, 0, 0, 0]);
    assert_eq!(acts("field: req_time, op: in, operand: [0, 50], action: -2"), [1, 0, 0, 1, -2, 0, -2, 0, 0]);
    assert_eq!(acts("field: req_id, op: eq, operand: abc, action: 4"), [1, 0, 0, 1, 0, 0, 4, 0, 0]);
}

/// multi_label_gen (multi_label_gen_kernel.cc, lines 101-131): the label
/// value is pos_label / neg_label by the most prior action
/// (`FindMostPriorAction`, 158-179), else INVALID_LABEL; the row gets
/// task_num labels, all INVALID_LABEL but the one its head value names
/// (chnid in decimal, 183-184); use_origin_label takes the first label.
#[test]
fn multi_label_gen_puts_one_label_at_the_heads_index() {
    let rows = "    - {line_id: {chnid: 100, actions: [1]}, label: [0.3]}
    - {line_id: {chnid: 200, actions: [1, 2]}}
    - {line_id: {chnid: 100, actions: [5]}}
    - {line_id: {chnid: 300, actions: [1]}}
";
    let labels = |t: &str| {
        let features = "  - {name: label, kind: label, shape: [3]}\n";
        let t = format!("{{transform: multi_label_gen, head_to_index: {{100: 0, 200: 2}}, {t}}}");
        after(features, &t, rows).tensor("label").unwrap().f32s()
    };
    let i = INVALID;
    #[rustfmt::skip]
    assert_eq!(labels("pos_actions: [1], neg_actions: [2], action_priority: \"2,1\""), [
        1.0, i, i,
        i, i, 0.0,
        i, i, i,
        i, i, i,
    ]);
    #[rustfmt::skip]
    assert_eq!(labels("use_origin_label: true"), [
        0.3, i, i,
        i, i, i,
        i, i, i,
        i, i, i,
    ]);
}

/// instance_reweight (instance_reweight_dataset_kernel.cc, `CalReplicas`,
/// lines 152-263) with action_priority "3,2,7,1" and reweight
/// "1:0:1,2:3:-1,7:6:1,3:2:1": a row without actions or pre_actions is
/// written once; a row whose most prior action outranks its pre_actions'
/// is written count(actions) times (1 times the weight of its most prior
/// action and of each unlisted one) and relabelled; with pre_actions of the
/// other label, count(pre) + count(cur) times; of the same label,
/// |count(pre) - count(cur)| times, negated when pre wins; a row whose
/// pre_actions outrank its actions, or without labels, is dropped.
#[test]
fn instance_reweight_repeats_and_relabels_as_cal_replicas() {
    let features = format!("{RT}  - {{name: label, kind: label, shape: [1]}}\n");
    let rows = "    - {line_id: {req_time: 1}, label: [0.5]}
    - {line_id: {req_time: 2, actions: [2]}, label: [1.0]}
    - {line_id: {req_time: 3, actions: [1]}, label: [1.0]}
    - {line_id: {req_time: 4, actions: [7, 5]}, label: [0.0]}
    - {line_id: {req_time: 5, pre_actions: [2], actions: [7]}, label: [1.0]}
    - {line_id: {req_time: 6, pre_actions: [7], actions: [2]}, label: [1.0]}
    - {line_id: {req_time: 7, pre_actions: [1], actions: [7]}, label: [0.0]}
    - {line_id: {req_time: 8, pre_actions: [7], actions: [3]}, label: [0.0]}
    - {line_id: {req_time: 9, actions: [5]}, label: [0.5]}
    - {line_id: {req_time: 10, actions: [2]}}
";
    let p = plan(
        &features,
        "    - {transform: instance_reweight, action_priority: \"3,2,7,1\", reweight: \"1:0:1,2:3:-1,7:6:1,3:2:1\"}\n",
    );
    let mut t = Transforms::new(&p);
    let out = run(&p, &[examples(rows)], &mut t).remove(0);
    let expected: Vec<(i64, f32)> =
        [(1, 1, 0.5), (2, 3, -1.0), (4, 6, 1.0), (6, 9, -1.0), (7, 6, 1.0), (8, 4, -1.0), (9, 1, 0.5)]
            .iter()
            .flat_map(|&(rt, n, label)| std::iter::repeat_n((rt, label), n))
            .collect();
    let found: Vec<(i64, f32)> =
        out.tensor("rt").unwrap().i64s().into_iter().zip(out.tensor("label").unwrap().f32s()).collect();
    assert_eq!(found, expected);
    assert_eq!(t.counts()[0], TransformCount { name: "instance_reweight", dropped: 3, generated: 23 });
}

/// switch_slot_batch (ragged_feature_kernel.cc, `SwitchSlotBatchOp`, lines
/// 169-276): in place, a fid list's fids take the new slot (v2: slot << 48,
/// v1: slot << 54, the fid's low bits kept; reader_util.h 50-56);
/// otherwise `<name>_<suffix>` is added with the switched fids, the
/// feature left as it is. Both for Examples and ExampleBatch rows.
#[test]
fn switch_slot_batch_moves_fids_to_a_new_slot() {
    let features =
        "  - {name: f_a, kind: sparse}\n  - {name: f_b, kind: sparse}\n  - {name: f_b_share, kind: sparse}\n";
    let p = plan(features, "    - {transform: switch_slot_batch, features: {f_a: [true, 5], f_b: [false, 7]}}\n");
    let (a, b) = ((1u64 << 48) | 70, (2u64 << 54) | 90);
    let rows = examples(&format!(
        "    - {{features: {{f_a: {{fid_v2_list: [{a}, 71]}}, f_b: {{fid_v1_list: [{b}]}}}}}}\n    - {{features: {{f_a: {{fid_v2_list: []}}}}}}\n"
    ));
    let out = run(&p, &[rows], &mut Transforms::new(&p)).remove(0);
    assert_eq!(ids(&out, "f_a"), [vec![(5 << 48) | 70, (5 << 48) | 71], vec![]]);
    // A sparse output gives v1 fids as v2 (slot << 48): f_b_share's v1 slot is 7.
    assert_eq!(ids(&out, "f_b"), [vec![(2 << 48) | 90], vec![]]);
    assert_eq!(ids(&out, "f_b_share"), [vec![(7 << 48) | 90], vec![]]);
    let second = batch(&format!(
        "batch_size: 2
lists:
  - {{name: f_a, features: [{{fid_v2_list: [{a}]}}, {{fid_v2_list: [72]}}]}}
  - {{name: f_b, type: SHARED, features: [{{fid_v2_list: [3]}}]}}
"
    ));
    let out = run_one(&p, Input::Batch(&second), &mut Transforms::new(&p));
    assert_eq!(ids(&out, "f_a"), [[(5 << 48) | 70], [(5 << 48) | 72]]);
    assert_eq!(ids(&out, "f_b_share"), [[(7 << 48) | 3], [(7 << 48) | 3]]);
}

/// Indexes one input, applies the transforms, writes the rows.
fn run_one(plan: &Plan, input: Input<'_>, t: &mut Transforms) -> Extracted {
    let mut ex = Extractor::new();
    let mut rows = ex.index(plan, input, None).unwrap();
    t.apply(&mut rows).unwrap();
    let mut out = Extracted::default();
    ex.write(plan, &rows, Policy::default(), &mut out).unwrap();
    out
}

const NEG_FEATURES: &str = "  - {name: f_user_id, kind: sparse}
  - {name: f_goods_id, kind: sparse}
  - {name: label, kind: label, shape: [1]}
  - {name: w, kind: instance_weight}
  - {name: gid, kind: line_id, field: item_id}
  - {name: acts, kind: line_id, field: actions, shape: [1]}
";

/// negative_gen as negative_gen_dataset_kernel.cc and its pool
/// (kernels/internal/cache_mgr.cc) do it, on negative_gen_test.py's setup
/// (lines 58-70: per_channel on a channel feature, goods features as item
/// features, cache_only_pos): every cacheable row's item joins its
/// channel's pool (`SaveToCache`, lines 404-453) unless already there; a
/// pool of no more than start_num items gives no negatives
/// (`RandomSelectOne`, cache_mgr.cc line 123); past max_item_num the oldest
/// item leaves (`Push`, line 95);
/// each positive is preceded by neg_num negatives (`GetNext`, lines
/// 177-235): its own features with a pooled item's, label[label_index] =
/// negative_label, LineId item_id = the item's, actions = [negative_action]
/// (`SetLabelAndLineId`, lines 455-470). The pool outlives each input.
#[test]
fn negative_gen_pools_items_per_channel_with_start_num_and_fifo_eviction() {
    let p = plan(
        NEG_FEATURES,
        "    - {transform: negative_gen, neg_num: 2, per_channel: true, channel_feature: f_spm_1, item_features: [f_goods_id], start_num: 1, max_item_num: 2, negative_action: 9, cache_only_pos: true, sampled_neg_instance_weight: 0.5, seed: 3}\n",
    );
    let mut t = Transforms::new(&p);
    let example = |user: u64, goods: u64, spm: u64, label: f32, action: u64| {
        format!(
            "    - {{features: {{f_user_id: {{fid_v2_list: [{user}]}}, f_goods_id: {{fid_v2_list: [{goods}]}}, f_spm_1: {{fid_v2_list: [{spm}]}}}}, line_id: {{item_id: {goods}, actions: [{action}]}}, label: [{label:?}]}}\n"
        )
    };
    let first = examples(&[example(1, 10, 1, 1.0, 1), example(2, 11, 1, 1.0, 2), example(3, 20, 2, 1.0, 1)].concat());
    let slices: Vec<&[u8]> = first.iter().map(Vec::as_slice).collect();
    let a = run_one(&p, Input::Examples(&slices), &mut t);
    drop(first);
    assert_eq!(ids(&a, "f_user_id"), [[1], [2], [2], [2], [3]]);
    let goods = ids(&a, "f_goods_id");
    assert_eq!((goods[0][0], goods[3][0], goods[4][0]), (10, 11, 20));
    assert!([&goods[1], &goods[2]].iter().all(|g| g[0] == 10 || g[0] == 11), "{goods:?}");
    // A negative's LineId names the item it took.
    let gid = a.tensor("gid").unwrap().u64s();
    assert_eq!(gid, goods.iter().map(|g| g[0]).collect::<Vec<_>>());
    assert_eq!(a.tensor("label").unwrap().f32s(), [1.0, -1.0, -1.0, 1.0, 1.0]);
    assert_eq!(a.tensor("acts").unwrap().i64s(), [1, 9, 9, 2, 1]);
    assert_eq!(a.tensor("w").unwrap().f32s(), [1.0, 0.5, 0.5, 1.0, 1.0]);
    assert_eq!((t.item_pool(1), t.item_pool(2)), (vec![10, 11], vec![20]));

    // The second input is an ExampleBatch, split into rows as Monolith does:
    // a real negative (not cached: cache_only_pos), then a positive whose
    // item evicts the oldest of channel 1.
    let second = batch(
        "batch_size: 2
lists:
  - {name: f_user_id, features: [{fid_v2_list: [4]}, {fid_v2_list: [5]}]}
  - {name: f_goods_id, features: [{fid_v2_list: [12]}, {fid_v2_list: [13]}]}
  - {name: f_spm_1, type: SHARED, features: [{fid_v2_list: [1]}]}
  - {name: __LABEL__, features: [{float_list: [-1.0]}, {float_list: [1.0]}]}
  - {name: __LINE_ID__, features: [{line_id: {item_id: 12, actions: [3]}}, {line_id: {item_id: 13, actions: [1]}}]}
",
    );
    let b = run_one(&p, Input::Batch(&second), &mut t);
    assert_eq!(t.item_pool(1), [11, 13], "10 left first; 12 was never cached");
    assert_eq!(ids(&b, "f_user_id"), [[4], [5], [5], [5]]);
    let goods = ids(&b, "f_goods_id");
    assert_eq!((goods[0][0], goods[3][0]), (12, 13));
    assert!([&goods[1], &goods[2]].iter().all(|g| g[0] == 11 || g[0] == 13), "{goods:?}");
    assert_eq!(b.tensor("label").unwrap().f32s(), [-1.0, -1.0, -1.0, 1.0]);
    assert_eq!(b.tensor("acts").unwrap().i64s(), [3, 9, 9, 1]);
    assert_eq!(b.tensor("w").unwrap().f32s(), [1.0, 0.5, 0.5, 1.0]);
    let counts = t.counts();
    assert_eq!(counts, [TransformCount { name: "negative_gen", dropped: 0, generated: 4 }]);
}

/// throw_origin_neg drops real negatives (`Emitable`, kernel line 334);
/// without sampled_neg_instance_weight and with unbias_sampled_neg (the
/// default) a negative weighs 1 + neg_num * time_factor^decay *
/// freq_factor (`BuildNegativeTensor`, lines 492-503), where freq_factor is
/// 1 / times the item was drawn and time_factor its queue position / size.
#[test]
fn negative_gen_weights_and_throws_as_the_kernel() {
    let p = plan(
        NEG_FEATURES,
        "    - {transform: negative_gen, neg_num: 1, item_features: [f_goods_id], start_num: 0, throw_origin_neg: true}\n",
    );
    let mut t = Transforms::new(&p);
    let rows = examples(
        "    - {features: {f_goods_id: {fid_v2_list: [10]}}, line_id: {item_id: 10}, label: [1.0]}
    - {features: {f_goods_id: {fid_v2_list: [11]}}, line_id: {item_id: 11}, label: [0.0]}
",
    );
    let slices: Vec<&[u8]> = rows.iter().map(Vec::as_slice).collect();
    let out = run_one(&p, Input::Examples(&slices), &mut t);
    // The positive's one negative can only take item 10 (the pool's one
    // item, drawn once, at position 1 of 1): 1 + 1 * 1 * 1 = 2.
    assert_eq!(ids(&out, "f_goods_id"), [[10], [10]]);
    assert_eq!(out.tensor("w").unwrap().f32s(), [2.0, 1.0]);
    assert_eq!(out.tensor("label").unwrap().f32s(), [-1.0, 1.0]);
    assert_eq!(t.counts()[0], TransformCount { name: "negative_gen", dropped: 1, generated: 1 });
    // Without per_channel every item is in the default channel, 3.
    assert_eq!(t.item_pool(3), [10, 11]);
}

/// Inputs for the item pool tests: 6 inputs of 4 Examples over two
/// channels, positives and negatives, items that repeat.
fn pool_inputs() -> Vec<Vec<Vec<u8>>> {
    (0..6u64)
        .map(|input| {
            let text: String = (0..4u64)
                .map(|i| {
                    let n = input * 4 + i;
                    let (goods, spm, label) = (10 + n % 7, 1 + n % 2, if n % 3 == 0 { 0.0 } else { 1.0 });
                    format!(
                        "    - {{features: {{f_user_id: {{fid_v2_list: [{n}]}}, f_goods_id: {{fid_v2_list: [{goods}]}}, f_spm_1: {{fid_v2_list: [{spm}]}}}}, line_id: {{item_id: {goods}, actions: [1]}}, label: [{label:?}]}}\n"
                    )
                })
                .collect();
            examples(&text)
        })
        .collect()
}

const POOLED: &str = "    - {transform: negative_gen, neg_num: 2, per_channel: true, channel_feature: f_spm_1, item_features: [f_goods_id], start_num: 1, max_item_num: 3, easy_hard_ratio: 0.3, seed: 11}\n";

/// Item pool save and restore (Monolith's ItemPoolSave / ItemPoolRestore,
/// item_pool_kernels.cc lines 357-500, which a checkpoint hook runs between
/// sessions): a run split in two, the second half restoring what the
/// first saved, writes what the run in one piece writes, negatives,
/// weights (which read each item's queue position and draw count) and
/// all.
#[test]
fn negative_gen_item_pool_saved_and_restored_continues_the_run() {
    let p = plan(NEG_FEATURES, POOLED);
    let inputs = pool_inputs();
    let whole = run(&p, &inputs, &mut Transforms::new(&p));
    let mut first = Transforms::new(&p);
    let mut split = run(&p, &inputs[..3], &mut first);
    let saved = first.save_item_pool().expect("negative_gen has a pool");
    let mut second = Transforms::new(&p);
    second.restore_item_pool(&saved).unwrap();
    assert_eq!((second.item_pool(1), second.item_pool(2)), (first.item_pool(1), first.item_pool(2)));
    split.extend(run(&p, &inputs[3..], &mut second));
    assert_eq!(split, whole);
    // Without the restore the second half differs: its pool starts empty.
    let fresh = run(&p, &inputs[3..], &mut Transforms::new(&p));
    assert_ne!(fresh, whole[3..]);
}

/// A pool file that is damaged, cut short, of another version or saved
/// under other pool keys is a clear error, never a panic; a model without
/// negative_gen has no pool.
#[test]
fn a_damaged_or_foreign_item_pool_file_is_a_clear_error() {
    use fex::samples::ItemPoolError;
    let p = plan(NEG_FEATURES, POOLED);
    let mut t = Transforms::new(&p);
    run(&p, &pool_inputs(), &mut t);
    let saved = t.save_item_pool().unwrap();
    let restore = |bytes: &[u8]| Transforms::new(&p).restore_item_pool(bytes);
    assert_eq!(restore(&saved), Ok(()));
    for end in 0..saved.len() {
        assert!(restore(&saved[..end]).is_err(), "a file cut at {end} bytes");
    }
    let mut flipped = saved.clone();
    flipped[40] ^= 1;
    assert_eq!(restore(&flipped), Err(ItemPoolError::Checksum));
    assert_eq!(restore(b"PAR1 not a pool"), Err(ItemPoolError::NotAPool));
    let mut v2 = saved.clone();
    v2[8] = 2;
    assert_eq!(restore(&v2).unwrap_err().to_string(), "item pool file version 2; this fex reads version 1");
    let other = plan(NEG_FEATURES, &POOLED.replace("max_item_num: 3", "max_item_num: 4"));
    let err = Transforms::new(&other).restore_item_pool(&saved).unwrap_err();
    assert!(matches!(err, ItemPoolError::Mismatch { .. }), "{err}");
    assert!(err.to_string().contains("max_item_num 3; this model's has item_features [\"f_goods_id\"], per_channel true, channel_feature \"f_spm_1\", index_feature \"\", max_item_num 4"), "{err}");
    let none = plan(FIDS, "    - {transform: shuffle, buffer_size: 2}\n");
    assert_eq!(Transforms::new(&none).save_item_pool(), None);
    assert_eq!(Transforms::new(&none).restore_item_pool(&saved), Err(ItemPoolError::NoNegativeGen));
}

/// Issue 21: Monolith registers negative_gen with `neg_num: int >= 1`
/// (monolith/native_training/data/ops/pb_dataset_ops.cc line 82), so a
/// config asking for no negatives is refused with its path.
#[test]
fn negative_gen_needs_at_least_one_negative() {
    for (neg_num, expected) in [
        ("neg_num: 0, ", "offline.transforms[0].neg_num: found 0, must be at least 1"),
        ("", "offline.transforms[0].neg_num: missing; give a count of at least 1"),
    ] {
        let text = format!(
            "name: t\nfeatures:\n  - {{name: item, kind: sparse}}\noffline:\n  transforms:\n    - {{transform: negative_gen, {neg_num}item_features: [item]}}\n"
        );
        let err = Plan::from_yaml(&text).unwrap_err();
        let lines: Vec<String> = err.0.iter().map(ToString::to_string).collect();
        assert_eq!(lines, [expected]);
    }
}

/// shuffle and batch across inputs (datasets.py's shuffle(buffer_size,
/// seed) and batch(batch_size, drop_remainder)): rows made owned outlive
/// their input; the same seed gives the same order.
#[test]
fn shuffle_and_batch_reorder_rows_across_inputs() {
    let order = |transforms: &str| -> (Vec<Vec<u64>>, Vec<TransformCount>) {
        let p = plan(FIDS, transforms);
        let t = Transforms::new(&p);
        let mut ex = Extractor::new();
        let mut batches = Vec::new();
        for input in 0..3u64 {
            let text: String = (0..3)
                .map(|i| format!("    - {{features: {{item: {{fid_v2_list: [{}]}}}}}}\n", input * 3 + i))
                .collect();
            let owners: Vec<bytes::Bytes> = examples(&text).into_iter().map(bytes::Bytes::from).collect();
            let slices: Vec<&[u8]> = owners.iter().map(|b| &b[..]).collect();
            let mut rows = ex.index(&p, Input::Examples(&slices), None).unwrap();
            t.apply(&mut rows).unwrap();
            let owned = rows.into_owned(&owners);
            batches.extend(t.release(owned));
        }
        batches.extend(t.finish());
        let flat = batches
            .iter()
            .map(|rows| {
                let mut out = Extracted::default();
                ex.write(&p, rows, Policy::default(), &mut out).unwrap();
                ids(&out, "item").into_iter().map(|r| r[0]).collect()
            })
            .collect();
        (flat, t.counts())
    };
    let (plain, _) = order("    - {transform: batch, batch_size: 4}\n");
    assert_eq!(plain, [vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8]]);
    let shuffled = "    - {transform: shuffle, buffer_size: 3, seed: 5}\n    - {transform: batch, batch_size: 4, drop_remainder: true}\n";
    let (a, counts) = order(shuffled);
    assert_eq!(a.iter().map(Vec::len).collect::<Vec<_>>(), [4, 4]);
    let mut seen: Vec<u64> = a.concat();
    assert_ne!(seen, (0..8).collect::<Vec<_>>(), "shuffled");
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 8, "no row twice");
    assert_eq!(counts[1], TransformCount { name: "batch", dropped: 1, generated: 0 });
    assert_eq!(order(shuffled).0, a, "a seed fixes the order");
}

/// The `offline:` section's errors, every one with its path, in the config
/// style: unknown keys name the allowed ones; values are checked as
/// Monolith's wrappers check them.
#[test]
fn offline_config_errors_are_reported_together_with_paths() {
    let text = "name: t
features:
  - {name: item, kind: sparse}
offline:
  transform: []
  transforms:
    - {transform: filter_by_fids, has_fid: [1], select_slots: [0]}
    - {transform: filter_by_value, field: actions, op: gt, operand: 3}
    - {transform: filter_by_value, field: req_time, op: between, operand: [1]}
    - {transform: filter_by_value, field: nope, op: eq, operand: 1}
    - {transform: filter_by_label}
    - {transform: add_label, config: \"1:1:0.5\", negative_value: 0.0, new_sample_rate: 0.0}
    - {transform: add_label, config: \"1:2\", negative_value: 0.0, new_sample_rate: 1.0}
    - {transform: batch, batch_size: 0}
    - {transform: negative_gen, neg_num: 1, per_channel: true}
    - {transform: filter_by_vals}
    - 7
";
    let err = Plan::from_yaml(text).unwrap_err();
    let lines: Vec<String> = err.0.iter().map(ToString::to_string).collect();
    expect_test::expect![[r#"
        offline: unknown key "transform"; allowed: transforms
        offline.transforms[0]: unknown key "has_fid" for transform filter_by_fids; allowed: transform, filter_fids, has_fids, select_fids, has_actions, req_time_min, select_slots
        offline.transforms[9].transform: unknown transform "filter_by_vals", expected one of filter_by_fids, filter_by_value, filter_by_feature_value, filter_by_label, special_strategy, negative_sample, add_label, add_action, scatter_label, multi_label_gen, label_upper_bound, label_normalization, use_field_as_label, instance_reweight, switch_slot_batch, negative_gen, shuffle, batch
        offline.transforms[10]: found no mapping; a transform is {transform: <name>, ...}
        offline.transforms[0].select_slots: found slot 0, slots are 1..=32767
        offline.transforms[1].op: repeated fields take all, any or diff
        offline.transforms[2].operand: found 1 values; between takes [low, high)
        offline.transforms[3].field: unknown LineId field "nope"; use one of uid, req_time, item_id, req_id, actions, chnid, generate_time, emit_type, pre_actions, model_names, sample_rate, special_strategies, device_type, cid, user_id, is_draw, rank, data_source_name or a number with type
        offline.transforms[4].label_threshold: missing or empty; give one threshold per label
        offline.transforms[5].config: task 1: action 1 is both positive and negative
        offline.transforms[5].new_sample_rate: found 0, allowed (0, 1]
        offline.transforms[6].config: task 1 "1:2" has 2 parts; write pos_actions:neg_actions:sample_rate
        offline.transforms[7].batch_size: found 0, must be at least 1
        offline.transforms[8].channel_feature: missing; per_channel pools items by this feature's first fid
        offline.transforms[8]: negative_gen after batch; row transforms come before shuffle and batch"#]]
    .assert_eq(&lines.join("\n"));
}

/// The added transforms' parameters, checked as Monolith's wrappers
/// (feature_utils.py, datasets.py) and kernels check them, every error
/// with its path; split_flow and merge_flow are refused with the reason.
#[test]
fn row_transform_config_errors_name_path_and_rule() {
    let text = "name: t
features:
  - {name: item, kind: sparse}
offline:
  transforms:
    - {transform: special_strategy, strategy_list: [], strategy_conf: \"1:0.5:1,2:0.5\"}
    - {transform: special_strategy, strategy_list: [1], strategy_conf: \"1:1.5\"}
    - {transform: negative_sample, drop_rate: 2.0}
    - {transform: negative_sample, drop_rate: 0.5, action_priority: \"1,x\"}
    - {transform: filter_by_feature_value, field: f, type: float, op: any, operand: [1]}
    - {transform: filter_by_feature_value, field: f, type: int32, op: eq, operand: 1}
    - {transform: scatter_label, config: \"100:x\"}
    - {transform: label_upper_bound, label_upper_bounds: []}
    - {transform: label_normalization, norm_methods: [log, sqrt], norm_values: [1.0]}
    - {transform: use_field_as_label, field: req_id}
    - {transform: add_action, field: actions, op: not-in, operand: [1], action: 3}
    - {transform: add_action, field: req_time, op: eq, operand: 1}
    - {transform: multi_label_gen, head_to_index: {a: 2}, head_field: req_time, task_num: 2}
    - {transform: multi_label_gen, head_to_index: {1: 0}, use_origin_label: true, pos_actions: [1]}
    - {transform: instance_reweight, action_priority: \"1,2\", reweight: \"1:-1:1,2:3\"}
    - {transform: instance_reweight, reweight: \"1:1:1\"}
    - {transform: switch_slot_batch, features: {f_a: [true, 32768], f_b: 5, f_c: [false, -1], f_d: [true, 0]}}
    - {transform: split_flow, data_flow: [a, b], index: 0}
    - {transform: use_field_as_label, field_name: sample_rate}
    - {transform: filter_by_feature_value, field: f, type: double, op: in, operand_file: f.pb}
";
    let err = Plan::from_yaml(text).unwrap_err();
    let lines: Vec<String> = err.0.iter().map(ToString::to_string).collect();
    expect_test::expect![[r#"
        offline.transforms[17].transform: split_flow splits a tf.data graph into flows and merges them; fex's offline transforms are one chain, so there is nothing to split or merge (see the book, Offline transforms)
        offline.transforms[18]: unknown key "field_name" for transform use_field_as_label; allowed: transform, field, type, overwrite_invalid_value, label_threshold
        offline.transforms[0].strategy_list: missing or empty; the special strategies to look for
        offline.transforms[0].strategy_conf: give a label for every strategy or for none
        offline.transforms[1].strategy_conf: "1:1.5": sample rate 1.5 is outside [0, 1]
        offline.transforms[2].drop_rate: found 2, allowed [0, 1]
        offline.transforms[3].action_priority: "x" is not an action (an integer)
        offline.transforms[4].op: all, any and diff are for int64 features
        offline.transforms[5].type: found "int32"; the feature's value type: int64, float, double or bytes
        offline.transforms[6].config: "100:x" is not chnid:index; write "100:3,200:1,300:4"
        offline.transforms[7].label_upper_bounds: missing or empty; give one bound per label
        offline.transforms[8].norm_values: found 1 values for 2 methods; give one per method
        offline.transforms[8].norm_methods: unknown method "sqrt", expected one of log, scale, scale2int, pow, repow, scalelog
        offline.transforms[9].field: found type string; the label comes from a singular number field
        offline.transforms[10].op: unknown op "not-in", expected one of gt, ge, eq, lt, le, neq, between, in
        offline.transforms[11].action: missing; the action appended to LineId.actions
        offline.transforms[12].head_field: found type int64; the head field is chnid or a string field
        offline.transforms[12].task_num: found 2, must be above the largest index 2
        offline.transforms[12].pos_actions: missing or empty; the actions that make a positive
        offline.transforms[13].use_origin_label: takes the first label; give no pos_actions or neg_actions
        offline.transforms[14].reweight: "1:-1:1": weight -1 must be 0 or more
        offline.transforms[15].action_priority: missing; actions by priority, highest first ("2,7,0")
        offline.transforms[16].features: f_a: found slot 32768, slots are 0..=32767: a v2 fid holds 15 bits of slot, and Monolith would write the rest into the fid's sign bit or lose it, a fid of another slot
        offline.transforms[16].features: f_b: expected [inplace, slot], as [true, 5]
        offline.transforms[16].features: f_c: found slot -1, slots are 0..=32767: a v2 fid holds 15 bits of slot, and Monolith would write the rest into the fid's sign bit or lose it, a fid of another slot
        offline.transforms[18].field: missing; name a LineId field or give its number and type
        offline.transforms[19].operand_file: a FilterValues file holds no operands for a double feature (Monolith aborts: its float_list is for type float only); use type float, or operand_format: lines"#]].assert_eq(&lines.join("\n"));
}

/// The `offline:` example of the book's "Offline transforms" page is a
/// valid section.
#[test]
fn book_offline_example_is_valid() {
    let section = include_str!("../docs/src/training/transforms.md");
    let begin = section.find("```yaml\noffline:\n").expect("the page's example") + "```yaml\n".len();
    let block = &section[begin..begin + section[begin..].find("```").unwrap()];
    let text = format!("name: t\nfeatures:\n  - {{name: item, kind: sparse}}\n{block}");
    // chnids.pb: FilterValues { int64_list { value: [1] } }.
    let files: fex::files::InMemory = [("m/chnids.pb", vec![0x12, 0x03, 0x0a, 0x01, 0x01])].into_iter().collect();
    let p = Plan::from_yaml_with(&text, "m".as_ref(), &files).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = p.offline.transforms.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "filter_by_fids",
            "filter_by_value",
            "filter_by_value",
            "add_label",
            "filter_by_label",
            "negative_gen",
            "shuffle",
            "batch"
        ]
    );
}

/// A row a transform cannot read is an error naming the transform and the
/// row, never a panic; as an `ExtractError` (what the pipeline reports) it
/// keeps both.
#[test]
fn an_unreadable_line_id_is_an_error_naming_the_transform_and_row() {
    let p = plan(LINE_ID, "    - {transform: filter_by_value, field: req_time, op: gt, operand: 0}\n");
    let good = examples("    - {line_id: {req_time: 3}}\n").remove(0);
    // Example field 100 holding a LineId whose req_time field is cut short.
    let bad: Vec<u8> = vec![0xa2, 0x06, 0x02, 0x18, 0x80];
    let inputs: [&[u8]; 2] = [&good, &bad];
    let mut ex = Extractor::new();
    let mut rows = ex.index(&p, Input::Examples(&inputs), None).unwrap();
    let err = Transforms::new(&p).apply(&mut rows).unwrap_err();
    assert_eq!((err.index, err.name, err.row), (0, "filter_by_value", 1));
    let as_extract = fex::ExtractError::from(err.clone());
    assert_eq!(as_extract.row(), Some(1));
    assert!(as_extract.to_string().contains("offline.transforms[0] (filter_by_value)"), "{as_extract}");
    assert!(err.to_string().starts_with("offline.transforms[0] (filter_by_value): row 1: "), "{err}");
}

/// One Example of the property tests below: a user, an item with or
/// without tags, its channel, a label.
fn neg_example(user: u64, item: u64, tags: &[u64], channel: u64, label: f32) -> String {
    let tags = if tags.is_empty() { String::new() } else { format!(", f_goods_tags: {{fid_v2_list: {tags:?}}}") };
    format!(
        "    - {{features: {{f_user_id: {{fid_v2_list: [{user}]}}, f_goods_id: {{fid_v2_list: [{item}]}}, f_spm: {{fid_v2_list: [{channel}]}}{tags}}}, line_id: {{item_id: {item}, actions: [1]}}, label: [{label:?}]}}\n"
    )
}

const PROP_FEATURES: &str = "  - {name: f_user_id, kind: sparse}
  - {name: f_goods_id, kind: sparse}
  - {name: f_goods_tags, kind: sparse}
  - {name: f_spm, kind: sparse}
  - {name: label, kind: label, shape: [1]}
  - {name: w, kind: instance_weight}
  - {name: gid, kind: line_id, field: item_id}
  - {name: acts, kind: line_id, field: actions, shape: [1]}
";

/// A pooled item as the test's own model of the pool keeps it.
#[derive(Clone, Debug)]
struct Pooled {
    gid: u64,
    tags: Vec<u64>,
    drawn: u32,
}

/// Everything a draw decides is checked against a model of Monolith's pool
/// kept by the test (cache_mgr.cc `CacheWithGid::Push`, lines 92-114: a new
/// item joins the back, one already there stays, past max_item_num the
/// oldest leaves; `RandomSelectOne`, lines 116-140: more than start_num
/// items, a uniform draw, freq_factor = 1 / times drawn, time_factor =
/// position / size): each positive's negatives come right before it, every
/// row is cached before its negatives are built (`GetNext`, kernel lines
/// 196-199); a negative holds the positive's user and the drawn item's
/// item features exactly (its tags absent when the item has none: lines
/// 427-433, 512-519); its LineId names the item with actions
/// [negative_action], label[label_index] = negative_label (lines 455-470);
/// weight 1 + neg_num * time^decay * freq (lines 492-503). Without easy
/// negatives, a positive gets neg_num negatives from its own channel when
/// the pool holds more than start_num items, else none.
#[test]
fn negative_gen_draws_follow_the_pool_exactly() {
    let (neg_num, start_num, max_items) = (3usize, 1usize, 4usize);
    let p = plan(
        PROP_FEATURES,
        &format!(
            "    - {{transform: negative_gen, neg_num: {neg_num}, per_channel: true, channel_feature: f_spm, item_features: [f_goods_id, f_goods_tags], start_num: {start_num}, max_item_num: {max_items}, negative_action: 9, neg_sample_declay_factor: 0.5, seed: 11}}\n"
        ),
    );
    // 60 rows: 3 channels, 10 items, every third item without tags.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let rows: Vec<(u64, u64, Vec<u64>, u64, f32)> = (0..60)
        .map(|i| {
            let item = rng.random_range(0..10u64);
            let tags = if item % 3 == 0 { vec![] } else { vec![1000 + item, 2000 + item] };
            let label = if rng.random_bool(0.6) { 1.0 } else { 0.0 };
            (i, 100 + item, tags, item % 3 + 1, label)
        })
        .collect();
    let text: String = rows.iter().map(|(u, i, tags, c, l)| neg_example(*u, *i, tags, *c, *l)).collect();
    let mut t = Transforms::new(&p);
    let out = run_one(&p, Input::Examples(&examples(&text).iter().map(Vec::as_slice).collect::<Vec<_>>()), &mut t);
    let (users, goods, tags) = (ids(&out, "f_user_id"), ids(&out, "f_goods_id"), ids(&out, "f_goods_tags"));
    let (gid, labels, acts, w) = (
        out.tensor("gid").unwrap().u64s(),
        out.tensor("label").unwrap().f32s(),
        out.tensor("acts").unwrap().i64s(),
        out.tensor("w").unwrap().f32s(),
    );
    let mut pools: std::collections::HashMap<u64, Vec<Pooled>> = Default::default();
    let mut at = 0;
    let mut generated = 0;
    for (user, item, item_tags, channel, label) in &rows {
        let pool = pools.entry(*channel).or_default();
        if !pool.iter().any(|x| x.gid == *item) {
            pool.push(Pooled { gid: *item, tags: item_tags.clone(), drawn: 0 });
            if pool.len() > max_items {
                pool.remove(0);
            }
        }
        if *label == 1.0 {
            let expected = if pool.len() > start_num { neg_num } else { 0 };
            for _ in 0..expected {
                let position = pool.iter().position(|x| x.gid == gid[at]).expect("a negative's item is in the pool");
                let size = pool.len();
                let drawn = &mut pool[position];
                drawn.drawn += 1;
                assert_eq!((users[at][0], goods[at][0]), (*user, drawn.gid), "row {at}");
                assert_eq!(tags[at], drawn.tags, "row {at}: the item's own tags, or none");
                assert_eq!((labels[at], acts[at]), (-1.0, 9), "row {at}");
                let time = (position + 1) as f64 / size as f64;
                let weight = 1.0 + neg_num as f64 * time.powf(0.5) / f64::from(drawn.drawn);
                assert_eq!(w[at], weight as f32, "row {at}");
                at += 1;
                generated += 1;
            }
        }
        assert_eq!((users[at][0], goods[at][0], &tags[at]), (*user, *item, item_tags), "row {at}: the input row");
        at += 1;
    }
    assert_eq!(at, users.len());
    assert!(generated > 60, "the run draws: {generated}");
    assert_eq!(t.counts()[0].generated, generated as u64);
}

/// Easy negatives draw their channel with probability proportional to its
/// pool's size (`CacheManager::SampleChannelID`, cache_mgr.cc lines
/// 264-281). Pools of 3 and 9 items, 4,000 positives of the small channel
/// whose item is already pooled (so the sizes stay), easy_hard_ratio 1: the
/// small channel's share is Binomial(4000, 0.25), mean 1,000, standard
/// deviation 27.4; the test allows 6 deviations (165) either way, a bound a
/// correct sampler passes with probability 1 - 2e-9. Picking channels
/// uniformly (the old rule) gives 2,000.
#[test]
fn easy_negatives_pick_channels_by_pool_size() {
    let p = plan(
        PROP_FEATURES,
        "    - {transform: negative_gen, neg_num: 1, per_channel: true, channel_feature: f_spm, item_features: [f_goods_id], start_num: 0, easy_hard_ratio: 1.0, seed: 5}\n",
    );
    let mut t = Transforms::new(&p);
    let mut text: String = (0..3).map(|i| neg_example(0, 100 + i, &[], 1, 0.0)).collect();
    text.extend((0..9).map(|i| neg_example(0, 200 + i, &[], 2, 0.0)));
    text.extend((0..4000).map(|i| neg_example(i, 100 + i % 3, &[], 1, 1.0)));
    let samples = examples(&text);
    let out = run_one(&p, Input::Examples(&samples.iter().map(Vec::as_slice).collect::<Vec<_>>()), &mut t);
    assert_eq!((t.item_pool(1).len(), t.item_pool(2).len()), (3, 9));
    let labels = out.tensor("label").unwrap().f32s();
    let gid = out.tensor("gid").unwrap().u64s();
    let negatives: Vec<u64> = gid.iter().zip(&labels).filter(|(_, l)| **l == -1.0).map(|(g, _)| *g).collect();
    assert_eq!(negatives.len(), 4000);
    let small = negatives.iter().filter(|g| **g < 200).count();
    assert!((1000 - 165..=1000 + 165).contains(&small), "small channel drawn {small} times of 4000");
}

/// Review findings against the kernels, one test each.
///
/// Two negative_sample transforms draw independently (each kernel draws
/// from its own generator, variant_filter_kernel.cc lines 427-429): at 0.5
/// and 0.5, Binomial(2000, 0.25) of 2,000 negatives stay, mean 500, sd
/// 19.4; the bound is 6 sd (a shared draw would keep 1,000). Rows at the same
/// place of different ExampleBatches, with the same LineId, draw apart too:
/// over 40 batches of 50 such rows, the kept positions are not the same in
/// every batch.
#[test]
fn sampling_transforms_draw_independently() {
    let rows: String = (0..2000).map(|i| format!("    - {{line_id: {{req_time: {i}}}, label: [-1.0]}}\n")).collect();
    let twice = "{transform: negative_sample, drop_rate: 0.5, seed: 9}\n    - {transform: negative_sample, drop_rate: 0.5, seed: 9}";
    let kept = after(RT, twice, &rows).tensor("rt").unwrap().i64s();
    assert!((500 - 117..=500 + 117).contains(&kept.len()), "{}", kept.len());

    let p = plan(RT, "    - {transform: negative_sample, drop_rate: 0.5, seed: 3}\n");
    let mut kept_rows = std::collections::HashSet::new();
    for b in 0..40 {
        let labels: String = (0..50).map(|_| "{float_list: [-1.0]}, ").collect();
        let text = format!(
            "batch_size: 50\nlists:\n  - {{name: __LABEL__, features: [{labels}]}}\n  - {{name: __LINE_ID__, type: SHARED, features: [{{line_id: {{req_time: 1}}}}]}}\n  - {{name: n, type: SHARED, features: [{{int64_list: [{b}]}}]}}\n"
        );
        let bytes = batch(&text);
        let mut ex = Extractor::new();
        let mut rows = ex.index(&p, Input::Batch(&bytes), None).unwrap();
        Transforms::new(&p).apply(&mut rows).unwrap();
        kept_rows.insert(rows.len());
    }
    assert!(kept_rows.len() > 1, "every batch kept the same number of rows: {kept_rows:?}");
}

/// multi_label_gen's action_priority as its kernel reads it
/// (multi_label_gen_kernel.cc lines 53-58): `absl::StrSplit` keeps the
/// empty item of the default "" and `SimpleAtoi` leaves 0 in it, so the
/// priority map is {0: 0} and a row with actions [1, 0] takes action 0
/// (`FindMostPriorAction`, lines 158-179).
#[test]
fn multi_label_gen_reads_an_empty_priority_as_action_0() {
    let features = "  - {name: label, kind: label, shape: [1]}\n";
    let t =
        "{transform: multi_label_gen, head_to_index: {100: 0}, pos_actions: [1], neg_actions: [0], neg_label: -2.0}";
    let rows = "    - {line_id: {chnid: 100, actions: [1, 0]}}\n";
    assert_eq!(after(features, t, rows).tensor("label").unwrap().f32s(), [-2.0]);
}

/// instance_reweight's priorities are `action_priority_[value] = idx++`
/// (instance_reweight_dataset_kernel.cc lines 79-82): an action listed twice
/// takes its last place, so with "1,2,1" action 2 outranks action 1.
#[test]
fn instance_reweight_takes_a_repeated_actions_last_place() {
    let features = format!("{RT}  - {{name: label, kind: label, shape: [1]}}\n");
    let t = "{transform: instance_reweight, action_priority: \"1,2,1\", reweight: \"1:1:1,2:3:-1\"}";
    let out = after(&features, t, "    - {line_id: {req_time: 1, actions: [1, 2]}, label: [1.0]}\n");
    // Action 2 decides (`get_cnt`, lines 204-222: other listed actions are
    // passed over): 1 * its weight 3 copies, relabelled -1. With action 1
    // first (the first place) it would be one copy labelled 1.
    assert_eq!(out.tensor("label").unwrap().f32s(), [-1.0; 3]);
}

/// label_normalization's `std::max(x, 0.0f)` keeps a NaN label NaN
/// (label_normalization_kernel.cc lines 80-81), so its log is NaN, not -inf.
#[test]
fn label_normalization_keeps_nan() {
    let t = "{transform: label_normalization, norm_methods: [log], norm_values: [1.0]}";
    let out = after(LABEL2, t, "    - {label: [.nan, 0.0]}\n").tensor("label").unwrap().f32s();
    assert!(out[0].is_nan() && out[1] == 0.0, "{out:?}");
}

/// A record whose item features do not decode fails before negative_gen's
/// pool changes (its channel is not half-added): under `--on-error skip`
/// the run goes on with the pool as it was, easy negatives draw from it, and
/// it saves and restores.
#[test]
fn a_bad_item_leaves_the_pool_as_it_was() {
    let p = plan(
        "  - {name: f_goods_id, kind: sparse}\n  - {name: label, kind: label, shape: [1]}\n",
        "    - {transform: negative_gen, neg_num: 1, per_channel: true, channel_feature: f_spm, item_features: [f_goods_id, f_goods_tags], start_num: 0, easy_hard_ratio: 1.0}\n",
    );
    let t = Transforms::new(&p);
    let good = |item: u64, spm: u64, label: f32| {
        examples(&format!(
            "    - {{features: {{f_goods_id: {{fid_v2_list: [{item}]}}, f_spm: {{fid_v2_list: [{spm}]}}}}, line_id: {{item_id: {item}}}, label: [{label:?}]}}\n"
        ))
        .remove(0)
    };
    let mut ex = Extractor::new();
    let mut apply = |bytes: &[u8]| {
        let input = [bytes];
        let mut rows = ex.index(&p, Input::Examples(&input), None).unwrap();
        t.apply(&mut rows).map(|()| rows.len())
    };
    assert_eq!(apply(&good(10, 1, 0.0)), Ok(1));
    // A positive of a new channel whose f_goods_tags (an item feature the
    // plan does not read) is a Feature cut short.
    let bad = {
        // NamedFeature{name: "f_goods_tags", feature: {fid_v2_list: 5 bytes claimed, 1 given}}.
        let mut named = vec![0x0a, 12];
        named.extend_from_slice(b"f_goods_tags");
        named.extend_from_slice(&[0x12, 3, 0x12, 5, 0x09]);
        let mut e = good(20, 2, 1.0);
        e.push(0x0a);
        e.push(named.len() as u8);
        e.extend(named);
        e
    };
    assert!(apply(&bad).is_err());
    assert_eq!((t.item_pool(1), t.item_pool(2)), (vec![10], vec![]));
    assert_eq!(apply(&good(30, 3, 1.0)), Ok(2), "a positive and its negative");
    let saved = t.save_item_pool().unwrap();
    Transforms::new(&p).restore_item_pool(&saved).unwrap();
}
