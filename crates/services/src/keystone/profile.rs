//! Keystone's profile, the seed's four phases with keystone-manage's own
//! expand/migrate/contract: Expanding (`db_sync --expand`), Migrating
//! (`db_sync --migrate`), the API's roll, Contracting (`db_sync --contract`).
//! Each phase Job then asks `db_sync --check` whether the schema is where the
//! phase should have left it, and fails with a reason of its own when not.

use ratchet_phase_machine::{JobTemplate, Phase, Profile, SchemaPending};

pub const SERVICE: &str = "keystone";
/// Where the rendered configuration is mounted; every command reads it from
/// here (the API through `OS_KEYSTONE_CONFIG_DIR`: it ignores `--config-dir`).
pub const CONFIG_DIR: &str = "/etc/keystone/keystone.conf.d";

/// What `db_sync --check` reports pending (its 2 and 4) becomes after a phase.
const EXPAND_PENDING: SchemaPending = SchemaPending {
    check_code: 2,
    job_exit: 12,
    reason: "ExpandIncomplete",
    explanation: "keystone-manage db_sync --check exited 2 after the phase: expand migrations are still pending",
};
const CONTRACT_PENDING: SchemaPending = SchemaPending {
    check_code: 4,
    job_exit: 14,
    reason: "ContractIncomplete",
    explanation: "keystone-manage db_sync --check exited 4 after the phase: contract migrations are still pending",
};

fn manage(args: &str) -> String {
    format!("keystone-manage --config-dir {CONFIG_DIR} {args}")
}

/// `db_sync <flag>`, then `db_sync --check`, whose codes (0 up to date, 2
/// expand needed, 4 contract needed; 1 only when it crashed) must be among
/// `accepted` after the phase.
fn checked(suffix: &'static str, flag: &str, accepted: &[i32]) -> JobTemplate {
    JobTemplate::checked_step(
        suffix,
        &manage(&format!("db_sync {flag}")),
        &manage("db_sync --check"),
        accepted,
        &[EXPAND_PENDING, CONTRACT_PENDING],
    )
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
        db_sync: vec![db_sync()],
        phases: vec![
            // Contract migrations may be pending until Contracting.
            Phase::expanding(checked("db-expand", "--expand", &[0, 4])),
            Phase::migrating(checked("db-migrate", "--migrate", &[0, 4])),
            Phase::rolling_update(),
            Phase::contracting(
                checked("db-contract", "--contract", &[0]),
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
        checked_step::job_exit(template, "keystone-manage", "--check", step, check)
    }

    #[test]
    fn each_phase_job_holds_the_schema_to_where_the_phase_leaves_it() {
        let expand = checked("db-expand", "--expand", &[0, 4]);
        assert_eq!(job_exit(&expand, 0, 0), 0);
        assert_eq!(job_exit(&expand, 0, 4), 0, "contract still to come");
        assert_eq!(job_exit(&expand, 0, 2), EXPAND_PENDING.job_exit);
        assert_eq!(job_exit(&expand, 1, 0), 1, "the step crashed");
        assert_eq!(job_exit(&expand, 0, 1), 1, "the check crashed");
        let contract = checked("db-contract", "--contract", &[0]);
        assert_eq!(job_exit(&contract, 0, 0), 0);
        assert_eq!(job_exit(&contract, 0, 4), CONTRACT_PENDING.job_exit);
        assert_eq!(job_exit(&contract, 0, 2), EXPAND_PENDING.job_exit);
    }

    #[test]
    fn every_pending_code_has_its_reason() {
        for phase in profile().phases {
            for template in phase.templates() {
                let explained: Vec<i32> =
                    template.exit_reasons.iter().map(|r| r.exit_code).collect();
                assert_eq!(
                    explained,
                    [EXPAND_PENDING.job_exit, CONTRACT_PENDING.job_exit],
                    "{}",
                    phase.name
                );
            }
        }
    }
}
