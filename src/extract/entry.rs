//! The one entry point, online and offline: index the input into rows, let
//! the caller edit the rows (drop some, append rows of other samples), write
//! the plan's outputs for them. `Extractor::extract` is index + write in one
//! call, on the extractor's own scratch: what the server runs. What is
//! serving policy rather than model (which outputs, how SHARED features come
//! back, the bounds) is an argument of the call, a [`Policy`].

use super::rows::Rows;
use super::{ExtractError, Extracted, Extractor};
use crate::config::{Limits, Plan};
use crate::error::ErrorKind;

/// Serialized samples: one call's input.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// One `ExampleBatch`; its rows are its `batch_size`.
    Batch(&'a [u8]),
    /// `Example`s, one per row.
    Examples(&'a [&'a [u8]]),
    /// Legacy `parser.proto.Instance`s, one per row (see `instance`).
    Instances(&'a [&'a [u8]]),
}

/// How SHARED features come back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SharedRows {
    /// As each output declares (`shared: once` or broadcast).
    #[default]
    AsDeclared,
    /// Broadcast to every row: one row per sample, as a training table wants.
    Broadcast,
    /// Every SHARED feature returned once, with rows = 1.
    Once,
}

/// Serving policy for one call.
#[derive(Debug, Clone, Copy, Default)]
pub struct Policy<'p> {
    /// The outputs to produce (indices from `Plan::select`), in that order;
    /// `None` produces every visible output.
    pub outputs: Option<&'p [usize]>,
    pub shared: SharedRows,
    /// Bounds for this call; `None` takes the plan's.
    pub limits: Option<Limits>,
}

impl Extractor {
    /// Extracts `input` into `out`, reusing this extractor's scratch and
    /// `out`'s buffers: in steady state it allocates nothing. After an
    /// error `out` holds no result: read it only after `Ok`.
    pub fn extract(
        &mut self,
        plan: &Plan,
        input: Input<'_>,
        policy: Policy<'_>,
        out: &mut Extracted,
    ) -> Result<(), ExtractError> {
        self.begin(plan, &policy)?;
        match input {
            Input::Batch(buf) => {
                self.index.gather_batch(plan, buf, &self.needed, policy.outputs.is_none())?;
                self.run(plan, None, &[buf], &policy, out)
            }
            Input::Examples(bufs) => {
                self.index.gather_examples(plan, bufs)?;
                self.run(plan, None, bufs, &policy, out)
            }
            Input::Instances(bufs) => {
                let limit = self.index.limits.max_batch_size;
                if bufs.len() > limit {
                    return Err(ErrorKind::TooManyRows { found: bufs.len(), limit }.into());
                }
                // Instances are read through the Examples they stand for:
                // this path allocates per call, as the Examples path does not.
                let examples = super::instance::to_examples(plan, bufs)?;
                let slices: Vec<&[u8]> = examples.iter().map(Vec::as_slice).collect();
                self.index.gather_examples(plan, &slices)?;
                self.run(plan, None, &slices, &policy, out)
            }
        }
    }

    /// Indexes `input` into rows the caller may edit before `write`. Every
    /// row stands alone: a SHARED feature is copied to each row it reaches.
    /// `limits` bound the input's rows (`None`: the plan's).
    pub fn index<'a>(
        &mut self,
        plan: &Plan,
        input: Input<'a>,
        limits: Option<Limits>,
    ) -> Result<Rows<'a>, ExtractError> {
        self.index.limits = limits.unwrap_or(plan.limits);
        self.index.cells_only = true;
        let result = match input {
            Input::Batch(buf) => {
                self.index.gather_batch(plan, buf, &[], false).map(|_| Rows::from_index(plan, &self.index, vec![buf]))
            }
            Input::Examples(bufs) => {
                self.index.gather_examples(plan, bufs).map(|_| Rows::from_index(plan, &self.index, bufs.to_vec()))
            }
            Input::Instances(_) => Err(ErrorKind::Operator {
                name: "index".into(),
                message: "legacy Instances are extracted whole (Extractor::extract); index Examples instead".into(),
            }
            .into()),
        };
        self.index.cells_only = false;
        result
    }

    /// Writes the plan's outputs for `rows` into `out`. Every row stands
    /// alone, so SHARED features are written per row whatever
    /// `policy.shared` says. `rows` must come from `index` with this plan.
    pub fn write(
        &mut self,
        plan: &Plan,
        rows: &Rows<'_>,
        policy: Policy<'_>,
        out: &mut Extracted,
    ) -> Result<(), ExtractError> {
        self.write_rows(plan, rows, policy, out, true)
    }

    /// `write`; `whole`: rows of one batch may be copied out of the batch
    /// extracted whole (`write_from_batch`), else every row is written from
    /// its cells.
    pub(super) fn write_rows(
        &mut self,
        plan: &Plan,
        rows: &Rows<'_>,
        policy: Policy<'_>,
        out: &mut Extracted,
        whole: bool,
    ) -> Result<(), ExtractError> {
        let policy = Policy { shared: SharedRows::Broadcast, ..policy };
        self.begin(plan, &policy)?;
        if rows.plan != plan.identity().digest || rows.sources != plan.source_names.len() {
            let message = format!("rows were indexed with another model than {:?}", plan.name);
            return Err(ErrorKind::Operator { name: "write".into(), message }.into());
        }
        let limits = self.index.limits;
        if rows.len() > limits.max_batch_size {
            return Err(ErrorKind::TooManyRows { found: rows.len(), limit: limits.max_batch_size }.into());
        }
        if whole
            && let Some(batch) = rows.whole_batch()
            && self.write_from_batch(plan, batch, rows, policy, out)
        {
            return Ok(());
        }
        let mut index = std::mem::take(&mut self.rows_index);
        rows.lay_out(&mut index, limits);
        let bufs = rows.slices();
        let result = self.run(plan, Some(&index), &bufs, &policy, out);
        self.rows_index = index;
        result
    }

    /// `write` for rows that are rows of one ExampleBatch and nothing else
    /// (`Rows::whole_batch`): the batch is extracted whole, by the walk that
    /// copies a canonical Feature's values as one run, and the rows are
    /// copied out of its columns, a run of consecutive rows at once. The
    /// outputs are row by row what writing the rows gives (every operator
    /// computes a row from that row alone). False when the batch does not
    /// extract whole (a dropped row may be one that fails, or the whole
    /// batch's outputs exceed the bound): the rows are then written one by
    /// one, which reports what is wrong with the rows kept.
    fn write_from_batch(
        &mut self,
        plan: &Plan,
        batch: &[u8],
        rows: &Rows<'_>,
        policy: Policy<'_>,
        out: &mut Extracted,
    ) -> bool {
        let mut whole = std::mem::take(&mut self.whole);
        let done = self.extract(plan, Input::Batch(batch), policy, &mut whole).is_ok() && {
            let mut picks = std::mem::take(&mut self.picks);
            picks.clear();
            picks.extend(rows.batch_rows().map(|r| r as u32));
            let all = picks.len() == whole.batch_size && picks.iter().enumerate().all(|(i, &r)| r as usize == i);
            let done = if all {
                std::mem::swap(out, &mut whole);
                true
            } else {
                take_rows(&whole, &picks, out)
            };
            self.picks = picks;
            done
        };
        if done {
            out.batch_size = rows.len();
            out.stats = rows.stats();
        }
        self.whole = whole;
        done
    }

    /// Sets the call's bounds and marks the outputs it computes; refuses a
    /// selection that is not one of `Plan::select`'s.
    fn begin(&mut self, plan: &Plan, policy: &Policy<'_>) -> Result<(), ExtractError> {
        self.index.limits = policy.limits.unwrap_or(plan.limits);
        if let Some(outputs) = policy.outputs {
            check_selection(plan, outputs)?;
        }
        super::mark_needed(plan, policy.outputs, &mut self.needed);
        Ok(())
    }
}

/// Output indices must name visible outputs, each once (as `Plan::select`
/// gives them).
fn check_selection(plan: &Plan, outputs: &[usize]) -> Result<(), ExtractError> {
    let mut seen = vec![false; plan.outputs.len()];
    for &i in outputs {
        let fine = plan.outputs.get(i).is_some_and(|o| o.visible) && !std::mem::replace(&mut seen[i], true);
        if !fine {
            let message = format!("output index {i} is not a visible output of {:?} asked for once", plan.name);
            return Err(ErrorKind::Operator { name: "policy".into(), message }.into());
        }
    }
    Ok(())
}

/// `out` as rows `picks` of `whole`, column by column.
fn take_rows(whole: &Extracted, picks: &[u32], out: &mut Extracted) -> bool {
    out.columns.truncate(whole.columns.len());
    while out.columns.len() < whole.columns.len() {
        out.columns.push(crate::columns::NamedColumn {
            name: String::new(),
            shared: false,
            column: Default::default(),
        });
    }
    for (to, from) in out.columns.iter_mut().zip(&whole.columns) {
        if to.name != from.name {
            to.name.clone_from(&from.name);
        }
        to.shared = from.shared;
        if from.shared || !to.column.take_rows(&from.column, picks) {
            return false;
        }
    }
    true
}
