//! `Plan`: a compiled model config, the library's `fex::Plan`, and the
//! extraction calls. Extraction runs with the GIL released, on an
//! `Extractor` taken from the plan's pool (one per concurrent caller), so
//! Python threads extract in parallel. A plan remembers its config text and
//! the bytes of the files it read, so it pickles (Spark ships it to
//! executors that have neither the config nor its vocabularies on disk).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fex::config::DEFAULT_MODEL_YAML;
use fex::files::{FileSource, Filesystem, InMemory};
use fex::{DataType, Extractor, Input, Layout, Policy, SharedRows};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::column::{dtype_name, layout_name};
use crate::errors::{config_error, extract_error};
use crate::extracted::Extracted;

/// Extractors kept for reuse; more concurrent callers than this make their own.
const POOL: usize = 16;

#[pyclass(frozen, module = "fex._fex")]
pub struct Plan {
    plan: Arc<fex::Plan>,
    text: String,
    base_dir: PathBuf,
    /// Every file the config read, by the path it was read at.
    files: Vec<(PathBuf, Vec<u8>)>,
    scratch: Mutex<Vec<Extractor>>,
}

/// Reads through another source and keeps what it read.
struct Recording<'a> {
    inner: &'a dyn FileSource,
    seen: Mutex<Vec<(PathBuf, Vec<u8>)>>,
}

impl FileSource for Recording<'_> {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let bytes = self.inner.read(path)?;
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((path.to_path_buf(), bytes.clone()));
        }
        Ok(bytes)
    }
}

impl Plan {
    /// The library's plan.
    pub fn inner(&self) -> &fex::Plan {
        &self.plan
    }

    /// The model compiled again with the two outputs that read each row's
    /// identity (`fex::offline::identity`), from the files it read the first
    /// time, and where they read.
    pub fn identity_plan(&self, py: Python<'_>) -> PyResult<(Plan, fex::offline::identity::IdentitySource)> {
        let (text, source) = fex::offline::identity::identity_yaml(&self.text, &self.plan)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let held: InMemory = self.files.iter().cloned().collect();
        Ok((Self::compile(py, text, self.base_dir.clone(), &held)?, source))
    }

    fn compile(py: Python<'_>, text: String, base_dir: PathBuf, files: &dyn FileSource) -> PyResult<Self> {
        let recording = Recording { inner: files, seen: Mutex::new(Vec::new()) };
        let plan = py.detach(|| fex::Plan::from_yaml_with(&text, &base_dir, &recording));
        let plan = plan.map_err(|e| config_error(py, &e))?;
        let files = recording.seen.into_inner().unwrap_or_default();
        Ok(Self { plan: Arc::new(plan), text, base_dir, files, scratch: Mutex::new(Vec::new()) })
    }

    fn extract(
        &self,
        py: Python<'_>,
        input: Input<'_>,
        outputs: Option<Vec<String>>,
        shared: &str,
    ) -> PyResult<Extracted> {
        let shared = match shared {
            "declared" => SharedRows::AsDeclared,
            "broadcast" => SharedRows::Broadcast,
            "once" => SharedRows::Once,
            other => {
                let msg = format!("shared={other:?}: expected \"declared\", \"broadcast\" or \"once\"");
                return Err(PyValueError::new_err(msg));
            }
        };
        let selected = match outputs {
            Some(names) => Some(self.plan.select(&names).map_err(|e| PyValueError::new_err(e.to_string()))?),
            None => None,
        };
        let mut extractor = self.scratch.lock().ok().and_then(|mut p| p.pop()).unwrap_or_default();
        let plan = &*self.plan;
        let policy = Policy { outputs: selected.as_deref(), shared, limits: None };
        let result = py.detach(|| {
            let mut out = fex::Extracted::default();
            extractor.extract(plan, input, policy, &mut out).map(|()| out)
        });
        if let Ok(mut pool) = self.scratch.lock()
            && pool.len() < POOL
        {
            pool.push(extractor);
        }
        result.map(Extracted::new).map_err(|e| extract_error(py, &e))
    }
}

/// The config text and the directory its file references resolve against.
fn config_source(config: &Bound<'_, PyAny>) -> PyResult<(String, PathBuf)> {
    if let Ok(s) = config.cast::<PyString>() {
        let s = s.to_cow()?;
        // One line naming a file (or a .yaml that is missing: say so, rather
        // than parse its name as YAML) is a path; anything else is YAML.
        let named = !s.contains('\n') && (s.ends_with(".yaml") || s.ends_with(".yml"));
        if !s.contains('\n') && (named || Path::new(s.as_ref()).is_file()) {
            return read_config(Path::new(s.as_ref()));
        }
        return Ok((s.to_string(), PathBuf::from(".")));
    }
    if let Ok(b) = config.cast::<PyBytes>() {
        let text = std::str::from_utf8(b.as_bytes()).map_err(|e| PyValueError::new_err(format!("config: {e}")))?;
        return Ok((text.to_string(), PathBuf::from(".")));
    }
    let path: PathBuf = config.extract()?;
    read_config(&path)
}

fn read_config(path: &Path) -> PyResult<(String, PathBuf)> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        let errors = fex::ConfigErrors::one(path.display().to_string(), e.to_string());
        Python::attach(|py| config_error(py, &errors))
    })?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Ok((text, dir.to_path_buf()))
}

/// `files=`: path as the config writes it → bytes, or → a file to read.
fn in_memory(files: &Bound<'_, PyDict>) -> PyResult<InMemory> {
    let mut held = InMemory::new();
    for (key, value) in files.iter() {
        let key: PathBuf = key.extract()?;
        let bytes = match value.cast::<PyBytes>() {
            Ok(b) => b.as_bytes().to_vec(),
            Err(_) => {
                let path: PathBuf = value.extract()?;
                std::fs::read(&path)?
            }
        };
        held.insert(key, bytes);
    }
    Ok(held)
}

#[pymethods]
impl Plan {
    /// Compiles a model config: YAML text, or a path (str or os.PathLike) to
    /// a YAML file. `files` maps the paths the config names (vocabularies)
    /// to their bytes or to files to read; without it they are read from
    /// disk, relative to the config file's directory.
    #[staticmethod]
    #[pyo3(signature = (config, files=None))]
    fn from_yaml(py: Python<'_>, config: &Bound<'_, PyAny>, files: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let (text, base_dir) = config_source(config)?;
        match files {
            Some(files) => Self::compile(py, text, PathBuf::new(), &in_memory(files)?),
            None => Self::compile(py, text, base_dir, &Filesystem),
        }
    }

    /// The embedded default model (what fex-server serves without --models).
    #[staticmethod]
    fn default(py: Python<'_>) -> PyResult<Self> {
        Self::compile(py, DEFAULT_MODEL_YAML.to_string(), PathBuf::from("."), &Filesystem)
    }

    /// Rebuilds a pickled plan from its config text and the files it read.
    #[staticmethod]
    fn _restore(py: Python<'_>, text: String, base_dir: PathBuf, files: Vec<(PathBuf, Vec<u8>)>) -> PyResult<Self> {
        let held: InMemory = files.into_iter().collect();
        Self::compile(py, text, base_dir, &held)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let py = slf.py();
        let this = slf.get();
        let files: Vec<(PathBuf, Bound<'py, PyBytes>)> =
            this.files.iter().map(|(p, b)| (p.clone(), PyBytes::new(py, b))).collect();
        let args = (this.text.as_str(), this.base_dir.clone(), files).into_pyobject(py)?.into_any();
        Ok((slf.getattr("_restore")?, args))
    }

    /// The model's name.
    #[getter]
    fn name(&self) -> &str {
        &self.plan.name
    }

    /// "native" or "monolith".
    #[getter]
    fn compat(&self) -> &'static str {
        self.plan.compat.as_str()
    }

    /// The model's identity: version string and digest of config and files.
    #[getter]
    fn identity(&self) -> Identity {
        let id = self.plan.identity();
        Identity { version: id.version.clone(), digest: id.digest }
    }

    /// The output signature, in order.
    #[getter]
    fn outputs(&self) -> Vec<TensorSpec> {
        self.plan.signature().into_iter().map(TensorSpec::from).collect()
    }

    /// The names of the `offline:` section's transforms, in order (empty
    /// without one): what `fex extract` and `fex.run` apply to the rows.
    #[getter]
    fn offline_transforms(&self) -> Vec<&'static str> {
        self.plan.offline.transforms.iter().map(|t| t.name()).collect()
    }

    /// The config's text.
    #[getter]
    fn config_text(&self) -> &str {
        &self.text
    }

    /// The `label_join:` section's values a join job needs (durations in
    /// milliseconds), or None when the config has no such section.
    #[getter]
    fn label_join<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        crate::nearline::label_join(py, &self.plan)
    }

    /// The model compiled again with the two outputs that read each row's
    /// identity (`_fex_request_id`, `_fex_request_time`: the LineId fields
    /// `fex extract --format iceberg` reads), and the microseconds in one
    /// unit of the time they read (`fex.spark.extract(identity=True)`).
    fn _with_identity(&self, py: Python<'_>) -> PyResult<(Plan, i64)> {
        let (plan, source) = self.identity_plan(py)?;
        Ok((plan, source.micros(1)))
    }

    /// A logged request's (`fex.v1.LoggedRequest`) join keys, read as the
    /// `label_join:` section says; `fex.JoinError` when it cannot be.
    fn request_keys(&self, py: Python<'_>, logged: &[u8]) -> PyResult<crate::nearline::RequestKeys> {
        crate::nearline::request_keys(py, &self.plan, logged)
    }

    /// The logged request's samples with `actions[row]` appended to each
    /// row's LineId.actions: one ExampleBatch, or one Example per row.
    fn attach_actions<'py>(
        &self,
        py: Python<'py>,
        logged: &[u8],
        actions: Vec<Vec<i32>>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        crate::nearline::attach_actions(py, logged, actions)
    }

    /// Extracts one serialized ExampleBatch. `outputs` selects outputs by
    /// name (default: all); `shared` is "declared" (as each output says),
    /// "broadcast" (every SHARED feature on every row) or "once".
    #[pyo3(signature = (data, outputs=None, shared="declared"))]
    fn extract_batch(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyBytes>,
        outputs: Option<Vec<String>>,
        shared: &str,
    ) -> PyResult<Extracted> {
        self.extract(py, Input::Batch(data.as_bytes()), outputs, shared)
    }

    /// Extracts serialized Examples, one row each.
    #[pyo3(signature = (samples, outputs=None, shared="declared"))]
    fn extract_examples(
        &self,
        py: Python<'_>,
        samples: Vec<Bound<'_, PyBytes>>,
        outputs: Option<Vec<String>>,
        shared: &str,
    ) -> PyResult<Extracted> {
        let bufs: Vec<&[u8]> = samples.iter().map(|b| b.as_bytes()).collect();
        self.extract(py, Input::Examples(&bufs), outputs, shared)
    }

    /// Extracts legacy `parser.proto.Instance`s, one row each.
    #[pyo3(signature = (samples, outputs=None, shared="declared"))]
    fn extract_instances(
        &self,
        py: Python<'_>,
        samples: Vec<Bound<'_, PyBytes>>,
        outputs: Option<Vec<String>>,
        shared: &str,
    ) -> PyResult<Extracted> {
        let bufs: Vec<&[u8]> = samples.iter().map(|b| b.as_bytes()).collect();
        self.extract(py, Input::Instances(&bufs), outputs, shared)
    }

    fn __repr__(&self) -> String {
        format!(
            "Plan(name={:?}, version={:?}, outputs={})",
            self.plan.name,
            self.plan.identity().version,
            self.outputs().len()
        )
    }
}

/// A model's identity (`fex::config::Identity`).
#[pyclass(frozen, module = "fex._fex", get_all)]
pub struct Identity {
    /// The declared version (with `+files.<hex>` when the model reads files).
    version: String,
    /// XXH64 of the config text and the files' digests.
    digest: u64,
}

#[pymethods]
impl Identity {
    fn __repr__(&self) -> String {
        format!("Identity(version={:?}, digest={:#018x})", self.version, self.digest)
    }
}

/// One output of the signature.
#[pyclass(frozen, module = "fex._fex", get_all)]
pub struct TensorSpec {
    name: String,
    /// "ragged", "dense", "strings" or "keyed_jagged".
    layout: &'static str,
    /// numpy name of the values' type ("bytes" for strings).
    dtype: &'static str,
    /// -1 for the rows and any ragged dimension.
    shape: Vec<i64>,
    /// numpy name of the row splits' type (None for dense outputs).
    splits_dtype: Option<&'static str>,
    /// Returned once with rows = 1 when its list is SHARED.
    shared_once: bool,
}

impl From<fex::proto::fex_v1::TensorSpec> for TensorSpec {
    fn from(s: fex::proto::fex_v1::TensorSpec) -> Self {
        let layout = Layout::try_from(s.layout).unwrap_or(Layout::Unspecified);
        let splits = DataType::try_from(s.splits_dtype).unwrap_or(DataType::Unspecified);
        Self {
            name: s.name,
            layout: layout_name(layout),
            dtype: dtype_name(DataType::try_from(s.dtype).unwrap_or(DataType::Unspecified)),
            shape: s.shape,
            splits_dtype: (splits != DataType::Unspecified).then(|| dtype_name(splits)),
            shared_once: s.shared_once,
        }
    }
}

#[pymethods]
impl TensorSpec {
    fn __repr__(&self) -> String {
        format!(
            "TensorSpec(name={:?}, layout={:?}, dtype={:?}, shape={:?}, shared_once={})",
            self.name,
            self.layout,
            self.dtype,
            self.shape,
            if self.shared_once { "True" } else { "False" }
        )
    }
}
