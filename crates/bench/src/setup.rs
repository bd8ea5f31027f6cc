//! What every Cinder benchmark sets up: a local cluster, a simulated kubelet,
//! the CRDs, an operator whose requests are counted, and one namespace per run.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::PostParams;
use kube::{Api, Client};
use ratchet_operator::{OperatorConfig, OperatorHandle};
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_testenv::{KubeletOptions, LocalCluster, SimKubelet};

use crate::counting::{RequestCounter, counting_client};
use ratchet_services::Services;

pub use ratchet_services::testing::EXAMPLE_REPOSITORY as REPO;

pub struct Bench {
    pub admin: Client,
    pub counter: RequestCounter,
    pub operator: OperatorHandle,
    pub kubelet: SimKubelet,
    _cluster: LocalCluster,
}

impl Bench {
    pub async fn start() -> anyhow::Result<Bench> {
        let cluster = LocalCluster::start().await?;
        let admin = cluster.client()?;
        let kubelet = SimKubelet::start(admin.clone(), KubeletOptions::default()).await?;
        ratchet_operator::install::install_crds::<Services>(&admin, Duration::from_secs(60))
            .await?;
        let (operator_client, counter) = counting_client(cluster.config().clone())?;
        let operator =
            ratchet_operator::start::<Services>(operator_client, OperatorConfig::default()).await?;
        Ok(Bench {
            admin,
            counter,
            operator,
            kubelet,
            _cluster: cluster,
        })
    }

    /// A new namespace with the example Secrets, and a Cinder manifest for it.
    pub async fn namespace(
        &self,
        ns: &str,
        release: &str,
        backends: &[&str],
    ) -> anyhow::Result<(Api<Cinder>, Cinder)> {
        let namespace: Namespace =
            serde_json::from_value(serde_json::json!({ "metadata": { "name": ns } }))?;
        Api::<Namespace>::all(self.admin.clone())
            .create(&PostParams::default(), &namespace)
            .await?;
        ratchet_operator::install::ensure_example_secrets::<Services>(&self.admin, ns).await?;
        let cinder: Cinder = serde_json::from_value(ratchet_services::cinder::example_manifest(
            "cinder", release, REPO, release, backends,
        ))?;
        Ok((Api::namespaced(self.admin.clone(), ns), cinder))
    }
}

pub use ratchet_services::testing::settled_at;

/// Mean reconcile duration so far, from the operator's own histogram.
pub fn mean_reconcile_seconds(operator: &OperatorHandle) -> Option<f64> {
    let text = operator.metrics().encode();
    let value = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
    };
    let sum = value("ratchet_reconcile_duration_seconds_sum")?;
    let count = value("ratchet_reconcile_duration_seconds_count")?;
    (count > 0.0).then(|| sum / count)
}

/// Reconcile passes slower than `bound_seconds` (a bucket bound of the
/// operator's histogram, e.g. 0.128), out of all passes.
pub fn slow_reconciles(operator: &OperatorHandle, bound_seconds: &str) -> Option<(u64, u64)> {
    let text = operator.metrics().encode();
    let sum_of = |prefix: &str| -> u64 {
        text.lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .map(|v| v as u64)
            .sum()
    };
    let total = sum_of("ratchet_reconcile_duration_seconds_count");
    let within = text
        .lines()
        .filter(|l| {
            l.starts_with("ratchet_reconcile_duration_seconds_bucket")
                && l.contains(&format!("le=\"{bound_seconds}\""))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum::<u64>();
    (total > 0).then(|| (total - within, total))
}

/// The operator's failed passes by service and reason, from its metrics text
/// (`ratchet_reconcile_errors_total`), or "none".
pub fn failed_passes(metrics: &str) -> String {
    let errors: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("ratchet_reconcile_errors_total{"))
        .collect();
    if errors.is_empty() {
        "none".to_string()
    } else {
        errors.join("; ")
    }
}
