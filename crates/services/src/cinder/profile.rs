//! Cinder's profile: expand (db sync on the target image), migrate (the upgrade
//! check in a tolerant wrapper), roll (scheduler → volumes → backup → api),
//! contract (online data migrations); the installed release is promoted after
//! contract and the automatic RPC pins are released by the second roll.

use ratchet_phase_machine::{JobTemplate, Phase, Profile};

pub const SERVICE: &str = "cinder";
/// Where the rendered configuration is mounted; every command reads it from here.
pub const CONFIG_DIR: &str = "/etc/cinder/cinder.conf.d";

fn manage(args: &[&str]) -> Vec<String> {
    ["cinder-manage", "--config-dir", CONFIG_DIR]
        .iter()
        .chain(args)
        .map(|s| s.to_string())
        .collect()
}

/// `cinder-status upgrade check`, tolerating 0 (ok), 1 (warning) and 2
/// (failure, e.g. a single volume row without service_uuid), so no severity
/// the check reports can wedge the upgrade (seed C5).
pub const CHECK_TOLERATES: &[i32] = &[0, 1, 2];

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
        db_sync: vec![job("db-sync", manage(&["db", "sync"]))],
        phases: vec![
            Phase::expanding(job("db-expand", manage(&["db", "sync"]))),
            Phase::migrating(JobTemplate::upgrade_check(
                "db-migrate",
                "cinder-status",
                CONFIG_DIR,
                CHECK_TOLERATES,
            )),
            Phase::rolling_update(),
            Phase::contracting(
                job("db-contract", manage(&["db", "online_data_migrations"])),
                "its online data migrations may already have rewritten rows for the target release",
            ),
        ],
        minimum_replicas: None,
    }
}
