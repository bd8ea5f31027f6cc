//! Neutron's profile, seed 000's four phases with Neutron's commands:
//! Expanding (`neutron-db-manage upgrade --expand`: additive, the installed
//! release's servers keep working on it), Migrating (`neutron-status upgrade
//! check`), the roll (servers, then agents), Contracting (the contract
//! branch, online when `has_offline_migrations` says nothing is pending,
//! otherwise with every server process stopped, if the spec allows that
//! outage). Neutron pins nothing: its agents report the versions of the
//! objects they understand and the server sends each what it understands, so
//! no second roll follows.

use ratchet_phase_machine::{JobTemplate, Offline, Phase, Profile};

pub const SERVICE: &str = "neutron";
/// Where the rendered configuration is mounted; every command reads it with
/// `--config-dir`, the API through `OS_NEUTRON_CONFIG_DIR` (its WSGI
/// application takes no arguments).
pub const CONFIG_DIR: &str = "/etc/neutron/neutron.conf.d";

/// The exit code with which the contract Job says its migrations need every
/// server stopped (`has_offline_migrations` exited 1).
pub const OFFLINE_EXIT: i32 = 3;

/// The components an offline contract stops: every process that serves
/// Neutron's database (the agents reach it only through the RPC servers).
pub const SERVERS: &[&str] = &["rpc-server", "periodic-workers", "api"];

fn manage(args: &str) -> String {
    format!("neutron-db-manage --config-dir {CONFIG_DIR} {args}")
}

fn job(suffix: &'static str, script: String) -> JobTemplate {
    JobTemplate {
        suffix,
        command: vec!["/bin/sh".into(), "-c".into(), script],
        ..JobTemplate::default()
    }
}

/// The steady-state sync: `upgrade heads` (both branches). After an aborted
/// upgrade the schema may already carry the target release's expand
/// migrations, which the installed release's code cannot name (its
/// neutron-db-manage fails with "No such revision"): the servers run on that
/// additive schema (checked with 28.0.2 on 29.0.0's expand), so the Job
/// succeeds and says so instead of failing for ever.
fn sync() -> JobTemplate {
    let script = format!(
        "out=$({upgrade} 2>&1); rc=$?; printf '%s\\n' \"$out\"; \
         if [ $rc -ne 0 ]; then case \"$out\" in \
         *'No such revision or branch'*|*\"Can't locate revision\"*) \
         echo 'the schema is ahead of this release (a newer release expanded it); it serves this release' \
         > /dev/termination-log; exit 0 ;; esac; fi; exit $rc",
        upgrade = manage("upgrade heads"),
    );
    job("db-sync", script)
}

/// The contract, online: asks whether contract migrations are pending and
/// runs them only when none needs the servers stopped (none has been added
/// since Newton); otherwise ends with [`OFFLINE_EXIT`], which asks for the
/// offline step. What it found is its termination message.
fn contract_online() -> JobTemplate {
    let script = format!(
        "{check}; rc=$?; case $rc in \
         0) echo 'has_offline_migrations exit 0: contract run online' > /dev/termination-log; \
         exec {contract} ;; \
         1) echo 'has_offline_migrations exit 1: contract migrations need every neutron server stopped' \
         > /dev/termination-log; exit {OFFLINE_EXIT} ;; \
         *) exit $rc ;; esac",
        check = manage("has_offline_migrations"),
        contract = manage("upgrade --contract"),
    );
    job("db-contract", script)
}

/// The contract with every server stopped.
fn contract_offline() -> JobTemplate {
    job("db-contract-offline", manage("upgrade --contract"))
}

/// `neutron-status upgrade check` tolerates 0 and 1: Neutron's checks never
/// fail, they warn (an exception is 255).
pub const CHECK_TOLERATES: &[i32] = &[0, 1];

pub fn profile() -> Profile {
    Profile {
        service: SERVICE,
        db_sync: vec![sync()],
        phases: vec![
            Phase::expanding(job("db-expand", manage("upgrade --expand"))),
            Phase::migrating(JobTemplate::upgrade_check(
                "upgrade-check",
                "neutron-status",
                CONFIG_DIR,
                CHECK_TOLERATES,
            )),
            Phase::rolling_update(),
            Phase::contracting(
                contract_online(),
                "its contract migrations may already have dropped what the installed release reads",
            )
            .with_offline(Offline {
                exit_code: OFFLINE_EXIT,
                stops: SERVERS.to_vec(),
                template: contract_offline(),
            }),
        ],
        minimum_replicas: Some(2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Runs `template`'s script as its pod would, with a stand-in
    /// neutron-db-manage that answers each subcommand (the arguments' end)
    /// with its output and exit code (0 and nothing otherwise): the Job's
    /// exit code and termination message.
    fn run(template: &JobTemplate, answers: &[(&str, &str, i32)]) -> (i32, String) {
        static RUNS: AtomicU32 = AtomicU32::new(0);
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("ratchet-neutron-{}-{run}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let arms: String = answers
            .iter()
            .map(|(args, out, rc)| format!("*'{args}') echo \"{out}\"; exit {rc} ;; "))
            .collect();
        let fake = dir.join("neutron-db-manage");
        std::fs::write(
            &fake,
            format!("#!/bin/sh\ncase \"$*\" in {arms}esac\nexit 0\n"),
        )
        .expect("stand-in");
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("executable");
        let log = dir.join("termination-log");
        let script =
            template.command[2].replace("/dev/termination-log", &log.display().to_string());
        let code = Command::new("/bin/sh")
            .args(["-c", &script])
            .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
            .output()
            .expect("sh runs")
            .status
            .code()
            .unwrap_or(-1);
        let message = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        (code, message.trim().to_string())
    }

    fn contract() -> JobTemplate {
        profile().phases[3].templates()[0].clone()
    }

    #[test]
    fn the_contract_runs_online_when_nothing_needs_the_servers_stopped() {
        let (code, message) = run(
            &contract(),
            &[(
                "has_offline_migrations",
                "No offline migrations pending.",
                0,
            )],
        );
        assert_eq!(
            (code, message.as_str()),
            (0, "has_offline_migrations exit 0: contract run online")
        );
        // The contract itself failing fails the Job with its own code.
        let (code, _) = run(
            &contract(),
            &[
                ("has_offline_migrations", "", 0),
                ("upgrade --contract", "FAILED", 255),
            ],
        );
        assert_eq!(code, 255);
    }

    #[test]
    fn pending_contract_migrations_ask_for_the_offline_step() {
        let (code, message) = run(
            &contract(),
            &[("has_offline_migrations", "Need to apply", 1)],
        );
        assert_eq!(code, OFFLINE_EXIT);
        assert!(
            message.contains("need every neutron server stopped"),
            "{message}"
        );
        let phase = &profile().phases[3];
        let offline = phase.offline().expect("an offline step");
        assert_eq!(offline.exit_code, OFFLINE_EXIT);
        assert_eq!(offline.stops, SERVERS);
        assert!(
            contract().fail_fast_exit_codes.contains(&OFFLINE_EXIT),
            "an answer, not retried"
        );
        // A broken database is a failure, not a request to stop the servers.
        assert_eq!(
            run(&contract(), &[("has_offline_migrations", "", 255)]).0,
            255
        );
    }

    #[test]
    fn the_sync_passes_a_schema_a_newer_release_expanded_and_nothing_else() {
        let sync = profile().db_sync[0].clone();
        assert_eq!(run(&sync, &[]).0, 0);
        let (code, message) = run(
            &sync,
            &[(
                "upgrade heads",
                "ResolutionError: No such revision or branch 'c7f8d9e0f1a2'",
                1,
            )],
        );
        assert_eq!(code, 0);
        assert!(message.contains("ahead of this release"), "{message}");
        assert_eq!(run(&sync, &[("upgrade heads", "Access denied", 1)]).0, 1);
    }
}
