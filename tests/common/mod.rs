//! The sample builder the Rust tests share: samples are written in the golden
//! corpus's readable form (tests/corpus/, `fex::corpus`) and encoded by it,
//! so no test hand-builds prost messages.

/// A serialized ExampleBatch from its readable YAML form.
pub fn batch(yaml: &str) -> Vec<u8> {
    let batch = fex::corpus::Batch::from_yaml(yaml).unwrap_or_else(|e| panic!("bad sample: {e}\n{yaml}"));
    batch.encode().unwrap_or_else(|e| panic!("bad sample: {e}\n{yaml}"))
}

/// Serialized Examples from their readable YAML form (a list of Examples).
#[allow(dead_code)]
pub fn examples(yaml: &str) -> Vec<Vec<u8>> {
    let input =
        fex::corpus::Input::from_yaml(&format!("examples:\n{yaml}")).unwrap_or_else(|e| panic!("bad sample: {e}"));
    match input.encode().unwrap_or_else(|e| panic!("bad sample: {e}")) {
        fex::corpus::Encoded::Examples(v) => v,
        fex::corpus::Encoded::Batch(_) => unreachable!("written as examples"),
    }
}
