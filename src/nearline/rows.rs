//! The rows of a logged request's samples, read as the extractor reads them:
//! a row's LineId is its `__LINE_ID__` feature's bytes_list[0], else (for an
//! Example) field 100; a named feature of an ExampleBatch row is feature
//! `row` of its list, or feature 0 of a SHARED list.

use crate::view::{ExampleView, FeatureKind, FeatureView, LineIdView, ListEntry, ListType};
use crate::wire::{DecodeError, Reader, WireType, Within};

use super::NearlineError;
use super::logged::Samples;

pub(super) const LINE_ID: &[u8] = b"__LINE_ID__";

/// One named list of a batch, its Features located.
#[derive(Debug)]
pub(super) struct List<'a> {
    pub entry: ListEntry<'a>,
    pub ty: ListType,
    pub features: Vec<(&'a [u8], usize)>,
}

impl<'a> List<'a> {
    pub fn decode(entry: ListEntry<'a>) -> Result<Self, DecodeError> {
        let mut features = Vec::new();
        let ty = entry.decode(|_, body, at| {
            features.push((body, at));
            Ok(())
        })?;
        Ok(Self { entry, ty, features })
    }

    /// Row `row`'s Feature, if the list has one for it.
    pub fn feature(&self, row: usize) -> Option<(&'a [u8], usize)> {
        let i = if self.ty == ListType::Shared { 0 } else { row };
        self.features.get(i).copied()
    }
}

/// An ExampleBatch's top level: its batch size and its lists, located.
#[derive(Debug)]
pub(super) struct Batch<'a> {
    pub batch_size: i64,
    pub lists: Vec<ListEntry<'a>>,
}

impl<'a> Batch<'a> {
    pub fn parse(buf: &'a [u8], base: usize) -> Result<Self, DecodeError> {
        let mut out = Self { batch_size: 0, lists: Vec::new() };
        let mut r = Reader::new(buf, base);
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            match (field, wire) {
                (1, WireType::Len) => {
                    let index = out.lists.len();
                    let (body, base) = r.len_delimited().within("named_feature_list", Some(index))?;
                    out.lists.push(ListEntry { body, base, index });
                }
                (3, WireType::Varint) => out.batch_size = i64::from(r.varint().within("batch_size", None)? as i32),
                (1 | 3, _) => return Err(r.wrong_wire(field, wire, "its declared type")),
                _ => r.skip(field, wire)?,
            }
        }
        Ok(out)
    }

    /// The last list named `name` (a repeated name resolves to the last).
    pub fn list(&self, name: &[u8]) -> Result<Option<ListEntry<'a>>, DecodeError> {
        let mut found = None;
        for entry in &self.lists {
            if entry.name()? == name {
                found = Some(*entry);
            }
        }
        Ok(found)
    }
}

/// The rows of a request, with the lists the keys need decoded once.
pub(super) enum Rows<'a> {
    Batch { rows: usize, lists: Vec<(&'a [u8], List<'a>)> },
    Examples(Vec<ExampleView<'a>>),
}

impl<'a> Rows<'a> {
    /// Reads `samples`; `names` are the lists a batch's keys read.
    pub fn new(samples: &Samples<'a>, names: &[&'a [u8]], max_rows: usize) -> Result<Self, NearlineError> {
        match samples {
            Samples::Batch(buf, at) => {
                let batch = Batch::parse(buf, *at).map_err(|e| e.within("example_batch", None))?;
                let rows = checked_rows(batch.batch_size, max_rows)?;
                let mut lists = Vec::new();
                for name in names {
                    if let Some(entry) = batch.list(name).map_err(|e| e.within("example_batch", None))? {
                        lists.push((*name, List::decode(entry).map_err(|e| e.within("example_batch", None))?));
                    }
                }
                Ok(Self::Batch { rows, lists })
            }
            Samples::Examples(all) => {
                if all.len() > max_rows {
                    return Err(NearlineError::BatchSize { found: all.len() as i64, limit: max_rows });
                }
                let views = all.iter().enumerate().map(|(i, (buf, at))| {
                    ExampleView::parse(buf, *at).map_err(|e| e.within("example", Some(i)).within("examples", None))
                });
                Ok(Self::Examples(views.collect::<Result<_, _>>()?))
            }
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Self::Batch { rows, .. } => *rows,
            Self::Examples(all) => all.len(),
        }
    }

    /// Row `row`'s feature `name`, if it has one.
    pub fn feature(&self, name: &[u8], row: usize) -> Result<Option<FeatureView<'a>>, DecodeError> {
        self.feature_at(name, row)?.map(|(body, at)| FeatureView::parse(body, at)).transpose()
    }

    /// Row `row`'s feature `name` as bytes and their offset.
    fn feature_at(&self, name: &[u8], row: usize) -> Result<Option<(&'a [u8], usize)>, DecodeError> {
        Ok(match self {
            Self::Batch { lists, .. } => lists.iter().find(|(n, _)| *n == name).and_then(|(_, list)| list.feature(row)),
            Self::Examples(all) => match all.get(row) {
                Some(view) => named_feature(view, name)?,
                None => None,
            },
        })
    }

    /// Row `row`'s LineId, found as the extractor finds it.
    pub fn line_id(&self, row: usize) -> Result<Option<LineIdView<'a>>, DecodeError> {
        if let Some((body, at)) = self.feature_at(LINE_ID, row)? {
            let f = FeatureView::parse(body, at)?;
            if f.kind() == Some(FeatureKind::BytesList)
                && let Some(b) = f.first_bytes()?
            {
                // The value is a slice of the Feature: its offset follows.
                return Ok(Some(LineIdView::new(b, at + (b.as_ptr() as usize - body.as_ptr() as usize))));
            }
        }
        Ok(match self {
            Self::Examples(all) => all.get(row).and_then(|v| v.line_id()).map(|(b, at)| LineIdView::new(b, at)),
            Self::Batch { .. } => None,
        })
    }
}

/// An Example's named feature `name` (the last of that name).
pub(super) fn named_feature<'a>(view: &ExampleView<'a>, name: &[u8]) -> Result<Option<(&'a [u8], usize)>, DecodeError> {
    let mut found = None;
    for entry in view.features() {
        let entry = entry?;
        if entry.name == name {
            found = entry.feature;
        }
    }
    Ok(found)
}

/// A batch size as a row count, bounded by the plan's limit.
pub(super) fn checked_rows(batch_size: i64, max_rows: usize) -> Result<usize, NearlineError> {
    usize::try_from(batch_size)
        .ok()
        .filter(|&n| n <= max_rows)
        .ok_or(NearlineError::BatchSize { found: batch_size, limit: max_rows })
}
