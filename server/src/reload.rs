//! Reloads and the health they decide: each reload re-reads the models, logs
//! and counts the outcome, and turns health NOT_SERVING while no model is
//! loaded (SERVING again once one is). Reloads run one at a time, so a timer
//! tick and a SIGHUP cannot interleave their health updates.

use std::sync::Arc;

use tokio::sync::watch;
use tonic_health::server::HealthReporter;

use crate::metrics::{Metrics, ResultLabel};
use crate::registry::{Registry, ReloadReport};
use crate::service::ExtractorService;
use crate::stub::feature_extractor_server::FeatureExtractorServer;

/// Everything a reload updates. Cheap to clone (shared handles).
#[derive(Clone)]
pub(crate) struct Reloader {
    pub registry: Arc<Registry>,
    pub metrics: Arc<Metrics>,
    pub health: HealthReporter,
    /// Whether health says SERVING; held for the whole of a reload, and by
    /// the drain, so the two cannot interleave.
    serving: Arc<tokio::sync::Mutex<bool>>,
    /// True once the drain has started: health stays NOT_SERVING.
    drained: watch::Receiver<bool>,
}

impl Reloader {
    /// Sets health from the registry as it is now.
    pub async fn new(
        registry: Arc<Registry>,
        metrics: Arc<Metrics>,
        health: HealthReporter,
        drained: watch::Receiver<bool>,
    ) -> Self {
        let serving = !registry.all().is_empty();
        metrics.models.set(registry.all().len() as i64);
        set_health(&health, serving).await;
        Self { registry, metrics, health, serving: Arc::new(tokio::sync::Mutex::new(serving)), drained }
    }

    /// Reloads, logs and counts; health follows unless the drain has
    /// started (then it stays NOT_SERVING).
    pub async fn reload(&self) -> ReloadReport {
        let mut serving = self.serving.lock().await;
        let report = self.registry.reload();
        self.record(&report);
        let loaded = !self.registry.all().is_empty();
        if loaded != *serving {
            if loaded {
                tracing::info!(models = %self.registry.names().join(", "), "a model is loaded again: health is SERVING");
            } else {
                tracing::warn!("no model is loaded: health is NOT_SERVING until a model config loads");
            }
            *serving = loaded;
            if !*self.drained.borrow() {
                set_health(&self.health, loaded).await;
            }
        }
        report
    }

    /// The drain: health NOT_SERVING for good.
    pub async fn drain(&self) {
        let mut serving = self.serving.lock().await;
        *serving = false;
        set_health(&self.health, false).await;
    }

    fn record(&self, report: &ReloadReport) {
        for name in &report.loaded {
            tracing::info!(model = %name, "model loaded");
        }
        for name in &report.removed {
            tracing::info!(model = %name, "model unloaded: its config file is gone");
        }
        for e in &report.rejected {
            tracing::error!(path = %e.path.display(), error = %e.message, "model config rejected; the previous version keeps serving");
        }
        let count = |result: &str, n: usize| {
            self.metrics.reloads.get_or_create(&ResultLabel { result: result.into() }).inc_by(n as u64)
        };
        count("ok", report.loaded.len());
        count("rejected", report.rejected.len());
        self.metrics.models.set(self.registry.all().len() as i64);
    }
}

/// Health of the server ("") and of fex.v1.FeatureExtractor, which always
/// agree.
pub(crate) async fn set_health(health: &HealthReporter, serving: bool) {
    use tonic_health::ServingStatus::{NotServing, Serving};
    let status = if serving { Serving } else { NotServing };
    health.set_service_status("", status).await;
    let name = <FeatureExtractorServer<ExtractorService> as tonic::server::NamedService>::NAME;
    health.set_service_status(name, status).await;
}
