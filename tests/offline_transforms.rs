//! The offline sample transforms (`offline:` in the model YAML) on the entry
//! point's rows: index → `Transforms::apply` → write. Each test is a worked
//! example of Monolith's behaviour, citing the file it comes from
//! (bytedance/monolith, monolith/native_training/data/).

mod common;

use common::{batch, examples};
use fex::offline::{TransformCount, Transforms};
use fex::{Extracted, Extractor, Input, Plan, Policy};

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
            t.apply(plan, &mut rows).unwrap();
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
/// 117-190): req_time below req_time_min drops; any filter_fid drops; some
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
/// 150-290) with relational_utils.h's `compare`/`contains`: `between` is
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

/// filter_by_label's docstring (feature_utils.py, lines 445-452):
/// thresholds [-100.0, 0.0]; [-1000, -1] is dropped, [-1000, 0], [-1, -1]
/// and [-1, 1] are kept; filter_equal drops a label equal to its threshold
/// (filter_by_label_kernel.cc, lines 74-79); fewer labels than thresholds
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

/// add_label's docstring (feature_utils.py, lines 338-353) and kernel
/// (add_label_kernel.cc, lines 83-121): config "1,2:3:1.0;4::0.5" is two
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
    let offline = &run(&p, &[rows.clone()], &mut Transforms::new(&p))[0];
    let (on, off) = (online.tensor("online").unwrap().f32s(), offline.tensor("label").unwrap().f32s());
    assert_eq!(on.len(), 64);
    assert!(on.contains(&0.0) && on.contains(&INVALID) && on.contains(&1.0), "{on:?}");
    assert_eq!(off, on);
}
