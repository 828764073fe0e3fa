//! Keys and actions of logged requests built with prost's types.

use prost::Message;

use super::{NearlineError, Payload, attach_actions, request_keys};
use crate::columns::{Column, Values};
use crate::proto::fex_v1::{ExampleList, ExtractRequest, LoggedRequest, extract_request};
use crate::proto::idl::matrix::proto::LineId;
use crate::proto::monolith::io::proto::{
    BytesList, Example, ExampleBatch, Feature, FidList, Int64List, NamedFeature, NamedFeatureList, feature,
};
use crate::{Plan, extract_batch, extract_examples};

const SHARED: i32 = 1;

fn plan(section: &str) -> Plan {
    let text = format!(
        "name: ranker\nfeatures:\n  - {{name: item, kind: sparse}}\n  - {{name: acts, kind: line_id, field: actions, shape: [3]}}\n\
         label_join:\n{section}  emit: {{after: 30m}}\n"
    );
    Plan::from_yaml(&text).unwrap()
}

fn bytes_feature(values: Vec<Vec<u8>>) -> Feature {
    Feature { r#type: Some(feature::Type::BytesList(BytesList { value: values })) }
}

fn int_feature(v: i64) -> Feature {
    Feature { r#type: Some(feature::Type::Int64List(Int64List { value: vec![v] })) }
}

fn fid_feature(v: u64) -> Feature {
    Feature { r#type: Some(feature::Type::FidV2List(FidList { value: vec![v] })) }
}

fn list(name: &str, ty: i32, feature: Vec<Feature>) -> NamedFeatureList {
    NamedFeatureList { name: name.into(), feature, r#type: ty, ..Default::default() }
}

fn line_id(uid: u64, item: u64, actions: Vec<i32>) -> LineId {
    LineId {
        uid: Some(uid),
        item_id: Some(item),
        req_id: Some("r-7".into()),
        req_time: Some(1_700_000_000),
        actions,
        ..Default::default()
    }
}

/// A batch of three rows: a SHARED user feature and refresh flag, per-row
/// LineIds (the second already has action 9) and fids.
fn batch() -> ExampleBatch {
    let line_ids = [line_id(u64::MAX, 11, vec![]), line_id(u64::MAX, 12, vec![9]), line_id(u64::MAX, 13, vec![])];
    ExampleBatch {
        named_feature_list: vec![
            list("f_user", SHARED, vec![bytes_feature(vec![b"alice".to_vec()])]),
            list("f_refresh", SHARED, vec![int_feature(1)]),
            list("__LINE_ID__", 0, line_ids.iter().map(|l| bytes_feature(vec![l.encode_to_vec()])).collect()),
            list("item", 0, vec![fid_feature(101), fid_feature(102), fid_feature(103)]),
        ],
        batch_size: 3,
        ..Default::default()
    }
}

fn examples() -> Vec<Example> {
    (0..2)
        .map(|i| Example {
            named_feature: vec![
                NamedFeature { name: "ts".into(), feature: Some(int_feature(1_700_000_123)), ..Default::default() },
                NamedFeature { name: "item".into(), feature: Some(fid_feature(200 + i)), ..Default::default() },
            ],
            line_id: Some(LineId { user_id: Some("u-1".into()), item_id: Some(20 + i), ..Default::default() }),
            label: vec![1.0],
            ..Default::default()
        })
        .collect()
}

fn logged(payload: extract_request::Payload) -> Vec<u8> {
    let request = ExtractRequest { model: "ranker".into(), payload: Some(payload), outputs: vec![] };
    LoggedRequest {
        request: request.encode_to_vec(),
        model: "ranker".into(),
        model_version: "v1".into(),
        model_digest: 5,
        unix_micros: 1_700_000_000_123_456,
        request_id: "req-1".into(),
    }
    .encode_to_vec()
}

fn logged_batch(b: &ExampleBatch) -> Vec<u8> {
    logged(extract_request::Payload::ExampleBatch(b.encode_to_vec().into()))
}

fn logged_examples(all: &[Example]) -> Vec<u8> {
    let example = all.iter().map(|e| e.encode_to_vec().into()).collect();
    logged(extract_request::Payload::Examples(ExampleList { example }))
}

#[test]
fn keys_of_a_batch_from_the_log_and_the_line_id() {
    let plan = plan("  user_id: {line_id: uid}\n  item_id: {line_id: item_id}\n");
    let keys = request_keys(&plan, &logged_batch(&batch())).unwrap();
    assert_eq!((keys.request_id.as_str(), keys.user_id.as_str()), ("req-1", "18446744073709551615"));
    assert_eq!(keys.time_ms, 1_700_000_000_123);
    assert!(!keys.refresh);
    assert_eq!(keys.item_ids, ["11", "12", "13"]);
    assert_eq!((keys.payload, keys.rows, keys.model.as_str()), (Payload::Batch, 3, "ranker"));
}

#[test]
fn keys_of_a_batch_from_features_and_line_id_fields() {
    let plan = plan(
        "  request_id: {line_id: req_id}\n  user_id: {feature: f_user}\n  request_time: {line_id: req_time}\n  \
         item_id: {feature: item}\n  refresh: {feature: f_refresh}\n",
    );
    let keys = request_keys(&plan, &logged_batch(&batch())).unwrap();
    assert_eq!((keys.request_id.as_str(), keys.user_id.as_str()), ("r-7", "alice"));
    assert_eq!(keys.time_ms, 1_700_000_000_000);
    assert!(keys.refresh);
    assert_eq!(keys.item_ids, ["101", "102", "103"]);
}

#[test]
fn keys_of_examples() {
    let plan = plan(
        "  user_id: {line_id: user_id}\n  request_time: {feature: ts, unit: s}\n  item_id: {feature: item}\n  refresh: {line_id: is_draw}\n",
    );
    let keys = request_keys(&plan, &logged_examples(&examples())).unwrap();
    assert_eq!((keys.user_id.as_str(), keys.time_ms, keys.refresh), ("u-1", 1_700_000_123_000, false));
    assert_eq!(keys.item_ids, ["200", "201"]);
    assert_eq!((keys.payload, keys.rows), (Payload::Examples, 2));
    let plan = plan_with_ms();
    assert_eq!(request_keys(&plan, &logged_examples(&examples())).unwrap().time_ms, 1_700_000);
}

fn plan_with_ms() -> Plan {
    plan("  user_id: {line_id: user_id}\n  request_time: {feature: ts, unit: us}\n  item_id: {line_id: item_id}\n")
}

#[test]
fn a_row_without_an_item_gives_an_empty_id() {
    let mut b = batch();
    b.named_feature_list[3].feature.pop();
    let plan = plan("  user_id: {feature: f_user}\n  item_id: {feature: item}\n");
    assert_eq!(request_keys(&plan, &logged_batch(&b)).unwrap().item_ids, ["101", "102", ""]);
}

#[test]
fn errors_say_what_and_where() {
    let plan = plan("  user_id: {feature: nobody}\n  item_id: {feature: item}\n");
    let err = request_keys(&plan, &logged_batch(&batch())).unwrap_err();
    assert_eq!(err.to_string(), "label_join.user_id: row 0 has no feature \"nobody\"");
    let no_section = Plan::from_yaml("name: m\nfeatures:\n  - {name: item, kind: sparse}\n").unwrap();
    let err = request_keys(&no_section, &logged_batch(&batch())).unwrap_err();
    assert!(matches!(err, NearlineError::NoLabelJoin { .. }), "{err}");
    let plan = plan_with_ms();
    let bytes = logged_examples(&examples());
    // A prefix cut inside the request (field 1, first) is an error with
    // its offset; a cut after it is a record without its later fields.
    let request = LoggedRequest::decode(&bytes[..]).unwrap().request.len();
    let request_end = 1 + prost::encoding::encoded_len_varint(request as u64) + request;
    for cut in 0..bytes.len() {
        match request_keys(&plan, &bytes[..cut]) {
            Err(NearlineError::NoSamples) => assert_eq!(cut, 0),
            Err(err) => assert!(err.offset().is_some(), "{cut}: {err}"),
            Ok(_) => assert!(cut >= request_end, "{cut}"),
        }
    }
    let err = request_keys(&plan, &bytes[..request_end - 3]).unwrap_err().to_string();
    assert_eq!(err, format!("logged request: request @ byte 3: needs {request} bytes, only {} remain", request - 3));
    let err = request_keys(&plan, &bytes[..bytes.len() - 3]).unwrap_err().to_string();
    assert!(err.starts_with("logged request: request_id @ byte"), "{err}");
    let err = attach_actions(&logged_batch(&batch()), &[vec![1], vec![]]).unwrap_err();
    assert_eq!(err.to_string(), "found actions for 2 rows; the request has 3");
    let err = attach_actions(&logged_examples(&examples()), &[vec![1]]).unwrap_err();
    assert_eq!(err, NearlineError::Rows { found: 1, rows: 2 });
    assert_eq!(
        request_keys(&plan, &logged(extract_request::Payload::Examples(ExampleList::default())))
            .unwrap_err()
            .to_string(),
        "label_join.user_id: row 0 has no LineId field user_id"
    );
}

/// LineId.actions of every row of an attached batch.
fn batch_actions(out: &[u8]) -> Vec<Vec<i32>> {
    let b = ExampleBatch::decode(out).unwrap();
    let list = b.named_feature_list.iter().find(|l| l.name == "__LINE_ID__").unwrap();
    (0..b.batch_size as usize)
        .map(|row| {
            let f = if list.r#type == SHARED { list.feature.first() } else { list.feature.get(row) };
            match f.and_then(|f| f.r#type.as_ref()) {
                Some(feature::Type::BytesList(l)) => LineId::decode(&l.value[0][..]).unwrap().actions,
                _ => vec![],
            }
        })
        .collect()
}

#[test]
fn attached_actions_follow_the_ones_a_row_has() {
    let bytes = logged_batch(&batch());
    let actions = vec![vec![1, 2], vec![3], vec![]];
    let out = attach_actions(&bytes, &actions).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(batch_actions(&out[0]), [vec![1, 2], vec![9, 3], vec![]]);
    // Every other list is unchanged.
    let (before, after) = (batch(), ExampleBatch::decode(&out[0][..]).unwrap());
    assert_eq!(after.batch_size, 3);
    for name in ["f_user", "f_refresh", "item"] {
        let find = |b: &ExampleBatch| b.named_feature_list.iter().find(|l| l.name == name).cloned();
        assert_eq!(find(&after), find(&before), "{name}");
    }
    let untouched = ExampleBatch::decode(&out[0][..]).unwrap().named_feature_list[2].feature[2].clone();
    assert_eq!(untouched, batch().named_feature_list[2].feature[2]);
    // The extractor reads them.
    let plan = plan("  user_id: {line_id: uid}\n  item_id: {line_id: item_id}\n");
    let got = extract_batch(&plan, &out[0]).unwrap();
    let Some(Column::Dense(d)) = got.column("acts") else { panic!("{got:?}") };
    assert_eq!(d.values, Values::I64(vec![1, 2, 0, 9, 3, 0, 0, 0, 0]));
}

#[test]
fn no_actions_gives_the_samples_as_they_came() {
    let b = batch().encode_to_vec();
    assert_eq!(attach_actions(&logged_batch(&batch()), &[vec![], vec![], vec![]]).unwrap(), [b]);
    let all = examples();
    let out = attach_actions(&logged_examples(&all), &[vec![], vec![]]).unwrap();
    assert_eq!(out, all.iter().map(Message::encode_to_vec).collect::<Vec<_>>());
}

#[test]
fn a_shared_line_id_spreads_only_when_rows_differ() {
    let mut b = batch();
    b.named_feature_list[2] =
        list("__LINE_ID__", SHARED, vec![bytes_feature(vec![line_id(1, 2, vec![4]).encode_to_vec()])]);
    let same = attach_actions(&logged_batch(&b), &[vec![5], vec![5], vec![5]]).unwrap();
    let decoded = ExampleBatch::decode(&same[0][..]).unwrap();
    assert_eq!((decoded.named_feature_list[2].r#type, decoded.named_feature_list[2].feature.len()), (SHARED, 1));
    assert_eq!(batch_actions(&same[0]), [vec![4, 5], vec![4, 5], vec![4, 5]]);
    let differ = attach_actions(&logged_batch(&b), &[vec![5], vec![], vec![6, 7]]).unwrap();
    let decoded = ExampleBatch::decode(&differ[0][..]).unwrap();
    assert_eq!((decoded.named_feature_list[2].r#type, decoded.named_feature_list[2].feature.len()), (0, 3));
    assert_eq!(batch_actions(&differ[0]), [vec![4, 5], vec![4], vec![4, 6, 7]]);
}

/// The whole attached Feature, byte for byte as prost writes it: a
/// bytes_list whose first value (the LineId) ends with the actions, every
/// other value kept, negative actions sign-extended.
#[test]
fn an_attached_line_id_feature_is_what_prost_writes() {
    let mut b = batch();
    let values = vec![line_id(1, 2, vec![4]).encode_to_vec(), b"x".to_vec(), vec![0xff; 200]];
    b.named_feature_list[2] = list("__LINE_ID__", 0, vec![bytes_feature(values.clone()); 3]);
    let actions = vec![vec![5, -3], vec![], vec![300]];
    let out = attach_actions(&logged_batch(&b), &actions).unwrap();
    let got = ExampleBatch::decode(&out[0][..]).unwrap().named_feature_list[2].feature.clone();
    for (row, acts) in actions.iter().enumerate() {
        let mut first = values[0].clone();
        for &a in acts {
            prost::encoding::int32::encode(6, &a, &mut first);
        }
        let mut want = values.clone();
        want[0] = first;
        let want = bytes_feature(want);
        assert_eq!(got[row].encode_to_vec(), want.encode_to_vec(), "row {row}");
    }
}

#[test]
fn rows_without_a_line_id_get_one_holding_the_actions() {
    let mut b = batch();
    b.named_feature_list.remove(2);
    let out = attach_actions(&logged_batch(&b), &[vec![], vec![-1], vec![]]).unwrap();
    assert_eq!(batch_actions(&out[0]), [vec![], vec![-1], vec![]]);
    let mut b = batch();
    b.named_feature_list[2].feature.truncate(1);
    let out = attach_actions(&logged_batch(&b), &[vec![], vec![], vec![8]]).unwrap();
    assert_eq!(batch_actions(&out[0]), [vec![], vec![], vec![8]]);
}

#[test]
fn examples_get_their_field_100_rewritten() {
    let mut all = examples();
    all[1].line_id = None;
    let out = attach_actions(&logged_examples(&all), &[vec![3, 4], vec![5]]).unwrap();
    let decoded: Vec<Example> = out.iter().map(|e| Example::decode(&e[..]).unwrap()).collect();
    assert_eq!(decoded[0].line_id.as_ref().unwrap().actions, [3, 4]);
    assert_eq!(decoded[0].line_id.as_ref().unwrap().user_id.as_deref(), Some("u-1"));
    assert_eq!(decoded[1].line_id.as_ref().unwrap().actions, [5]);
    assert_eq!((&decoded[0].named_feature, &decoded[0].label), (&all[0].named_feature, &all[0].label));
    let plan = plan_with_ms();
    let bufs: Vec<&[u8]> = out.iter().map(Vec::as_slice).collect();
    let got = extract_examples(&plan, &bufs).unwrap();
    let Some(Column::Dense(d)) = got.column("acts") else { panic!("{got:?}") };
    assert_eq!(d.values, Values::I64(vec![3, 4, 0, 5, 0, 0]));
}

#[test]
fn an_examples_line_id_feature_is_the_one_rewritten() {
    let mut all = examples();
    let named = bytes_feature(vec![line_id(1, 2, vec![1]).encode_to_vec()]);
    all[0].named_feature.push(NamedFeature { name: "__LINE_ID__".into(), feature: Some(named), ..Default::default() });
    let out = attach_actions(&logged_examples(&all), &[vec![2], vec![]]).unwrap();
    let e = Example::decode(&out[0][..]).unwrap();
    let Some(feature::Type::BytesList(l)) = &e.named_feature[2].feature.as_ref().unwrap().r#type else { panic!() };
    assert_eq!(LineId::decode(&l.value[0][..]).unwrap().actions, [1, 2]);
    assert_eq!(e.line_id, all[0].line_id);
}

#[test]
fn a_bad_line_id_is_reported_at_its_offset_in_the_record() {
    let mut b = batch();
    // uid (field 2, fixed64) with one of its eight bytes.
    b.named_feature_list[2].feature[0] = bytes_feature(vec![vec![0x11, 0xAB]]);
    let bytes = logged_batch(&b);
    let at = bytes.windows(2).position(|w| w == [0x11, 0xAB]).unwrap();
    let plan = plan("  user_id: {line_id: uid}\n  item_id: {line_id: item_id}\n");
    let err = request_keys(&plan, &bytes).unwrap_err();
    assert_eq!(err.offset(), Some(at + 1), "{err}");
    assert!(err.to_string().contains("needs 8 bytes, only 1 remain"), "{err}");
}

/// The framed records of `bytes` (u64 little-endian length, then the record).
#[cfg(feature = "offline")]
fn unframe(mut bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        out.push(&bytes[8..8 + len]);
        bytes = &bytes[8 + len..];
    }
    out
}

#[cfg(feature = "offline")]
#[test]
fn compute_extracts_the_joined_samples_as_fex_extract_does() {
    use crate::proto::fex_v1::ExtractResponse;
    let section = "  user_id: {line_id: uid}\n  item_id: {line_id: item_id}\n";
    let plan = plan(section);
    let logged = logged_batch(&batch());
    let actions = [vec![1], vec![], vec![2, 3]];
    let computed = super::compute(&plan, &logged, &actions).unwrap();
    assert_eq!(computed.payload, Payload::Batch);
    assert_eq!(computed.rows_written, 3);
    let attached = attach_actions(&logged, &actions).unwrap();
    assert_eq!(unframe(&computed.joined), attached.iter().map(Vec::as_slice).collect::<Vec<_>>());
    let responses = unframe(&computed.samples);
    assert_eq!(responses.len(), 1, "one response per joined record");
    let response = ExtractResponse::decode(responses[0]).unwrap();
    assert_eq!((response.model.as_str(), response.batch_size), ("ranker", 3));
    let acts = response.tensors.iter().find(|t| t.name == "acts").unwrap();
    let values: Vec<i64> = acts.values.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
    // Row 1 had action 9 already; each row's attached actions follow.
    assert_eq!(values, [1, 0, 0, 9, 0, 0, 2, 3, 0]);

    // The model's transforms run on the joined rows: a filter on actions.
    let filtered = format!(
        "name: ranker\nfeatures:\n  - {{name: acts, kind: line_id, field: actions, shape: [3]}}\n\
         offline:\n  transforms:\n    - {{transform: filter_by_fids, has_actions: [2]}}\n\
         label_join:\n{section}  emit: {{after: 30m}}\n"
    );
    let plan = Plan::from_yaml(&filtered).unwrap();
    let computed = super::compute(&plan, &logged, &actions).unwrap();
    assert_eq!(computed.rows_written, 1);
}

#[cfg(feature = "offline")]
#[test]
fn compute_says_why_a_request_has_no_samples() {
    let plan = plan("  user_id: {line_id: uid}\n  item_id: {line_id: item_id}\n");
    let logged = logged_batch(&batch());
    let e = super::compute(&plan, &logged, &[vec![1]]).unwrap_err();
    assert!(matches!(e, super::ComputeError::Join(NearlineError::Rows { found: 1, rows: 3 })), "{e}");
    let none = [vec![], vec![], vec![]];
    let e = super::compute(&plan, &logged[..logged.len() - 3], &none).unwrap_err();
    assert!(e.to_string().starts_with("logged request: "), "{e}");
    // A sample the model cannot extract: `item` is not fids.
    let mut b = batch();
    b.named_feature_list[3].feature = vec![int_feature(1), int_feature(2), int_feature(3)];
    let e = super::compute(&plan, &logged_batch(&b), &none).unwrap_err();
    assert!(matches!(e, super::ComputeError::Extract(_)), "{e}");
    assert!(e.to_string().contains("item"), "{e}");
}
