//! Cinder's profile on the shared phase machine and the workloads it runs, in
//! roll order (scheduler → every volume back end → backup → api).

use ratchet_api::cinder::v1beta1::Cinder;

pub use ratchet_phase_machine::profiles::cinder::{CONFIG_DIR, SERVICE, profile};

use super::{config, filters, paste};
use crate::service::model::{API_DRAIN_SECONDS, ServiceModel, WorkloadKind, WorkloadModel};
use crate::service::readiness;

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
        vec![
            self.binary().into(),
            "--config-dir".into(),
            CONFIG_DIR.into(),
        ]
    }

    /// The `services` table's `binary`.
    pub fn binary(&self) -> &'static str {
        match self {
            Role::Scheduler => "cinder-scheduler",
            Role::Volume(_) => "cinder-volume",
            Role::Backup => "cinder-backup",
            Role::Api => "cinder-api",
        }
    }

    /// The host its service row is registered under (the API registers none).
    pub fn service_host(&self, cinder: &str) -> Option<String> {
        match self {
            Role::Volume(backend) => Some(format!("{cinder}-volume-{backend}@{backend}")),
            Role::Api => None,
            other => Some(other.workload_name(cinder)),
        }
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
        Role::Backup => (config::backup_replicas(spec), spec.backup.resources.clone()),
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
        Role::Scheduler | Role::Backup => {
            vec![(config::ENV_HOST.to_string(), role.workload_name(name))]
        }
        Role::Api => Vec::new(),
    };
    let readiness = match role.service_host(name) {
        // A service heartbeats every report_interval (10 s) while it works (a
        // volume service only once its driver is initialised); its row counts
        // as down after service_down_time (60 s).
        Some(host) => readiness::heartbeat(
            CONFIG_DIR,
            "services",
            60,
            &[("binary", role.binary()), ("host", &host), ("deleted", "0")],
        ),
        None => readiness::api(CONFIG_DIR, API_PORT, "/v3/"),
    };
    let claims = match (role, &spec.backup.posix_volume_claim) {
        (Role::Backup, Some(claim)) => {
            vec![(claim.clone(), config::BACKUP_POSIX_PATH.to_string())]
        }
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
        claims,
        readiness,
        pre_stop_sleep_seconds: (*role == Role::Api).then_some(API_DRAIN_SECONDS),
    }
}

pub fn model(cinder: &Cinder, name: &str) -> ServiceModel {
    let namespace = cinder.metadata.namespace.as_deref().unwrap_or_default();
    // The API files follow the release the new pods run.
    let release = ratchet_release::Release::parse(&cinder.spec.open_stack_release).ok();
    ServiceModel {
        config_dir: CONFIG_DIR,
        config_file: CONFIG_FILE,
        config: config::render(namespace, name, &cinder.spec),
        support_files: vec![
            (paste::FILE, paste::render(release)),
            (filters::FILE, filters::render(release)),
            readiness::script(),
        ],
        state_dir: "/var/lib/cinder",
        secrets: ServiceModel::standard_secrets(&cinder.spec.database, &cinder.spec.transport),
        workloads: roles(cinder)
            .iter()
            .map(|role| workload(cinder, name, role))
            .collect(),
        rollout_deadline_seconds: cinder.spec.rollout_deadline_seconds.unwrap_or(600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cinder() -> Cinder {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "cinder.openstack.c5c3.io/v1beta1",
            "kind": "Cinder",
            "metadata": { "name": "c", "namespace": "ns" },
            "spec": {
                "openStackRelease": "2026.1",
                "image": { "repository": "cinder", "reference": { "tag": "2026.1" } },
                "database": { "secretName": "db", "key": "connection" },
                "transport": { "secretName": "mq", "key": "url" },
                "backup": { "posixVolumeClaim": "backups" },
                "volumeBackends": [{ "name": "fake" }],
            }
        }))
        .expect("cinder")
    }

    #[test]
    fn every_workload_has_a_readiness_check_of_its_own_service() {
        let model = model(&cinder(), "c");
        let checks: Vec<(&str, String)> = model
            .workloads
            .iter()
            .map(|w| (w.name.as_str(), w.readiness.command[2..].join(" ")))
            .collect();
        assert_eq!(
            checks,
            [
                (
                    "c-scheduler",
                    "heartbeat services 60 binary=cinder-scheduler host=c-scheduler deleted=0"
                        .to_string()
                ),
                (
                    "c-volume-fake",
                    "heartbeat services 60 binary=cinder-volume host=c-volume-fake@fake deleted=0"
                        .to_string()
                ),
                (
                    "c-backup",
                    "heartbeat services 60 binary=cinder-backup host=c-backup deleted=0"
                        .to_string()
                ),
                ("c", "http 8776 /v3/".to_string()),
            ]
        );
    }

    #[test]
    fn scheduler_and_backup_register_one_host_and_only_the_api_drains() {
        let model = model(&cinder(), "c");
        let host = |name: &str| {
            model
                .workload(name)
                .and_then(|w| w.env.iter().find(|(k, _)| k == config::ENV_HOST))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(host("c-scheduler").as_deref(), Some("c-scheduler"));
        assert_eq!(host("c-backup").as_deref(), Some("c-backup"));
        assert_eq!(host("c"), None);
        let drains: Vec<_> = model
            .workloads
            .iter()
            .filter(|w| w.pre_stop_sleep_seconds.is_some())
            .map(|w| w.name.as_str())
            .collect();
        assert_eq!(drains, ["c"]);
        assert_eq!(
            model.workload("c-backup").map(|w| w.claims.clone()),
            Some(vec![(
                "backups".to_string(),
                "/var/lib/cinder/backup".to_string()
            )])
        );
        let files = model.files().expect("rendered");
        assert_eq!(
            files.keys().copied().collect::<Vec<_>>(),
            [
                "api-paste.ini",
                "cinder.conf",
                "ratchet-readiness.py",
                "resource_filters.json"
            ]
        );
    }
}
