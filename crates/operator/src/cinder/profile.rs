//! Cinder's profile on the shared phase machine: its commands and its
//! workloads in roll order (scheduler → every volume back end → backup → api).

use ratchet_api::cinder::v1alpha1::Cinder;
use ratchet_phase_machine::{JobTemplate, Phase, Pin, Profile, Step, WorkloadId};

pub const SERVICE: &str = "cinder";
/// Where the rendered configuration is mounted; every command reads it from here.
pub const CONFIG_DIR: &str = "/etc/cinder/cinder.conf.d";
/// The ConfigMap key: `cinder-status`' policy check looks for a file named cinder.conf.
pub const CONFIG_KEY: &str = "cinder.conf";
pub const API_PORT: i32 = 8776;

fn manage(args: &[&str]) -> Vec<String> {
    ["cinder-manage", "--config-dir", CONFIG_DIR]
        .iter()
        .chain(args)
        .map(|s| s.to_string())
        .collect()
}

/// `cinder-status upgrade check` in a tolerant wrapper: it records the check's
/// exit code in the termination message and succeeds for 0 (ok), 1 (warning) and
/// 2 (failure, e.g. a single volume row without service_uuid), so no severity the
/// check reports can wedge the upgrade; anything else fails with its own code.
pub fn upgrade_check_command() -> Vec<String> {
    let script = format!(
        "cinder-status --config-dir {CONFIG_DIR} upgrade check; rc=$?; \
         echo \"cinder-status upgrade check exit $rc\" > /dev/termination-log; \
         case $rc in 0|1|2) exit 0 ;; *) exit $rc ;; esac"
    );
    vec!["/bin/sh".into(), "-c".into(), script]
}

fn job(suffix: &'static str, command: Vec<String>) -> JobTemplate {
    JobTemplate {
        suffix,
        command,
        ..JobTemplate::default()
    }
}

/// Cinder on the shared machine: expand (db sync on the target image), migrate
/// (the upgrade check), roll (scheduler → volumes → backup → api), contract
/// (online data migrations); the installed release is promoted after contract.
pub fn profile() -> Profile {
    Profile {
        service: SERVICE,
        db_sync: job("db-sync", manage(&["db", "sync"])),
        phases: vec![
            Phase {
                name: "Expanding",
                in_progress_reason: "ExpandInProgress",
                complete_event: Some("ExpandComplete"),
                failed_reason: "ExpandFailed",
                step: Step::Job(job("db-expand", manage(&["db", "sync"]))),
                abortable: true,
            },
            Phase {
                name: "Migrating",
                in_progress_reason: "MigrateInProgress",
                complete_event: Some("MigrateComplete"),
                failed_reason: "MigrateFailed",
                step: Step::Job(JobTemplate {
                    reports_check: true,
                    ..job("db-migrate", upgrade_check_command())
                }),
                abortable: true,
            },
            Phase {
                name: "RollingUpdate",
                in_progress_reason: "UpgradeRollingUpdate",
                complete_event: Some("DeploymentRolloutComplete"),
                failed_reason: "RollingUpdateFailed",
                step: Step::Roll { pin: Pin::None },
                abortable: true,
            },
            Phase {
                name: "Contracting",
                in_progress_reason: "ContractInProgress",
                complete_event: None,
                failed_reason: "ContractFailed",
                // The seed: the operator clears the upgrade state from any phase;
                // the CLI refuses a Contracting abort unless forced.
                step: Step::Job(job(
                    "db-contract",
                    manage(&["db", "online_data_migrations"]),
                )),
                abortable: true,
            },
        ],
    }
}

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
