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
        offline.transforms[9].transform: unknown transform "filter_by_vals", expected one of filter_by_fids, filter_by_value, filter_by_label, add_label, negative_gen, shuffle, batch
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

/// README's `offline:` example is a valid section.
#[test]
fn readme_offline_example_is_valid() {
    let readme = include_str!("../README.md");
    let section = &readme[readme.find("### Offline transforms").expect("the README section")..];
    let begin = section.find("```yaml\n").unwrap() + "```yaml\n".len();
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
