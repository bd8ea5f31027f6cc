//! Cinder's profile on the shared phase machine: its commands and its
//! workloads in roll order (scheduler → every volume back end → backup → api).

use ratchet_api::cinder::v1alpha1::Cinder;
use ratchet_phase_machine::WorkloadId;

pub use ratchet_phase_machine::profiles::cinder::{CONFIG_DIR, SERVICE, profile};

/// The ConfigMap key: `cinder-status`' policy check looks for a file named cinder.conf.
pub const CONFIG_KEY: &str = "cinder.conf";
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

/// The workloads a Cinder asks for, in roll order.
pub fn roles(cinder: &Cinder) -> Vec<Role> {
    let mut roles = vec![Role::Scheduler];
    roles.extend(cinder.spec.volumes.keys().cloned().map(Role::Volume));
    roles.push(Role::Backup);
    roles.push(Role::Api);
    roles
}

pub fn desired_workloads(cinder: &Cinder, name: &str) -> Vec<WorkloadId> {
    roles(cinder)
        .iter()
        .map(|r| WorkloadId {
            name: r.workload_name(name),
            carries_installed_release: r.carries_installed_release(),
        })
        .collect()
}
