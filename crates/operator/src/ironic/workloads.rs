//! Ironic's workloads in roll order: conductors first, then the API, so a new
//! API microversion is only exposed once conductors can serve it.

use ratchet_api::ironic::v1alpha1::Ironic;

use super::{CONFIG_DIR, config};
use crate::service::model::{API_DRAIN_SECONDS, ServiceModel, WorkloadKind, WorkloadModel};
use crate::service::readiness::{self, OWN_HOSTNAME};

pub const CONFIG_FILE: &str = "ironic.conf";
pub const API_PORT: i32 = 6385;

fn command(binary: &str) -> Vec<String> {
    vec![binary.into(), "--config-dir".into(), CONFIG_DIR.into()]
}

pub fn model(ironic: &Ironic, name: &str) -> ServiceModel {
    let spec = &ironic.spec;
    let namespace = ironic.metadata.namespace.as_deref().unwrap_or_default();
    ServiceModel {
        config_dir: CONFIG_DIR,
        config_file: CONFIG_FILE,
        config: config::render(namespace, name, spec),
        support_files: vec![readiness::script()],
        state_dir: "/var/lib/ironic",
        secrets: ServiceModel::standard_secrets(&spec.database, &spec.transport),
        workloads: vec![
            // Conductors register their host names in the database: stable
            // identities, so a StatefulSet.
            WorkloadModel {
                name: format!("{name}-conductor"),
                component: "conductor".into(),
                kind: WorkloadKind::StatefulSet,
                command: command("ironic-conductor"),
                replicas: spec.conductor.replicas_or_default(),
                resources: spec.conductor.resources.clone(),
                env: Vec::new(),
                api_port: None,
                carries_installed_release: false,
                claims: Vec::new(),
                // A conductor registers under its host name (the pod's) and
                // heartbeats while its worker lives ([conductor] heartbeat_timeout, 60 s).
                readiness: readiness::heartbeat(
                    CONFIG_DIR,
                    "conductors",
                    60,
                    &[("hostname", OWN_HOSTNAME), ("online", "1")],
                ),
                pre_stop_sleep_seconds: None,
            },
            WorkloadModel {
                name: format!("{name}-api"),
                component: "api".into(),
                kind: WorkloadKind::Deployment,
                command: command("ironic-api"),
                replicas: spec.api.replicas_or_default(),
                resources: spec.api.resources.clone(),
                env: Vec::new(),
                api_port: Some(API_PORT),
                carries_installed_release: false,
                claims: Vec::new(),
                readiness: readiness::api(CONFIG_DIR, API_PORT, "/v1/"),
                pre_stop_sleep_seconds: Some(API_DRAIN_SECONDS),
            },
        ],
        rollout_deadline_seconds: spec.rollout_deadline_seconds.unwrap_or(600),
    }
}
