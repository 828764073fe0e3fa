//! Stage two of config parsing: each entry read by `raw` is checked against
//! the rules of its kind or op, and sample-reading features get the index of
//! the list they read. Every problem is collected with its path; nothing here
//! builds the final [`Plan`](super::Plan) (that is `compile`).

mod kinds;
mod line_id;
mod map_lists;
mod numeric;
mod offline;
mod offline_rows;
mod ops;
mod transforms;
mod values;

use std::path::{Path, PathBuf};

use super::ConfigError;
use super::plan::{Compat, Limits, Output};
use super::raw::{Body, RawModel};
use crate::files::FileSource;

/// A model that passed every check, ready to compile.
#[derive(Debug)]
pub(super) struct Checked {
    pub name: String,
    pub version: String,
    pub compat: Compat,
    pub limits: Limits,
    /// Sample-reading outputs first, then derived ones in dependency order.
    pub outputs: Vec<Output>,
    /// The named lists the outputs read, indexed by their `source`.
    pub source_names: Vec<String>,
    /// Files the config read (vocabularies), with their digests.
    pub files: Vec<(PathBuf, u64)>,
    pub offline: super::offline::Offline,
    pub upstream: Option<super::upstream::Upstream>,
    pub label_join: Option<super::label_join::LabelJoin>,
}

/// Where files named in the config are read from.
#[derive(Clone, Copy)]
pub(super) struct Files<'a> {
    pub source: &'a dyn FileSource,
    pub base_dir: &'a Path,
}

/// Checks `raw`; `errors` holds what stage one found and gains the rest.
pub(super) fn check(raw: RawModel, files: Files<'_>, errors: Vec<ConfigError>) -> Result<Checked, Vec<ConfigError>> {
    let mut cx =
        Checker { stage_one: errors.len(), errors, compat: Compat::Native, files: Vec::new(), sources: Vec::new() };
    cx.compat = cx.compat_mode(raw.compat.as_deref());
    if raw.name.trim().is_empty() && !cx.reported("name") {
        cx.error("name", "must not be empty");
    }
    let limits = cx.limits(&raw.limits);
    let mut outputs = Vec::new();
    let mut per_position = Vec::new();
    let mut failed = Vec::new();
    let mut op_entries = Vec::new();
    let names = raw.features.iter().map(|e| e.name.clone()).collect();
    for mut entry in raw.features {
        match std::mem::replace(&mut entry.body, Body::Broken) {
            Body::Kind(kind) => match cx.kind(&entry, &kind) {
                Some((out, positions)) => {
                    if positions {
                        per_position.push(outputs.len());
                    }
                    outputs.push(out);
                }
                None => failed.push(entry.name),
            },
            Body::Op(op) => op_entries.push((entry, op)),
            Body::Broken => failed.push(entry.name),
        }
    }
    kinds::expand_positions(&mut outputs, &per_position);
    ops::resolve(&mut cx, &mut outputs, op_entries, ops::Declared { names, failed }, files);
    let offline = cx.offline(&raw.offline, files);
    let upstream = raw.upstream.as_ref().and_then(|u| {
        let signature: Vec<_> = outputs.iter().filter(|o| o.visible).map(Output::spec).collect();
        super::upstream::check(u, &signature, files.base_dir, &mut cx.errors)
    });
    let label_join = raw.label_join.as_ref().and_then(|l| super::label_join::check(l, &mut cx.errors));
    if !cx.errors.is_empty() {
        return Err(cx.errors);
    }
    let Checker { compat, files, sources, .. } = cx;
    let source_names = sources;
    Ok(Checked {
        name: raw.name,
        version: raw.version,
        compat,
        limits,
        outputs,
        source_names,
        files,
        offline,
        upstream,
        label_join,
    })
}

/// Collects errors while the stages check a model.
pub(super) struct Checker {
    errors: Vec<ConfigError>,
    /// How many of `errors` stage one found: a key it reported (a value of the
    /// wrong type) was left out, and must not be reported again as missing.
    stage_one: usize,
    compat: Compat,
    files: Vec<(PathBuf, u64)>,
    /// Sample list names, in first-use order: `Op::*::source` indexes them.
    sources: Vec<String>,
}

impl Checker {
    pub(super) fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        let path = path.into();
        if !self.reported(&path) {
            self.errors.push(ConfigError { path, message: message.into() });
        }
    }

    fn reported(&self, path: &str) -> bool {
        self.errors[..self.stage_one].iter().any(|e| e.path == path)
    }

    /// How many errors so far, to tell whether a check added any.
    pub(super) fn count(&self) -> usize {
        self.errors.len()
    }

    /// The index of sample list `name`, added on first use.
    pub(super) fn source(&mut self, name: &str) -> usize {
        match self.sources.iter().position(|s| s == name) {
            Some(i) => i,
            None => {
                self.sources.push(name.to_string());
                self.sources.len() - 1
            }
        }
    }

    fn compat_mode(&mut self, compat: Option<&str>) -> Compat {
        match compat {
            None | Some("native") => Compat::Native,
            Some("monolith") => Compat::Monolith,
            Some(other) => {
                self.error("compat", format!("unknown mode {other:?}, expected native or monolith"));
                Compat::Native
            }
        }
    }

    fn limits(&mut self, raw: &super::raw::RawLimits) -> Limits {
        let mut limits = Limits::default();
        if let Some(n) = raw.max_batch_size {
            if n == 0 || n > 1 << 24 {
                self.error("limits.max_batch_size", format!("found {n}, allowed 1..=16777216"));
            }
            limits.max_batch_size = n as usize;
        }
        if let Some(n) = raw.max_output_bytes {
            if n == 0 {
                self.error("limits.max_output_bytes", "found 0, must be positive");
            }
            limits.max_output_bytes = usize::try_from(n).unwrap_or(usize::MAX);
        }
        limits
    }
}
