//! The near-line label join's calls (issue 23), for the job that joins
//! fex-server's logged requests with user actions: the model's
//! `label_join:` section as a dict, a logged request's join keys, and its
//! samples with actions attached (`fex::nearline`). Decoding runs with the
//! GIL released, as extraction does.

use fex::nearline::{self, NearlineError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

pyo3::create_exception!(
    fex,
    JoinError,
    PyValueError,
    "A logged request the label join cannot read: `offset` is the byte where decoding stopped, or None."
);

/// What a logged request is joined on (`fex::nearline::RequestKeys`).
#[pyclass(frozen, get_all, module = "fex._fex")]
pub struct RequestKeys {
    request_id: String,
    user_id: String,
    /// Milliseconds since the Unix epoch.
    time_ms: i64,
    refresh: bool,
    item_ids: Vec<String>,
    /// "batch" or "examples".
    payload: &'static str,
    rows: usize,
    model: String,
}

#[pymethods]
impl RequestKeys {
    fn __repr__(&self) -> String {
        format!(
            "RequestKeys(request_id={:?}, user_id={:?}, time_ms={}, refresh={}, rows={}, payload={:?}, model={:?})",
            self.request_id,
            self.user_id,
            self.time_ms,
            if self.refresh { "True" } else { "False" },
            self.rows,
            self.payload,
            self.model
        )
    }
}

/// `fex.JoinError` with `offset` set.
fn join_error(py: Python<'_>, e: &NearlineError) -> PyErr {
    let err = JoinError::new_err(e.to_string());
    match err.value(py).setattr("offset", e.offset()) {
        Ok(()) => err,
        Err(failed) => failed,
    }
}

/// The section's values a join job needs, or None without a section.
pub fn label_join<'py>(py: Python<'py>, plan: &fex::Plan) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(join) = plan.label_join() else { return Ok(None) };
    let millis = |d: std::time::Duration| d.as_millis() as u64;
    let dict = PyDict::new(py);
    dict.set_item("requests_back", join.requests_back)?;
    dict.set_item("after_ms", millis(join.after))?;
    dict.set_item("watermark_delay_ms", millis(join.watermark_delay))?;
    dict.set_item("late_actions", join.late_actions.as_str())?;
    dict.set_item("retention_ms", millis(join.retention))?;
    dict.set_item("has_refresh", join.refresh.is_some())?;
    Ok(Some(dict))
}

pub fn request_keys(py: Python<'_>, plan: &fex::Plan, logged: &[u8]) -> PyResult<RequestKeys> {
    let keys = py.detach(|| nearline::request_keys(plan, logged)).map_err(|e| join_error(py, &e))?;
    Ok(RequestKeys {
        request_id: keys.request_id,
        user_id: keys.user_id,
        time_ms: keys.time_ms,
        refresh: keys.refresh,
        item_ids: keys.item_ids,
        payload: keys.payload.as_str(),
        rows: keys.rows,
        model: keys.model,
    })
}

pub fn attach_actions<'py>(
    py: Python<'py>,
    logged: &[u8],
    actions: Vec<Vec<i32>>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let samples = py.detach(|| nearline::attach_actions(logged, &actions)).map_err(|e| join_error(py, &e))?;
    Ok(samples.iter().map(|s| PyBytes::new(py, s)).collect())
}
