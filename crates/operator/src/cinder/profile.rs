//! Cinder's profile on the shared phase machine and the workloads it runs, in
//! roll order (scheduler → every volume back end → backup → api).

use ratchet_api::cinder::v1beta1::Cinder;

pub use ratchet_phase_machine::profiles::cinder::{CONFIG_DIR, SERVICE, profile};

use super::config;
use crate::service::model::{ServiceModel, WorkloadKind, WorkloadModel};

/// The ConfigMap key: `cinder-status`' policy check looks for a file named cinder.conf.
pub const CONFIG_FILE: &str = "cinder.conf";
pub const API_PORT: i32 = 8776;

/// A Cinder workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    Scheduler,
    Volume(String),
    Backup,
    Api,
}

impl Role {
    pub fn component(&self) -> String {
        match self {
            Role::Scheduler => "scheduler".into(),
            Role::Volume(backend) => format!("volume-{backend}"),
            Role::Backup => "backup".into(),
            Role::Api => "api".into(),
        }
    }

    /// The Deployment's name.
    pub fn workload_name(&self, cinder: &str) -> String {
        match self {
            Role::Api => cinder.to_string(),
            other => format!("{cinder}-{}", other.component()),
        }
    }

    pub fn command(&self) -> Vec<String> {
        let binary = match self {
            Role::Scheduler => "cinder-scheduler",
            Role::Volume(_) => "cinder-volume",
            Role::Backup => "cinder-backup",
            Role::Api => "cinder-api",
        };
        vec![binary.into(), "--config-dir".into(), CONFIG_DIR.into()]
    }

    /// Scheduler, volume and backup cache their peers' RPC versions for the life of
    /// the process; the installed-release annotation restarts them once more after
    /// an upgrade (the second roll). The API rolls last and needs none.
    pub fn carries_installed_release(&self) -> bool {
        !matches!(self, Role::Api)
    }
}

/// The back ends' names, sorted (the roll order and `enabled_backends`), each once.
pub fn volume_names(cinder: &Cinder) -> Vec<String> {
    let names: std::collections::BTreeSet<&str> = cinder
        .spec
        .volume_backends
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    names.into_iter().map(str::to_owned).collect()
}

/// The workloads a Cinder asks for, in roll order.
pub fn roles(cinder: &Cinder) -> Vec<Role> {
    let mut roles = vec![Role::Scheduler];
    roles.extend(volume_names(cinder).into_iter().map(Role::Volume));
    roles.push(Role::Backup);
    roles.push(Role::Api);
    roles
}

fn workload(cinder: &Cinder, name: &str, role: &Role) -> WorkloadModel {
    let spec = &cinder.spec;
    let (replicas, resources) = match role {
        Role::Api => (spec.api.replicas_or_default(), spec.api.resources.clone()),
        Role::Scheduler => (
            spec.scheduler.replicas_or_default(),
            spec.scheduler.resources.clone(),
        ),
        Role::Backup => (
            spec.backup.replicas_or_default(),
            spec.backup.resources.clone(),
        ),
        Role::Volume(backend) => {
            let volume = spec.volume_backends.iter().find(|v| &v.name == backend);
            (
                volume.and_then(|v| v.replicas).unwrap_or(1),
                volume.and_then(|v| v.resources.clone()),
            )
        }
    };
    let env = match role {
        Role::Volume(backend) => vec![(config::ENV_ENABLED_BACKENDS.to_string(), backend.clone())],
        _ => Vec::new(),
    };
    WorkloadModel {
        name: role.workload_name(name),
        component: role.component(),
        kind: WorkloadKind::Deployment,
        command: role.command(),
        replicas,
        resources,
        env,
        api_port: (*role == Role::Api).then_some(API_PORT),
        carries_installed_release: role.carries_installed_release(),
    }
}

pub fn model(cinder: &Cinder, name: &str) -> ServiceModel {
    let namespace = cinder.metadata.namespace.as_deref().unwrap_or_default();
    ServiceModel {
        config_dir: CONFIG_DIR,
        config_file: CONFIG_FILE,
        config: config::render(namespace, name, &cinder.spec),
        state_dir: "/var/lib/cinder",
        secrets: ServiceModel::standard_secrets(&cinder.spec.database, &cinder.spec.transport),
        workloads: roles(cinder)
            .iter()
            .map(|role| workload(cinder, name, role))
            .collect(),
        rollout_deadline_seconds: cinder.spec.rollout_deadline_seconds.unwrap_or(600),
    }
}
