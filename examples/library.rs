//! The library in one page (the book's "The Rust library" page shows this file):
//! `cargo run --example library -- request.pb` extracts a serialized
//! ExampleBatch with the embedded default model, twice (as served, and as a
//! training table with one row per sample), and prints each output as Arrow.

use fex::{Extracted, Extractor, Input, Plan, Policy, SharedRows};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: library REQUEST.pb (one serialized ExampleBatch)")?;
    let request = std::fs::read(path)?;
    // book: begin
    let plan = Plan::default_model(); // or Plan::from_file(path), Plan::from_yaml(text)
    let mut extractor = Extractor::new(); // scratch, one per thread
    let mut out = Extracted::default(); // reuse it: buffers keep their capacity

    // As the server does: the model's own policy (`shared: once` outputs
    // come back with one row).
    extractor.extract(&plan, Input::Batch(&request), Policy::default(), &mut out)?;
    let item_id = out.column("item_id").ok_or("no item_id")?; // fex::Column::Ragged
    println!("item_id: {} rows, shape {:?}", item_id.rows(), item_id.shape());

    // A training table: every SHARED feature broadcast, only two outputs.
    let outputs = plan.select(&["user_id", "item_id"])?;
    let table = Policy { outputs: Some(&outputs), shared: SharedRows::Broadcast, ..Default::default() };
    extractor.extract(&plan, Input::Batch(&request), table, &mut out)?;
    for c in out.columns.drain(..) {
        let array = c.column.into_arrow()?; // moves the buffers, copies no value
        println!("{}: {:?}, {} rows", c.name, array.data_type(), array.len());
    }
    // book: end
    Ok(())
}
