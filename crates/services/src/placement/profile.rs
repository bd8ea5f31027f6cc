//! Placement's profile, the seed's four phases as Cinder runs them: Expanding
//! (`placement-manage db sync` on the target image: placement's migrations
//! only add, so the installed release keeps working on the new schema),
//! Migrating (`placement-status upgrade check`), the API's roll, Contracting
//! (`placement-manage db online_data_migrations`, once every API runs the
//! target release).

use ratchet_phase_machine::{ExitReason, JobTemplate, Phase, Profile};

pub const SERVICE: &str = "placement";
/// Where the rendered configuration is mounted; placement-manage and
/// placement-status read it with `--config-dir`, the API through
/// `OS_PLACEMENT_CONFIG_DIR` (its WSGI application takes no arguments).
pub const CONFIG_DIR: &str = "/etc/placement/placement.conf.d";

fn manage(args: &[&str]) -> Vec<String> {
    ["placement-manage", "--config-dir", CONFIG_DIR]
        .iter()
        .chain(args)
        .map(|s| s.to_string())
        .collect()
}

fn job(suffix: &'static str, command: Vec<String>) -> JobTemplate {
    JobTemplate {
        suffix,
        command,
        ..JobTemplate::default()
    }
}

/// `placement-status upgrade check` tolerates 0 (ok) and 1 (warning): a
/// failure (2) is a reason not to upgrade (e.g. incomplete consumers, which
/// the previous release's online data migrations should have finished).
pub const CHECK_TOLERATES: &[i32] = &[0, 1];

/// `placement-manage db online_data_migrations`: 0 when nothing is left, 1
/// when a batch migrated and more remain (the Job controller runs it again),
/// 2 when a migration failed.
fn online_data_migrations() -> JobTemplate {
    JobTemplate {
        fail_fast_exit_codes: vec![2],
        backoff_limit: Some(10),
        exit_reasons: vec![ExitReason {
            exit_code: 2,
            reason: "OnlineMigrationsFailed",
            explanation: "placement-manage db online_data_migrations exited 2: a migration raised (its log names it)",
        }],
        ..job("db-contract", manage(&["db", "online_data_migrations"]))
    }
}

pub fn profile() -> Profile {
    Profile {
        service: SERVICE,
        db_sync: vec![job("db-sync", manage(&["db", "sync"]))],
        phases: vec![
            Phase::expanding(job("db-expand", manage(&["db", "sync"]))),
            Phase::migrating(JobTemplate {
                exit_reasons: vec![ExitReason {
                    exit_code: 2,
                    reason: "UpgradeCheckFailed",
                    explanation: "placement-status reported a failed check (named in the message)",
                }],
                ..JobTemplate::upgrade_check(
                    "upgrade-check",
                    "placement-status",
                    CONFIG_DIR,
                    CHECK_TOLERATES,
                )
            }),
            Phase::rolling_update(),
            Phase::contracting(
                online_data_migrations(),
                "its online data migrations may already have rewritten rows for the target release",
            ),
        ],
        minimum_replicas: Some(2),
    }
}
