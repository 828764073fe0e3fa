//! fex's outputs as Open Inference Protocol (KServe v2) tensors
//! (`fex::oip`): what ModelMetadata states is what ModelInfer sends, and a
//! request's `outputs` picks outputs or single tensors.

use fex::Plan;
use fex::oip::{Selection, output_metadata, push_outputs, select};
use fex::proto::fex_v1::Tensor;
use fex::proto::inference::model_metadata_response::TensorMetadata;

fn extracted() -> (Plan, Vec<Tensor>) {
    let plan = Plan::default_model();
    let request = include_bytes!("../benches/data/default_b256.pb");
    let tensors = fex::extract_batch(&plan, request).unwrap().into_tensors();
    (plan, tensors)
}

/// Every tensor sent is one ModelMetadata states, in its order, with
/// its datatype, and its shape fits the stated one (-1 matches any).
#[test]
fn outputs_are_what_the_metadata_states() {
    let (plan, tensors) = extracted();
    let stated: Vec<TensorMetadata> = plan.signature().iter().flat_map(output_metadata).collect();
    let (mut outputs, mut raw) = (Vec::new(), Vec::new());
    for t in tensors {
        push_outputs(t, &Selection::default(), &mut outputs, &mut raw);
    }
    assert_eq!(outputs.len(), stated.len());
    for (out, meta) in outputs.iter().zip(&stated) {
        assert_eq!((&out.name, &out.datatype), (&meta.name, &meta.datatype));
        assert_eq!(out.shape.len(), meta.shape.len(), "{}", out.name);
        assert!(out.shape.iter().zip(&meta.shape).all(|(&o, &m)| m == -1 || o == m), "{}", out.name);
    }
    let by_name = |n: &str| outputs.iter().position(|o| o.name == n).unwrap();
    let offsets = &outputs[by_name("item_id__offsets")];
    assert_eq!((offsets.datatype.as_str(), offsets.shape.as_slice()), ("INT64", &[257][..]));
    assert_eq!(outputs[by_name("user_id__offsets")].shape, vec![2], "a shared-once output has one row");
    assert_eq!(outputs[by_name("item_embedding")].shape, vec![256, 16]);
    let title = by_name("item_title");
    assert_eq!((outputs[title].datatype.as_str(), outputs[title].shape.as_slice()), ("BYTES", &[256][..]));
    // 256 length prefixes, then the strings.
    let (p, n) = (u32::from_le_bytes(raw[title][..4].try_into().unwrap()) as usize, raw[title].len());
    assert!(n > 256 * 4 && p < n);
}

#[test]
fn a_request_selects_outputs_or_single_tensors() {
    let (plan, tensors) = extracted();
    let signature = plan.signature();
    let selection = select(&["item_id__offsets", "item_embedding"], &signature).unwrap();
    assert_eq!(selection.outputs, vec!["item_id", "item_embedding"]);
    let (mut outputs, mut raw) = (Vec::new(), Vec::new());
    for t in tensors.into_iter().filter(|t| selection.outputs.contains(&t.name)) {
        push_outputs(t, &selection, &mut outputs, &mut raw);
    }
    let names: Vec<&str> = outputs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["item_id__offsets", "item_embedding"]);
    let err = select(&["item_id__splits"], &signature).unwrap_err().to_string();
    assert!(err.starts_with("model has no output \"item_id__splits\"; its v2 outputs are user_id__values"), "{err}");
    assert_eq!(select(&[], &signature).unwrap(), Selection::default());
}

/// examples/triton/ranker.yaml loads, and the `upstream:` excerpt on the
/// book's "Behind a model server" page is its text.
#[test]
fn the_triton_example_loads_and_the_book_quotes_it() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/triton/ranker.yaml");
    let plan = Plan::from_file(std::path::Path::new(path)).unwrap();
    let up = plan.upstream.expect("an upstream: section");
    assert_eq!((up.model.as_str(), up.inputs.len(), up.outputs.as_slice()), ("ranker", 11, &["score".to_string()][..]));
    let page = include_str!("../docs/src/calling/model-server.md");
    let marker = "<!-- excerpt: upstream begin -->\n```yaml\n";
    let begin = page.find(marker).expect("begin marker") + marker.len();
    let end = page[begin..].find("```\n<!-- excerpt: upstream end -->").expect("end marker") + begin;
    let example = std::fs::read_to_string(path).unwrap();
    assert!(example.contains(&page[begin..end]), "the book's upstream: excerpt is not examples/triton/ranker.yaml's");
}
