//! Offline cases of the golden corpus (tests/corpus_offline/*.yaml): a
//! model with an `offline:` section and its input records, run as `fex
//! extract` runs them (`offline::RowsHook` over `samples::Transforms`):
//! the records indexed together as one chunk of the pipeline holds them
//! (an ExampleBatch is one record, each Example one record), the
//! stateless transforms, the ordered ones, then every table the
//! transforms release, each written apart, and what they hold at the end.
//!
//! Rendered as the transforms' counts, then each table as `render` prints
//! an extraction.

use super::{Case, CorpusError, Encoded, render, render_error};
use crate::offline::{RecordCtx, RowsHook};
use crate::samples::Transforms;
use crate::{Extracted, Extractor, Input, Plan, Policy};

/// What an offline case's run gave: the tables in order and the counts, or
/// the error that stopped it (as text).
pub struct OfflineRun {
    pub plan: Plan,
    pub tables: Vec<Extracted>,
    pub counts: Vec<(String, u64)>,
}

impl Case {
    /// Runs the case's input through the model's transforms and renders the
    /// counts and tables, or the error either the config or the run gave.
    pub fn run_offline(&self, base_dir: &std::path::Path) -> Result<String, CorpusError> {
        Ok(match self.offline_tables(base_dir)? {
            Ok(run) => render_offline(&run),
            Err(e) => e,
        })
    }

    /// The tables `fex extract` writes for the case's input, in order.
    pub fn offline_tables(&self, base_dir: &std::path::Path) -> Result<Result<OfflineRun, String>, CorpusError> {
        let encoded = self.input.encode()?;
        let plan = match Plan::from_yaml_in(&self.model, base_dir) {
            Ok(p) => p,
            Err(e) => return Ok(Err(render_error(&e))),
        };
        let records: Vec<&[u8]> = match &encoded {
            Encoded::Batch(b) => vec![b.as_slice()],
            Encoded::Examples(es) => es.iter().map(Vec::as_slice).collect(),
        };
        let input = match &encoded {
            Encoded::Batch(b) => Input::Batch(b),
            Encoded::Examples(_) => Input::Examples(&records),
        };
        Ok(tables(&plan, input, &records).map(|(tables, counts)| OfflineRun { plan, tables, counts }))
    }
}

type Tables = (Vec<Extracted>, Vec<(String, u64)>);

fn tables(plan: &Plan, input: Input<'_>, records: &[&[u8]]) -> Result<Tables, String> {
    let transforms = Transforms::new(plan);
    let mut ex = Extractor::new();
    let ctx = RecordCtx { source: "case", index: 0, offset: 0, records: records.len(), payloads: records };
    let mut rows = ex.index(plan, input, None).map_err(|e| render_error(&e))?;
    let carry = transforms.each(&ctx, &mut rows).map_err(|e| render_error(&e))?;
    let released = transforms.in_order(&ctx, rows, carry).map_err(|e| render_error(&e))?;
    let held = RowsHook::finish(&transforms).map_err(|e| render_error(&e))?;
    let mut out = Vec::new();
    for rows in released.iter().chain(held.iter()) {
        let mut table = Extracted::default();
        ex.write(plan, rows, Policy::default(), &mut table).map_err(|e| render_error(&e))?;
        out.push(table);
    }
    Ok((out, transforms.summary()))
}

fn render_offline(run: &OfflineRun) -> String {
    let mut text = String::new();
    for (name, n) in &run.counts {
        text.push_str(&format!("{name}: {n}\n"));
    }
    for (i, table) in run.tables.iter().enumerate() {
        text.push_str(&format!("--- table {i}\n"));
        text.push_str(&render(table));
    }
    text
}
