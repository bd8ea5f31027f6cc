//! Keystone's profile, the seed's four phases with keystone-manage's own
//! expand/migrate/contract: Expanding (`db_sync --expand`), Migrating
//! (`db_sync --migrate`), the API's roll, Contracting (`db_sync --contract`).
//! Each phase Job then asks `db_sync --check` whether the schema is where the
//! phase should have left it, and fails with a reason of its own when not.

use ratchet_phase_machine::{ExitReason, JobTemplate, Phase, Profile, Step};

pub const SERVICE: &str = "keystone";
/// Where the rendered configuration is mounted; every command reads it from
/// here (the API through `OS_KEYSTONE_CONFIG_DIR`: it ignores `--config-dir`).
pub const CONFIG_DIR: &str = "/etc/keystone/keystone.conf.d";

/// The Job's exit code when `db_sync --check` still reports expand
/// migrations pending (its 2) after the phase.
const EXPAND_PENDING: i32 = 12;
/// The same for contract migrations (its 4).
const CONTRACT_PENDING: i32 = 14;

fn manage(args: &str) -> String {
    format!("keystone-manage --config-dir {CONFIG_DIR} {args}")
}

/// `db_sync <flag>`, then `db_sync --check`, whose codes (0 up to date, 2
/// expand needed, 4 contract needed; 1 only when it crashed) must be among
/// `accepted` after the phase; 2 and 4 otherwise end the Job with
/// [`EXPAND_PENDING`] or [`CONTRACT_PENDING`], anything else with 1.
fn checked(suffix: &'static str, flag: &str, accepted: &[i32]) -> JobTemplate {
    let accepted: Vec<String> = accepted.iter().map(i32::to_string).collect();
    let script = format!(
        "{step} || exit 1; {check}; rc=$?; case $rc in {accepted}) exit 0 ;; \
         2) exit {EXPAND_PENDING} ;; 4) exit {CONTRACT_PENDING} ;; esac; exit 1",
        step = manage(&format!("db_sync {flag}")),
        check = manage("db_sync --check"),
        accepted = accepted.join("|"),
    );
    JobTemplate {
        suffix,
        command: vec!["/bin/sh".into(), "-c".into(), script],
        // A schema the step did not move moves no further when run again.
        fail_fast_exit_codes: vec![EXPAND_PENDING, CONTRACT_PENDING],
        exit_reasons: vec![
            ExitReason {
                exit_code: EXPAND_PENDING,
                reason: "ExpandIncomplete",
                explanation: "keystone-manage db_sync --check exited 2 after the phase: expand migrations are still pending",
            },
            ExitReason {
                exit_code: CONTRACT_PENDING,
                reason: "ContractIncomplete",
                explanation: "keystone-manage db_sync --check exited 4 after the phase: contract migrations are still pending",
            },
        ],
        ..JobTemplate::default()
    }
}

/// The fresh-install and steady-state sync: the whole schema, then
/// `bootstrap`, which creates (or resets to the Secret's password) the admin
/// user, its project and role, and the identity endpoints, from the
/// `OS_BOOTSTRAP_*` variables the pods carry. Both are idempotent.
fn db_sync() -> JobTemplate {
    JobTemplate {
        suffix: "db-sync",
        command: vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("{} && exec {}", manage("db_sync"), manage("bootstrap")),
        ],
        ..JobTemplate::default()
    }
}

pub fn profile() -> Profile {
    Profile {
        service: SERVICE,
        db_sync: db_sync(),
        phases: vec![
            Phase {
                name: "Expanding",
                in_progress_reason: "ExpandInProgress",
                complete_event: Some("ExpandComplete"),
                step: Step::Job {
                    failed_reason: "ExpandFailed",
                    // Contract migrations may be pending until Contracting.
                    template: checked("db-expand", "--expand", &[0, 4]),
                },
                abortable: true,
                abort_caution: None,
            },
            Phase {
                name: "Migrating",
                in_progress_reason: "MigrateInProgress",
                complete_event: Some("MigrateComplete"),
                step: Step::Job {
                    failed_reason: "MigrateFailed",
                    template: checked("db-migrate", "--migrate", &[0, 4]),
                },
                abortable: true,
                abort_caution: None,
            },
            Phase::rolling_update(),
            Phase {
                name: "Contracting",
                in_progress_reason: "ContractInProgress",
                complete_event: None,
                step: Step::Job {
                    failed_reason: "ContractFailed",
                    template: checked("db-contract", "--contract", &[0]),
                },
                abortable: true,
                abort_caution: Some(
                    "its contract migrations may already have dropped what the installed release reads",
                ),
            },
        ],
        minimum_replicas: Some(2),
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    /// Runs a phase Job's script with a `keystone-manage` on its PATH that
    /// exits `step` for the phase's own step and `check` for `db_sync
    /// --check`: the Job's exit code.
    fn job_exit(template: &JobTemplate, step: i32, check: i32) -> i32 {
        static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("ratchet-keystone-{}-{run}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let fake = dir.join("keystone-manage");
        std::fs::write(
            &fake,
            format!("#!/bin/sh\ncase \"$*\" in *--check) exit {check} ;; *) exit {step} ;; esac\n"),
        )
        .expect("fake keystone-manage");
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("executable");
        let code = Command::new("/bin/sh")
            .args(["-c", &template.command[2]])
            .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
            .status()
            .expect("sh runs")
            .code()
            .unwrap_or(-1);
        let _ = std::fs::remove_dir_all(&dir);
        code
    }

    #[test]
    fn each_phase_job_holds_the_schema_to_where_the_phase_leaves_it() {
        let expand = checked("db-expand", "--expand", &[0, 4]);
        assert_eq!(job_exit(&expand, 0, 0), 0);
        assert_eq!(job_exit(&expand, 0, 4), 0, "contract still to come");
        assert_eq!(job_exit(&expand, 0, 2), EXPAND_PENDING);
        assert_eq!(job_exit(&expand, 1, 0), 1, "the step crashed");
        assert_eq!(job_exit(&expand, 0, 1), 1, "the check crashed");
        let contract = checked("db-contract", "--contract", &[0]);
        assert_eq!(job_exit(&contract, 0, 0), 0);
        assert_eq!(job_exit(&contract, 0, 4), CONTRACT_PENDING);
        assert_eq!(job_exit(&contract, 0, 2), EXPAND_PENDING);
    }

    #[test]
    fn every_pending_code_has_its_reason() {
        for phase in profile().phases {
            if let Step::Job { template, .. } = phase.step {
                let explained: Vec<i32> =
                    template.exit_reasons.iter().map(|r| r.exit_code).collect();
                assert_eq!(
                    explained,
                    [EXPAND_PENDING, CONTRACT_PENDING],
                    "{}",
                    phase.name
                );
            }
        }
    }
}
