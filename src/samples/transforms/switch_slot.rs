//! `switch_slot_batch` (bytedance/monolith, monolith/native_training/data/
//! kernels/ragged_feature_kernel.cc, `SwitchSlotBatchOp`, lines 99-281):
//! the fids of the configured features move to a new slot, in place or as
//! a new feature `<name>_<suffix>`. The rewritten Features are new owned
//! bytes the row points to (`Rows::set_features`); the sample is untouched.

use bytes::Bytes;

use super::row::Split;
use super::rowwise::{OwnedFeatures, RowEdit};
use crate::config::Plan;
use crate::config::offline::{SwitchSlot, SwitchSlotBatch};
use crate::extract::Rows;
use crate::view::{ExampleView, FeatureKind, FeatureView};
use crate::wire::{DecodeError, len_field};

/// reader_util.h lines 50-56: the slot above bit 54 (v1) or 48 (v2), the
/// fid's own bits below it. A v1 fid holds 10 bits of slot, so a slot above
/// 1023 keeps its low 10 bits there, the rest shifted out, as in the kernel
/// (config allows slots up to 32767, what a v2 fid holds).
const V1_MASK: u64 = (1 << 54) - 1;
const V2_MASK: u64 = (1 << 48) - 1;

/// Each feature's source in the plan, and its suffixed copy's.
pub(super) fn sources(plan: &Plan, t: &SwitchSlotBatch) -> Vec<(Option<usize>, Option<usize>)> {
    let suffixed = |s: &SwitchSlot| format!("{}_{}", s.feature, t.suffix);
    t.features.iter().map(|s| (plan.source_of(s.feature.as_bytes()), plan.source_of(suffixed(s).as_bytes()))).collect()
}

/// A named feature of the row's override Example being built.
struct Entry {
    name: Vec<u8>,
    body: Vec<u8>,
    source: Option<usize>,
}

/// The row with its configured features switched: in place, a fid list's
/// fids take the slot, any other Feature stays (lines 180-196); otherwise a
/// feature `<name>_<suffix>` is added holding the switched fid list, or
/// nothing for another Feature (lines 197-215). A row without the feature
/// is left as it is.
pub(super) fn switch<'r>(
    t: &SwitchSlotBatch,
    sources: &[(Option<usize>, Option<usize>)],
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<RowEdit, DecodeError> {
    let mut found: Vec<Option<FeatureView<'r>>> = vec![None; t.features.len()];
    split.features(rows, row, |name, f| {
        if let Some(i) = t.features.iter().position(|s| s.feature.as_bytes() == name) {
            found[i] = Some(*f);
        }
    })?;
    let mut entries = Vec::new();
    for ((s, f), &(own, suffixed)) in t.features.iter().zip(&found).zip(sources) {
        let Some(f) = f else { continue };
        let switched = switched(f, s.slot)?;
        match (s.inplace, switched) {
            (true, Some(body)) => entries.push(Entry { name: s.feature.clone().into_bytes(), body, source: own }),
            (true, None) => {}
            (false, body) => {
                let name = format!("{}_{}", s.feature, t.suffix).into_bytes();
                entries.push(Entry { name, body: body.unwrap_or_default(), source: suffixed });
            }
        }
    }
    if entries.is_empty() {
        return Ok(RowEdit::keep());
    }
    let features = Some(example(rows.features_override(row), entries)?);
    Ok(RowEdit { features, ..RowEdit::keep() })
}

/// The Feature with its fids in `slot`, if it is a fid list.
fn switched(f: &FeatureView<'_>, slot: u64) -> Result<Option<Vec<u8>>, DecodeError> {
    let (kind, shift, mask) = match f.kind() {
        Some(FeatureKind::FidV1List) => (FeatureKind::FidV1List, 54, V1_MASK),
        Some(FeatureKind::FidV2List) => (FeatureKind::FidV2List, 48, V2_MASK),
        _ => return Ok(None),
    };
    let mut fids = Vec::new();
    f.fid_runs(|run| {
        for c in run.chunks_exact(8) {
            let fid = crate::view::le_u64(c);
            fids.extend_from_slice(&((slot << shift) | (fid & mask)).to_le_bytes());
        }
    })?;
    let list = if fids.is_empty() { Vec::new() } else { len_field(1, &fids) };
    Ok(Some(len_field(kind as u32, &list)))
}

/// An Example of the features an earlier override gave the row (those not
/// replaced) and the new ones, with the byte range of each new Feature the
/// plan reads.
fn example(earlier: Option<&[u8]>, entries: Vec<Entry>) -> Result<OwnedFeatures, DecodeError> {
    let mut out = Vec::new();
    if let Some(bytes) = earlier {
        for entry in ExampleView::parse(bytes, 0)?.features() {
            let entry = entry?;
            if !entries.iter().any(|e| e.name == entry.name) {
                // Kept as it came: a name without a Feature stays without one
                // (negative_gen names an item feature the item lacks so).
                out.extend(match entry.feature {
                    Some((body, _)) => named(entry.name, body),
                    None => len_field(1, &len_field(1, entry.name)),
                });
            }
        }
    }
    let mut cells = Vec::new();
    for e in entries {
        out.extend(named(&e.name, &e.body));
        if let Some(source) = e.source {
            let end = out.len() as u32;
            cells.push((source, end - e.body.len() as u32, end));
        }
    }
    Ok((Bytes::from(out), cells))
}

/// A NamedFeature `{name, feature}` as an Example's field 1.
fn named(name: &[u8], body: &[u8]) -> Vec<u8> {
    let mut nf = len_field(1, name);
    nf.extend(len_field(2, body));
    len_field(1, &nf)
}
