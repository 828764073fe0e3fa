//! The last stage: a checked model becomes an immutable [`Plan`]: the reserved
//! lists become ordinary sources, the name index is built, and the model's
//! [`Identity`] is computed once. Also the `Plan` constructors, which run the
//! stages in their one order: raw → check → compile.

use std::path::{Path, PathBuf};

use xxhash_rust::xxh64::Xxh64;

use super::check::{self, Checked, Files};
use super::plan::{Compat, Identity, Op, Output, Plan, Source};
use super::{ConfigErrors, raw};
use crate::files::{FileSource, Filesystem};

impl Plan {
    /// Parses and validates a YAML model config. Relative file references
    /// (vocabularies) resolve against the current directory.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigErrors> {
        Self::from_yaml_in(text, Path::new("."))
    }

    /// Parses a config whose file references resolve against `base_dir`.
    pub fn from_yaml_in(text: &str, base_dir: &Path) -> Result<Self, ConfigErrors> {
        Self::from_yaml_with(text, base_dir, &Filesystem)
    }

    /// Parses a config whose files (vocabularies) are read through `files`
    /// at `base_dir.join(name)`: in-memory bytes, for instance.
    pub fn from_yaml_with(text: &str, base_dir: &Path, files: &dyn FileSource) -> Result<Self, ConfigErrors> {
        let mut errors = Vec::new();
        let Some(raw) = raw::parse(text, &mut errors) else { return Err(ConfigErrors(errors)) };
        let checked = check::check(raw, Files { source: files, base_dir }, errors).map_err(ConfigErrors)?;
        Ok(compile(checked, text))
    }

    /// Reads and parses a config file; references resolve against its directory.
    pub fn from_file(path: &Path) -> Result<Self, ConfigErrors> {
        let text =
            std::fs::read_to_string(path).map_err(|e| ConfigErrors::one(path.display().to_string(), e.to_string()))?;
        Self::from_yaml_in(&text, path.parent().unwrap_or(Path::new(".")))
    }

    /// The embedded default model.
    pub fn default_model() -> Self {
        Self::from_yaml(super::DEFAULT_MODEL_YAML).expect("the embedded default model is valid")
    }
}

fn compile(checked: Checked, text: &str) -> Plan {
    let Checked { name, version, compat, limits, outputs, mut source_names, files, offline, upstream, label_join } =
        checked;
    let mut index = super::names::NameIndex::default();
    source_names.iter().enumerate().for_each(|(i, n)| index.insert(n.as_bytes(), i));
    let needs = |s: Source| outputs.iter().any(|o: &Output| o.source() == s);
    let meta_fallback = outputs.iter().any(|o| matches!(o.op, Op::Dense { meta: Some(_), .. }));
    // The reserved lists become ordinary sources, so gathering treats every
    // list alike; only the ops that read them know they are special.
    let mut reserve = |needed: bool, name: &str| {
        needed.then(|| {
            index.insert(name.as_bytes(), source_names.len());
            source_names.push(name.to_string());
            source_names.len() - 1
        })
    };
    let line_id_source = reserve(needs(Source::LineId) || meta_fallback, "__LINE_ID__");
    let label_source = reserve(needs(Source::Label), "__LABEL__");
    let weight_source = reserve(needs(Source::Weight), "instance_weight");
    let label_list_source = reserve(needs(Source::Label) && compat == Compat::Monolith, "label");
    let identity = identity(&version, text, &files);
    let files = files.into_iter().map(|(path, _)| path).collect();
    let names = super::names::NameFilter::new(index.names());
    static COMPILED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut plan = Plan {
        name,
        version,
        compat,
        limits,
        outputs,
        source_names,
        index,
        names,
        line_id_source,
        label_source,
        weight_source,
        label_list_source,
        files,
        identity,
        offline,
        upstream,
        label_join,
        uid: COMPILED.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        output_names: Default::default(),
        everything: Default::default(),
    };
    plan.output_names = super::names::NameList::new(plan.outputs.iter().map(|o| o.name.as_str()));
    plan
}

/// The model's identity: a digest of the config text and of every file it
/// read (in config order), and the version string the server reports.
pub(super) fn identity(version: &str, text: &str, files: &[(PathBuf, u64)]) -> Identity {
    let mut of_files = Xxh64::new(0);
    files.iter().for_each(|(_, d)| of_files.update(&d.to_le_bytes()));
    let files_digest = of_files.digest();
    let mut all = Xxh64::new(0);
    all.update(&crate::ops::digest(text.as_bytes()).to_le_bytes());
    all.update(&files_digest.to_le_bytes());
    let digest = all.digest();
    let version = match (version.is_empty(), files.is_empty()) {
        (true, _) => format!("{digest:016x}"),
        (false, true) => version.to_string(),
        // The declared version, marked with the files it was built from.
        (false, false) => format!("{version}+files.{:08x}", files_digest as u32),
    };
    Identity { version, digest }
}
