use fex::proto::monolith_pb as pb;
use prost::Message;

#[test]
fn default_model_smoke() {
    let plan = fex::Plan::default_model();
    let fid = |v: Vec<u64>| pb::Feature { r#type: Some(pb::feature::Type::FidV2List(pb::FidList { value: v })) };
    let batch = pb::ExampleBatch {
        batch_size: 2,
        named_feature_list: vec![
            pb::NamedFeatureList { name: "user_id".into(), feature: vec![fid(vec![7])], r#type: 1, id: 0 },
            pb::NamedFeatureList {
                name: "item_id".into(),
                feature: vec![fid(vec![1, 2]), fid(vec![3])],
                r#type: 0,
                id: 0,
            },
            pb::NamedFeatureList { name: "ctx_hour".into(), feature: vec![fid(vec![9])], r#type: 1, id: 0 },
        ],
        ..Default::default()
    };
    let out = fex::extract_batch(&plan, &batch.encode_to_vec()).unwrap();
    assert_eq!(out.batch_size, 2);
    for t in &out.tensors {
        println!("{} {:?} {:?} values={} splits={}", t.name, t.layout(), t.shape, t.values.len(), t.row_splits.len());
    }
}
