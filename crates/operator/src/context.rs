//! What every reconcile shares: the client, the event recorder, the scope and the
//! per-object failure counts that drive error backoff.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::Client;
use kube::runtime::events::{Recorder, Reporter};

use crate::error::Failures;
use crate::events::Publisher;
use crate::metrics::Metrics;
use crate::webhooks::config::{ConversionTarget, WebhookConfig};

/// How an operator instance is set up.
#[derive(Clone, Debug)]
pub struct OperatorConfig {
    /// Watch only this namespace (None: all namespaces).
    pub namespace: Option<String>,
    /// Reconciles running at once.
    pub concurrency: u16,
    /// This instance's name in events (`reportingInstance`), e.g. the pod name.
    pub instance: String,
    /// Serve admission webhooks (None: controllers only).
    pub webhook: Option<WebhookConfig>,
    /// Serve /metrics, /healthz and /readyz over plain HTTP here.
    pub metrics_bind: Option<std::net::SocketAddr>,
    /// Run the controllers only while holding this Lease (None: always).
    pub leader_election: Option<LeaderElection>,
    /// Migrate Ratchet's CRDs' stored objects to their storage version and prune
    /// `status.storedVersions` (needs cluster-wide rights on the resources; off
    /// by default in single-namespace mode).
    pub storage_migration: bool,
    /// How long a pass waits for the watch caches' first lists before it fails
    /// with `CacheNotReady` (a Warning event on the resource naming the kind).
    pub cache_sync_timeout: std::time::Duration,
}

/// Which Lease the replicas compete for, and how long it lasts.
#[derive(Clone, Debug)]
pub struct LeaderElection {
    pub lease_name: String,
    pub namespace: String,
    /// This replica's identity (the pod name).
    pub identity: String,
    /// Seconds a Lease stays valid without renewal; a crashed leader is replaced
    /// after at most this long.
    pub duration_seconds: u64,
    /// Seconds before expiry the holder renews.
    pub grace_seconds: u64,
}

impl Default for OperatorConfig {
    fn default() -> Self {
        OperatorConfig {
            namespace: None,
            concurrency: 4,
            instance: std::env::var("POD_NAME").unwrap_or_else(|_| "ratchet".into()),
            webhook: None,
            metrics_bind: None,
            leader_election: None,
            storage_migration: false,
            cache_sync_timeout: std::time::Duration::from_secs(30),
        }
    }
}

pub struct Context {
    pub client: Client,
    pub config: OperatorConfig,
    /// One recorder for all events (so repeats aggregate into series), behind
    /// an ordered queue.
    pub events: Publisher,
    pub metrics: Arc<Metrics>,
    /// Where Ratchet's CRDs' conversion must point, when this operator serves it.
    pub conversion: Option<ConversionTarget>,
    failures: Mutex<HashMap<String, Failures>>,
}

impl Context {
    /// The API of `K` where the operator reconciles: its one namespace, or
    /// every namespace.
    pub fn api<K>(&self) -> kube::Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        match &self.config.namespace {
            Some(ns) => kube::Api::namespaced(self.client.clone(), ns),
            None => kube::Api::all(self.client.clone()),
        }
    }

    pub fn new(client: Client, config: OperatorConfig, metrics: Arc<Metrics>) -> Context {
        let reporter = Reporter {
            controller: "ratchet".into(),
            instance: Some(config.instance.clone()),
        };
        Context {
            events: Publisher::start(Recorder::new(client.clone(), reporter)),
            client,
            config,
            metrics,
            conversion: None,
            failures: Mutex::new(HashMap::new()),
        }
    }

    pub fn with_conversion(mut self, conversion: Option<ConversionTarget>) -> Context {
        self.conversion = conversion;
        self
    }

    /// Counts one more consecutive failure for the object; returns its counts
    /// and how long to wait before the next try.
    pub fn record_failure(&self, key: &str, transient: bool) -> (Failures, std::time::Duration) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let counts = failures.entry(key.to_string()).or_default();
        let delay = counts.record(transient);
        (*counts, delay)
    }

    /// Forgets the object's failures after a successful pass.
    pub fn record_success(&self, key: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }
}
