//! Ironic's profile, after its rolling-upgrade spec: the schema moves first
//! (`ironic-dbsync upgrade`), new pods run pinned to the installed release
//! (`[DEFAULT] pin_release_version`) while conductors and then APIs roll, the
//! pin is removed with a second roll in the same order (conductors first, so a
//! new API microversion is only exposed once the back end serves it), and only
//! then do the online data migrations run. Unlike Cinder, the pin is explicit and
//! released *before* the data migrations; there is no way back once unpinning
//! has started (no database downgrade).

use ratchet_phase_machine::{ExitReason, JobTemplate, Phase, Pin, Profile, Step};

pub const SERVICE: &str = "ironic";
/// Where the rendered configuration is mounted; every command reads it from here.
pub const CONFIG_DIR: &str = "/etc/ironic/ironic.conf.d";

fn dbsync(args: &[&str]) -> Vec<String> {
    ["ironic-dbsync", "--config-dir", CONFIG_DIR]
        .iter()
        .chain(args)
        .map(|s| s.to_string())
        .collect()
}

/// `ironic-dbsync upgrade` refuses with exit 2 when the previous release's online
/// data migrations never completed.
fn schema_upgrade(suffix: &'static str) -> JobTemplate {
    JobTemplate {
        suffix,
        command: dbsync(&["upgrade"]),
        fail_fast_exit_codes: vec![2],
        exit_reasons: vec![ExitReason {
            exit_code: 2,
            reason: "OnlineMigrationsIncomplete",
            explanation: "ironic-dbsync upgrade exited 2: the previous release's online data migrations were never completed; run `ironic-dbsync online_data_migrations` on the installed release until it exits 0",
        }],
        ..JobTemplate::default()
    }
}

/// `ironic-status upgrade check` tolerates 0 (ok) and 1 (warning) only: unlike
/// Cinder's Service UUIDs, no Ironic check fails for a reason that is safe to
/// upgrade past (a "Hardware Types and Interfaces" failure means conductors
/// cannot load their drivers), so exit 2 stops the upgrade before any pin.
pub const CHECK_TOLERATES: &[i32] = &[0, 1];

pub fn profile() -> Profile {
    Profile {
        service: SERVICE,
        db_sync: vec![schema_upgrade("db-sync")],
        phases: vec![
            Phase {
                name: "DatabaseUpgrade",
                in_progress_reason: "DBUpgradeInProgress",
                complete_event: Some("DBUpgradeComplete"),
                step: Step::Jobs {
                    failed_reason: "DBUpgradeFailed",
                    offline: None,
                    templates: vec![schema_upgrade("db-upgrade")],
                },
                abortable: true,
                abort_caution: None,
            },
            Phase {
                name: "UpgradeCheck",
                in_progress_reason: "UpgradeCheckInProgress",
                complete_event: Some("UpgradeCheckComplete"),
                step: Step::Jobs {
                    failed_reason: "UpgradeCheckFailed",
                    offline: None,
                    templates: vec![JobTemplate {
                        exit_reasons: vec![ExitReason {
                            exit_code: 2,
                            reason: "UpgradeCheckFailed",
                            explanation: "ironic-status reported a failed check (named in the message)",
                        }],
                        ..JobTemplate::upgrade_check(
                            "upgrade-check",
                            "ironic-status",
                            CONFIG_DIR,
                            CHECK_TOLERATES,
                        )
                    }],
                },
                abortable: true,
                abort_caution: None,
            },
            Phase {
                name: "PinnedRoll",
                in_progress_reason: "PinnedRollInProgress",
                complete_event: Some("PinnedRollComplete"),
                step: Step::Roll {
                    pin: Pin::Installed,
                },
                abortable: true,
                abort_caution: None,
            },
            Phase {
                name: "Unpinning",
                in_progress_reason: "UnpinInProgress",
                complete_event: Some("UnpinComplete"),
                step: Step::Roll { pin: Pin::None },
                abortable: false,
                abort_caution: None,
            },
            Phase {
                name: "OnlineMigrations",
                in_progress_reason: "OnlineMigrationsInProgress",
                complete_event: None,
                // Exit 1 means "some progress, run again": the Job controller
                // re-runs it, bounded by the backoff limit. 2 and 127 are final.
                step: Step::Jobs {
                    failed_reason: "OnlineMigrationsFailed",
                    offline: None,
                    templates: vec![JobTemplate {
                        suffix: "online-migrations",
                        command: dbsync(&["online_data_migrations"]),
                        fail_fast_exit_codes: vec![2, 127],
                        backoff_limit: Some(10),
                        exit_reasons: vec![
                            ExitReason {
                                exit_code: 2,
                                reason: "DatabaseNotCompatible",
                                explanation: "ironic-dbsync online_data_migrations exited 2: the database is not compatible with this release",
                            },
                            ExitReason {
                                exit_code: 127,
                                reason: "InvalidMigrationInput",
                                explanation: "ironic-dbsync online_data_migrations exited 127: invalid input",
                            },
                        ],
                        ..JobTemplate::default()
                    }],
                },
                abortable: false,
                abort_caution: None,
            },
        ],
        // The seed's rolling upgrade needs two APIs and two conductors: one
        // serves while the other restarts.
        minimum_replicas: Some(2),
    }
}
