//! Prometheus metrics (prometheus-client) and the plain-HTTP endpoint that
//! serves them with the health probes.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServiceLabels {
    service: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    service: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourcePhaseLabels {
    service: String,
    namespace: String,
    name: String,
    phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    service: String,
    phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MigrationLabels {
    crd: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CrdLabels {
    crd: String,
}

fn phase_buckets() -> Histogram {
    // 0.5 s to about 2.3 h.
    Histogram::new(exponential_buckets(0.5, 2.0, 15))
}

fn reconcile_buckets() -> Histogram {
    // 1 ms to about 16 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// Every metric the operator exports.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ServiceLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    reconcile_duration: Family<ServiceLabels, Histogram>,
    phase: Family<ResourcePhaseLabels, Gauge>,
    phase_duration: Family<PhaseLabels, Histogram>,
    current_phase: Mutex<HashMap<(String, String, String), String>>,
    webhook_duration: Family<ServiceLabels, Histogram>,
    migrations: Family<MigrationLabels, Counter>,
    migrated_objects: Family<CrdLabels, Counter>,
    other_replicas: Counter,
    ready: AtomicBool,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("ratchet");
        let reconciles = Family::<ServiceLabels, Counter>::default();
        let errors = Family::<ErrorLabels, Counter>::default();
        let reconcile_duration = Family::<ServiceLabels, Histogram>::new_with_constructor(
            reconcile_buckets as fn() -> Histogram,
        );
        let phase = Family::<ResourcePhaseLabels, Gauge>::default();
        let phase_duration = Family::<PhaseLabels, Histogram>::new_with_constructor(
            phase_buckets as fn() -> Histogram,
        );
        let webhook_duration = Family::<ServiceLabels, Histogram>::new_with_constructor(
            reconcile_buckets as fn() -> Histogram,
        );
        registry.register("reconciles", "Reconcile passes", reconciles.clone());
        registry.register(
            "reconcile_errors",
            "Reconcile passes that failed, by reason",
            errors.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time spent in one reconcile pass",
            reconcile_duration.clone(),
        );
        registry.register(
            "upgrade_phase",
            "1 for the upgrade phase each resource is in (phase=\"none\" in steady state)",
            phase.clone(),
        );
        registry.register(
            "upgrade_phase_duration_seconds",
            "How long finished upgrade phases took",
            phase_duration.clone(),
        );
        registry.register(
            "webhook_admission_duration_seconds",
            "Time to answer one admission review",
            webhook_duration.clone(),
        );
        let migrations = Family::<MigrationLabels, Counter>::default();
        let migrated_objects = Family::<CrdLabels, Counter>::default();
        registry.register(
            "storage_migrations",
            "Stored-version migrations, by CRD and outcome (pruned, clean, changed, failed)",
            migrations.clone(),
        );
        registry.register(
            "storage_migrated_objects",
            "Objects rewritten in their CRD's storage version",
            migrated_objects.clone(),
        );
        let other_replicas = Counter::default();
        registry.register(
            "other_replica_transitions",
            "Transitions another operator instance had published first while leader election is off (should stay 0)",
            other_replicas.clone(),
        );
        Metrics {
            registry,
            reconciles,
            errors,
            reconcile_duration,
            phase,
            phase_duration,
            current_phase: Mutex::new(HashMap::new()),
            webhook_duration,
            migrations,
            migrated_objects,
            other_replicas,
            ready: AtomicBool::new(false),
        }
    }
}

impl Metrics {
    /// One finished stored-version migration.
    pub fn storage_migration(&self, crd: &str, outcome: &str, rewritten: u64) {
        self.migrations
            .get_or_create(&MigrationLabels {
                crd: crd.into(),
                outcome: outcome.into(),
            })
            .inc();
        self.migrated_objects
            .get_or_create(&CrdLabels { crd: crd.into() })
            .inc_by(rewritten);
    }

    pub fn reconciled(&self, service: &str, took: Duration) {
        let labels = ServiceLabels {
            service: service.into(),
        };
        self.reconciles.get_or_create(&labels).inc();
        self.reconcile_duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// Another instance published a transition first (see `other_replica_transitions`).
    pub fn other_replica_acting(&self) {
        self.other_replicas.inc();
    }

    pub fn failed(&self, service: &str, reason: &str) {
        self.errors
            .get_or_create(&ErrorLabels {
                service: service.into(),
                reason: reason.into(),
            })
            .inc();
    }

    pub fn admission(&self, service: &str, took: Duration) {
        self.webhook_duration
            .get_or_create(&ServiceLabels {
                service: service.into(),
            })
            .observe(took.as_secs_f64());
    }

    /// Records the phase a resource is in; when it left a phase that began at
    /// `left_phase_started`, records how long that phase took.
    pub fn phase(
        &self,
        service: &str,
        namespace: &str,
        name: &str,
        phase: &str,
        left: Option<(&str, Duration)>,
    ) {
        let phase = if phase.is_empty() { "none" } else { phase };
        let key = (service.to_string(), namespace.to_string(), name.to_string());
        let mut current = self.current_phase.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(previous) = current.get(&key).filter(|p| p.as_str() != phase) {
            self.phase.remove(&ResourcePhaseLabels {
                service: service.into(),
                namespace: namespace.into(),
                name: name.into(),
                phase: previous.clone(),
            });
        }
        current.insert(key, phase.to_string());
        self.phase
            .get_or_create(&ResourcePhaseLabels {
                service: service.into(),
                namespace: namespace.into(),
                name: name.into(),
                phase: phase.into(),
            })
            .set(1);
        if let Some((left_phase, took)) = left {
            self.phase_duration
                .get_or_create(&PhaseLabels {
                    service: service.into(),
                    phase: left_phase.into(),
                })
                .observe(took.as_secs_f64());
        }
    }

    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    /// The text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` over plain HTTP until dropped.
pub struct MetricsServer {
    pub local_addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn serve(bind: SocketAddr, metrics: Arc<Metrics>) -> std::io::Result<MetricsServer> {
    let listener = tokio::net::TcpListener::bind(bind).await?;
    let local_addr = listener.local_addr()?;
    let app = Router::new()
        .route(
            "/metrics",
            get(|State(m): State<Arc<Metrics>>| async move { m.encode() }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|State(m): State<Arc<Metrics>>| async move {
                if m.ready.load(Ordering::Relaxed) {
                    (StatusCode::OK, "ok")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "starting")
                }
            }),
        )
        .with_state(metrics);
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "metrics server stopped");
        }
    });
    Ok(MetricsServer { local_addr, task })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_gauge_moves_and_durations_are_recorded() {
        let m = Metrics::default();
        m.phase("cinder", "ns", "c", "Expanding", None);
        m.phase(
            "cinder",
            "ns",
            "c",
            "Migrating",
            Some(("Expanding", Duration::from_secs(3))),
        );
        let text = m.encode();
        assert!(text.contains(r#"ratchet_upgrade_phase{service="cinder",namespace="ns",name="c",phase="Migrating"} 1"#), "{text}");
        assert!(
            !text.contains(r#"ratchet_upgrade_phase{service="cinder",namespace="ns",name="c",phase="Expanding"}"#),
            "the old phase is gone: {text}"
        );
        assert!(text.contains(r#"ratchet_upgrade_phase_duration_seconds_count{service="cinder",phase="Expanding"} 1"#), "{text}");
        m.failed("cinder", "ExpandFailed");
        assert!(m.encode().contains(
            r#"ratchet_reconcile_errors_total{service="cinder",reason="ExpandFailed"} 1"#
        ));
    }
}
