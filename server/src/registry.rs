//! The model registry: every loaded model by name, each an immutable
//! `Arc<Model>`. A reload validates a changed file before it replaces the old
//! model in one atomic map insert; an invalid file is rejected and the old model
//! keeps serving. Requests hold their own `Arc`, so they finish on the plan
//! they started with. A rejection is reported once: until the file's text or
//! its error changes, later reloads keep it quiet.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dashmap::DashMap;
use fex::Plan;

/// A loaded model: its plan, where it came from, and its identity.
#[derive(Debug)]
pub struct Model {
    pub plan: Plan,
    /// The config's `version` (with a digest of its vocabulary files, if any),
    /// or a digest of everything when it sets none: `Plan::identity`.
    pub version: String,
    /// The file it was loaded from (`None` for the embedded default).
    pub path: Option<PathBuf>,
    digest: u64,
    /// What a forwarding model extracts for its upstream: the outputs and
    /// v2 tensors its mapping reads, resolved once on first use.
    upstream_selection: std::sync::OnceLock<Result<fex::oip::Selection, String>>,
}

impl Model {
    fn new(plan: Plan, path: Option<PathBuf>) -> Self {
        // The library computes the identity (config text and vocabulary
        // files), so training data can carry the same one.
        let (version, digest) = (plan.identity().version.clone(), plan.identity().digest);
        Self { plan, version, path, digest, upstream_selection: Default::default() }
    }

    /// The outputs and tensors the `upstream:` mapping reads (empty
    /// selection for a model without one).
    pub fn upstream_selection(&self) -> Result<&fex::oip::Selection, String> {
        let resolve = || {
            let Some(up) = &self.plan.upstream else { return Ok(fex::oip::Selection::default()) };
            fex::oip::select(&up.sources(), &self.plan.signature()).map_err(|e| e.to_string())
        };
        self.upstream_selection.get_or_init(resolve).as_ref().map_err(Clone::clone)
    }

    pub fn embedded_default() -> Self {
        Self::new(Plan::default_model(), None)
    }
}

pub use fex::catalog::LoadError;

/// What a reload did. `rejected` holds the files judged afresh: a file
/// rejected for the same reason as last time, with the same text, is left out.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReloadReport {
    pub loaded: Vec<String>,
    pub removed: Vec<String>,
    pub rejected: Vec<LoadError>,
}

/// Where the model configs come from.
#[derive(Debug, Clone)]
enum Source {
    Embedded,
    /// Every *.yaml / *.yml file of a directory.
    Dir(PathBuf),
    /// One config file, whatever its name.
    File(PathBuf),
}

#[derive(Debug)]
pub struct Registry {
    models: DashMap<String, Arc<Model>>,
    source: Source,
    /// Files rejected by the last reload: path → digest of text and error.
    rejected: Mutex<HashMap<PathBuf, u64>>,
}

impl Registry {
    /// Serves only the embedded default model.
    pub fn embedded_default() -> Self {
        let models = DashMap::new();
        models.insert("default".to_string(), Arc::new(Model::embedded_default()));
        Self { models, source: Source::Embedded, rejected: Mutex::default() }
    }

    /// Loads a directory of configs or one config file; at startup any
    /// invalid file is fatal.
    pub fn from_path(path: &Path) -> Result<Self, Vec<LoadError>> {
        let (registry, errors) = Self::open(path);
        if errors.is_empty() { Ok(registry) } else { Err(errors) }
    }

    /// Loads what it can from a directory or one file: the registry of the
    /// valid files, and the errors of the others (also "no model configs"
    /// when there is nothing to serve).
    pub fn open(path: &Path) -> (Self, Vec<LoadError>) {
        let source = match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Source::Dir(path.to_path_buf()),
            Ok(_) => Source::File(path.to_path_buf()),
            Err(e) => {
                let error = LoadError::cannot_read(path, &e);
                return (
                    Self { models: DashMap::new(), source: Source::Embedded, rejected: Mutex::default() },
                    vec![error],
                );
            }
        };
        let registry = Self { models: DashMap::new(), source, rejected: Mutex::default() };
        let mut errors = registry.reload().rejected;
        if registry.models.is_empty() && errors.is_empty() {
            errors.push(LoadError::no_configs(path));
        }
        (registry, errors)
    }

    pub fn get(&self, name: &str) -> Option<Arc<Model>> {
        self.models.get(name).map(|m| Arc::clone(&m))
    }

    /// Every model, sorted by name.
    pub fn all(&self) -> Vec<Arc<Model>> {
        let mut all: Vec<_> = self.models.iter().map(|m| Arc::clone(&m)).collect();
        all.sort_by(|a, b| a.plan.name.cmp(&b.plan.name));
        all
    }

    pub fn names(&self) -> Vec<String> {
        self.all().iter().map(|m| m.plan.name.clone()).collect()
    }

    /// Re-reads the configs: changed valid files replace their models,
    /// invalid ones are rejected (the old model stays), deleted files unload.
    pub fn reload(&self) -> ReloadReport {
        let mut report = ReloadReport::default();
        let (files, mut rejected) = match &self.source {
            Source::Embedded => return report,
            Source::Dir(dir) => read_dir(dir),
            Source::File(file) => read_file(file),
        };
        let mut seen: HashMap<String, PathBuf> = HashMap::new();
        for (path, text) in files {
            let judged = fex::catalog::compile(&path, &text)
                .and_then(|plan| self.offer(Model::new(plan, Some(path.clone())), &mut seen, &mut report));
            if let Err(error) = judged {
                rejected.push((error, fex::ops::digest(text.as_bytes())));
            }
        }
        // A model unloads when no valid file defines it any more, unless its
        // file was rejected this time (then the old model keeps serving).
        let gone: Vec<String> = self
            .models
            .iter()
            .filter(|m| {
                let Some(path) = &m.path else { return false };
                let redefined = seen.get(m.key()).is_some_and(|p| p == path);
                let rejected = rejected.iter().any(|(r, _)| &r.path == path);
                !redefined && !rejected
            })
            .map(|m| m.key().clone())
            .collect();
        for name in gone {
            self.models.remove(&name);
            report.removed.push(name);
        }
        report.rejected = self.judged_afresh(rejected);
        report
    }

    /// The rejections not already reported with the same text and error;
    /// remembers this reload's rejections (a file that loads is forgotten).
    fn judged_afresh(&self, rejected: Vec<(LoadError, u64)>) -> Vec<LoadError> {
        let mut last = self.rejected.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut now = HashMap::with_capacity(rejected.len());
        let mut fresh = Vec::new();
        for (error, text_digest) in rejected {
            let judgement = text_digest ^ fex::ops::digest(error.message.as_bytes()).rotate_left(1);
            if last.get(&error.path) != Some(&judgement) {
                fresh.push(error.clone());
            }
            now.insert(error.path, judgement);
        }
        *last = now;
        fresh
    }

    /// Installs a valid model unless another file already defined its name
    /// (then the error).
    fn offer(
        &self,
        model: Model,
        seen: &mut HashMap<String, PathBuf>,
        report: &mut ReloadReport,
    ) -> Result<(), LoadError> {
        let name = model.plan.name.clone();
        let path = model.path.clone().unwrap_or_default();
        if let Some(first) = seen.get(&name) {
            return Err(LoadError::duplicate(&path, &name, first));
        }
        seen.insert(name.clone(), path);
        let unchanged = self.models.get(&name).is_some_and(|old| old.digest == model.digest && old.path == model.path);
        if !unchanged {
            self.models.insert(name.clone(), Arc::new(model));
            report.loaded.push(name);
        }
        Ok(())
    }
}

/// Config texts read, and files that could not be read (each with the
/// digest of what was read: none). The library reads them, as `fex check`
/// does.
type Read = (Vec<(PathBuf, String)>, Vec<(LoadError, u64)>);

fn read_dir(dir: &Path) -> Read {
    with_no_digest(fex::catalog::read_dir(dir))
}

/// Reads the one config file; once deleted it holds no model (as a file
/// deleted from a directory).
fn read_file(path: &Path) -> Read {
    with_no_digest(fex::catalog::read_file(path))
}

fn with_no_digest((files, errors): fex::catalog::Texts) -> Read {
    (files, errors.into_iter().map(|e| (e, 0)).collect())
}
