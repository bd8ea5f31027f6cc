//! Glance's profile, the seed's four phases with glance-manage's own
//! expand/migrate/contract: Expanding (`db expand`), Migrating (`db migrate`,
//! glance's data migrations), the API's roll, Contracting (`db contract`).
//! Each phase Job then asks `db check` whether the schema is where the phase
//! should have left it, and fails with a reason of its own when not.

use ratchet_phase_machine::{JobTemplate, Phase, Profile, SchemaPending};

pub const SERVICE: &str = "glance";
/// Where the rendered configuration is mounted; glance-manage reads it with
/// `--config-dir`, the API through `OS_GLANCE_CONFIG_DIR` (its WSGI
/// application takes no arguments).
pub const CONFIG_DIR: &str = "/etc/glance/glance.conf.d";

/// `glance-manage db check`'s codes for "not there yet" (expand, data
/// migrations, contract still to run) and what each becomes after a phase.
/// 0 is up to date; 1 means it crashed.
const EXPAND_PENDING: SchemaPending = SchemaPending {
    check_code: 3,
    job_exit: 13,
    reason: "ExpandIncomplete",
    explanation: "glance-manage db check exited 3 after the phase: expand migrations are still pending",
};
const MIGRATE_PENDING: SchemaPending = SchemaPending {
    check_code: 4,
    job_exit: 14,
    reason: "MigrateIncomplete",
    explanation: "glance-manage db check exited 4 after the phase: data migrations are still pending",
};
const CONTRACT_PENDING: SchemaPending = SchemaPending {
    check_code: 5,
    job_exit: 15,
    reason: "ContractIncomplete",
    explanation: "glance-manage db check exited 5 after the phase: contract migrations are still pending",
};

fn manage(args: &str) -> String {
    format!("glance-manage --config-dir {CONFIG_DIR} {args}")
}

/// `db <step>`, then `db check`, whose code must be among `accepted` after
/// the phase.
fn checked(suffix: &'static str, step: &str, accepted: &[i32]) -> JobTemplate {
    JobTemplate::checked_step(
        suffix,
        &manage(&format!("db {step}")),
        &manage("db check"),
        accepted,
        &[EXPAND_PENDING, MIGRATE_PENDING, CONTRACT_PENDING],
    )
}

/// The fresh-install and steady-state sync: expand, data migrations and
/// contract at once (a no-op on a schema that is up to date).
fn db_sync() -> JobTemplate {
    JobTemplate {
        suffix: "db-sync",
        command: vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("exec {}", manage("db sync")),
        ],
        ..JobTemplate::default()
    }
}

pub fn profile() -> Profile {
    Profile {
        service: SERVICE,
        db_sync: vec![db_sync()],
        phases: vec![
            // Data migrations and contract may be pending until their phases.
            Phase::expanding(checked(
                "db-expand",
                "expand",
                &[0, MIGRATE_PENDING.check_code, CONTRACT_PENDING.check_code],
            )),
            Phase::migrating(checked(
                "db-migrate",
                "migrate",
                &[0, CONTRACT_PENDING.check_code],
            )),
            Phase::rolling_update(),
            Phase::contracting(
                checked("db-contract", "contract", &[0]),
                "its contract migrations may already have dropped what the installed release reads",
            ),
        ],
        minimum_replicas: Some(2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared_tests::checked_step;

    fn job_exit(template: &JobTemplate, step: i32, check: i32) -> i32 {
        checked_step::job_exit(template, "glance-manage", "db check", step, check)
    }

    fn template(phase: &str) -> JobTemplate {
        let profile = profile();
        match profile.phase(phase).map(|(_, p)| p.templates().to_vec()) {
            Some(templates) if templates.len() == 1 => templates[0].clone(),
            other => panic!("{phase} is not a one-Job phase: {other:?}"),
        }
    }

    /// Every code `db check` has, after every phase: (check, Job exit).
    #[test]
    fn each_phase_job_holds_the_schema_to_where_the_phase_leaves_it() {
        let table = [
            (
                "Expanding",
                [
                    (0, 0),
                    (3, EXPAND_PENDING.job_exit),
                    (4, 0),
                    (5, 0),
                    (1, 1),
                    (2, 1),
                ],
            ),
            (
                "Migrating",
                [
                    (0, 0),
                    (3, EXPAND_PENDING.job_exit),
                    (4, MIGRATE_PENDING.job_exit),
                    (5, 0),
                    (1, 1),
                    (2, 1),
                ],
            ),
            (
                "Contracting",
                [
                    (0, 0),
                    (3, EXPAND_PENDING.job_exit),
                    (4, MIGRATE_PENDING.job_exit),
                    (5, CONTRACT_PENDING.job_exit),
                    (1, 1),
                    (2, 1),
                ],
            ),
        ];
        for (phase, cases) in table {
            let template = template(phase);
            for (check, expected) in cases {
                assert_eq!(
                    job_exit(&template, 0, check),
                    expected,
                    "{phase}: db check exited {check}"
                );
            }
            assert_eq!(job_exit(&template, 1, 0), 1, "{phase}: the step crashed");
            assert_eq!(
                template.fail_fast_exit_codes,
                [
                    EXPAND_PENDING.job_exit,
                    MIGRATE_PENDING.job_exit,
                    CONTRACT_PENDING.job_exit
                ],
                "{phase}"
            );
        }
    }

    #[test]
    fn every_pending_code_has_its_reason() {
        for phase in profile().phases {
            for template in phase.templates() {
                let explained: Vec<(i32, &str)> = template
                    .exit_reasons
                    .iter()
                    .map(|r| (r.exit_code, r.reason))
                    .collect();
                assert_eq!(
                    explained,
                    [
                        (EXPAND_PENDING.job_exit, "ExpandIncomplete"),
                        (MIGRATE_PENDING.job_exit, "MigrateIncomplete"),
                        (CONTRACT_PENDING.job_exit, "ContractIncomplete"),
                    ],
                    "{}",
                    phase.name
                );
            }
        }
    }

    #[test]
    fn the_sync_runs_the_whole_schema() {
        assert_eq!(
            profile().db_sync[0].command[2],
            "exec glance-manage --config-dir /etc/glance/glance.conf.d db sync"
        );
    }
}
