//! What a service plugs into the machine: its Jobs, its upgrade phases and how
//! its workloads move. The machine is the same for every service.

/// A Job the machine may run, named `<resource>-<suffix>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobTemplate {
    pub suffix: &'static str,
    pub command: Vec<String>,
    /// Exit codes that fail the Job at once instead of being retried (a pod
    /// failure policy); other failures are retried up to the backoff limit.
    pub fail_fast_exit_codes: Vec<i32>,
    /// Pod failures the Job controller retries (default 4). Commands whose exit
    /// code means "run again" (e.g. online migrations that made progress) get room
    /// here for their re-runs.
    pub backoff_limit: Option<i32>,
    /// Failure reasons by the exit code of the last failed pod, overriding the
    /// phase's generic failure reason (e.g. Ironic's "previous release's online
    /// migrations never completed").
    pub exit_reasons: Vec<ExitReason>,
    /// The upgrade check the Job runs in the shared wrapper, whose exit code
    /// its termination message carries, reported once per Job.
    pub check: Option<UpgradeCheck>,
}

/// An oslo.upgradecheck command run by the check wrapper.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpgradeCheck {
    pub binary: String,
    /// Exit codes the wrapper turns into success (reported, not failed).
    pub tolerates: Vec<i32>,
}

/// A failure reason for one exit code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitReason {
    pub exit_code: i32,
    pub reason: &'static str,
    pub explanation: &'static str,
}

/// A code of a service's schema check meaning "migrations still pending",
/// and what a checked phase Job makes of it ([`JobTemplate::checked_step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemaPending {
    pub check_code: i32,
    pub job_exit: i32,
    pub reason: &'static str,
    pub explanation: &'static str,
}

/// Which RPC/object version pin new pods run with during a roll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pin {
    /// No explicit pin (Cinder pins itself from the services table).
    None,
    /// Pinned to the installed release (Ironic's `pin_release_version`).
    Installed,
}

/// What a phase does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Run a Job on the target image; the phase ends when it succeeds.
    Job {
        template: JobTemplate,
        /// DatabaseReady's reason and Warning event when it fails permanently.
        failed_reason: &'static str,
    },
    /// Roll every workload, in roll order, onto the target image, each gated on
    /// its complete rollout before the next starts.
    Roll { pin: Pin },
}

/// One upgrade phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    /// The value of `status.upgradePhase` (e.g. `Expanding`).
    pub name: &'static str,
    /// DatabaseReady's reason while the phase runs (e.g. `ExpandInProgress`).
    pub in_progress_reason: &'static str,
    /// Normal event when the phase completes (e.g. `ExpandComplete`).
    pub complete_event: Option<&'static str>,
    pub step: Step,
    /// Whether reverting to the installed release still aborts cleanly once this
    /// phase has started (false from the point of no return on).
    pub abortable: bool,
    /// Why aborting during this abortable phase needs the operator's care first
    /// (`ratchet abort` then asks for `--force`); `None` when it is plainly safe.
    pub abort_caution: Option<&'static str>,
}

impl Phase {
    /// Seed 000's `Expanding`: additive schema changes on the target image.
    pub fn expanding(template: JobTemplate) -> Phase {
        Phase {
            name: "Expanding",
            in_progress_reason: "ExpandInProgress",
            complete_event: Some("ExpandComplete"),
            step: Step::Job {
                failed_reason: "ExpandFailed",
                template,
            },
            abortable: true,
            abort_caution: None,
        }
    }

    /// Seed 000's `Migrating`: the check (or data migrations) between expand
    /// and the roll.
    pub fn migrating(template: JobTemplate) -> Phase {
        Phase {
            name: "Migrating",
            in_progress_reason: "MigrateInProgress",
            complete_event: Some("MigrateComplete"),
            step: Step::Job {
                failed_reason: "MigrateFailed",
                template,
            },
            abortable: true,
            abort_caution: None,
        }
    }

    /// Seed 000's `Contracting`, after the roll. The operator clears the
    /// upgrade state from any phase; `caution` is why the CLI refuses a
    /// Contracting abort unless forced.
    pub fn contracting(template: JobTemplate, caution: &'static str) -> Phase {
        Phase {
            name: "Contracting",
            in_progress_reason: "ContractInProgress",
            complete_event: None,
            step: Step::Job {
                failed_reason: "ContractFailed",
                template,
            },
            abortable: true,
            abort_caution: Some(caution),
        }
    }

    /// Seed 000's `RollingUpdate`: every workload rolls to the target image in
    /// roll order, unpinned, and the upgrade can still be aborted.
    pub fn rolling_update() -> Phase {
        Phase {
            name: "RollingUpdate",
            in_progress_reason: "UpgradeRollingUpdate",
            complete_event: Some("DeploymentRolloutComplete"),
            step: Step::Roll { pin: Pin::None },
            abortable: true,
            abort_caution: None,
        }
    }
}

/// A service's profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Lower-case service name, used in messages (`cinder`).
    pub service: &'static str,
    /// The steady-state schema sync (fresh install and patch bumps).
    pub db_sync: JobTemplate,
    /// Upgrade phases in order; the installed release is promoted after the last.
    pub phases: Vec<Phase>,
    /// Replicas each workload needs for a rolling upgrade with minimal downtime;
    /// fewer is a warning (the `HighlyAvailable` condition), never a refusal.
    pub minimum_replicas: Option<i32>,
}

impl JobTemplate {
    pub const DEFAULT_BACKOFF_LIMIT: i32 = 4;

    /// An oslo.upgradecheck `<binary> --config-dir <dir> upgrade check` (0 ok,
    /// 1 warning, 2 failure, 255 error) in the one wrapper every service
    /// shares. It prints the check's table to the log and records
    /// `<binary> upgrade check exit <rc>` in the termination message; it exits
    /// 0 for the codes the service `tolerates`, which the machine reports once
    /// (warnings for the non-zero ones), and otherwise fails the Job at once
    /// with the check's own code, adding `; failed: <check>, …` (the names of
    /// the checks whose result is Failure) to the message, so the phase's
    /// failure names what to fix (a failed check fails the Job at once: it
    /// fails again until its cause is fixed).
    pub fn upgrade_check(
        suffix: &'static str,
        binary: &str,
        config_dir: &str,
        tolerates: &[i32],
    ) -> JobTemplate {
        let tolerated: Vec<String> = tolerates.iter().map(i32::to_string).collect();
        let script = format!(
            "out=$({binary} --config-dir {config_dir} upgrade check 2>&1); rc=$?; \
             printf '%s\\n' \"$out\"; \
             case $rc in {tolerated}) \
             echo \"{message}\" > /dev/termination-log; exit 0 ;; esac; \
             failed=$(printf '%s\\n' \"$out\" | awk -F'|' \
             '/ Check: /{{c=$2; sub(/^ *Check: */, \"\", c); sub(/ *$/, \"\", c)}} \
             / Result: Failure/{{printf \"%s%s\", s, c; s=\", \"}}'); \
             echo \"{message}${{failed:+; failed: $failed}}\" > /dev/termination-log; \
             exit $rc",
            tolerated = tolerated.join("|"),
            message = check_message(binary, "$rc"),
        );
        // A failed check fails again until its cause is fixed: no retries. An
        // unexpected error (255) may pass (the database was away): retried.
        let fail_fast = if tolerates.contains(&2) {
            vec![]
        } else {
            vec![2]
        };
        JobTemplate {
            suffix,
            command: vec!["/bin/sh".into(), "-c".into(), script],
            fail_fast_exit_codes: fail_fast,
            check: Some(UpgradeCheck {
                binary: binary.to_string(),
                tolerates: tolerates.to_vec(),
            }),
            ..JobTemplate::default()
        }
    }

    /// A schema step checked by the service's own schema check: `step`, then
    /// `check`, whose code must be among `accepted` after the phase. A code of
    /// `pending` ends the Job with that entry's exit code at once (running it
    /// again would not move the schema) and its reason; anything else (the
    /// step or the check crashed) with 1, retried.
    pub fn checked_step(
        suffix: &'static str,
        step: &str,
        check: &str,
        accepted: &[i32],
        pending: &[SchemaPending],
    ) -> JobTemplate {
        let accepted: Vec<String> = accepted.iter().map(i32::to_string).collect();
        let pending_arms: String = pending
            .iter()
            .map(|p| format!("{}) exit {} ;; ", p.check_code, p.job_exit))
            .collect();
        let script = format!(
            "{step} || exit 1; {check}; rc=$?; case $rc in {accepted}) exit 0 ;; \
             {pending_arms}esac; exit 1",
            accepted = accepted.join("|"),
        );
        JobTemplate {
            suffix,
            command: vec!["/bin/sh".into(), "-c".into(), script],
            fail_fast_exit_codes: pending.iter().map(|p| p.job_exit).collect(),
            exit_reasons: pending
                .iter()
                .map(|p| ExitReason {
                    exit_code: p.job_exit,
                    reason: p.reason,
                    explanation: p.explanation,
                })
                .collect(),
            ..JobTemplate::default()
        }
    }

    /// Whether the Job reports an upgrade check's exit code.
    pub fn reports_check(&self) -> bool {
        self.check.is_some()
    }

    /// The wrapper's exit code and termination message when the check exits
    /// `rc` (what a simulated check pod does too; a real one may add the names
    /// of failed checks to the message).
    pub fn check_result(&self, rc: i32) -> Option<(i32, String)> {
        let check = self.check.as_ref()?;
        let exit = if check.tolerates.contains(&rc) { 0 } else { rc };
        Some((exit, check_message(&check.binary, &rc.to_string())))
    }

    pub fn backoff_limit(&self) -> i32 {
        self.backoff_limit.unwrap_or(Self::DEFAULT_BACKOFF_LIMIT)
    }

    /// The failure reason for the last failed pod's exit code, if it has one.
    pub fn exit_reason(&self, exit_code: Option<i32>) -> Option<&ExitReason> {
        self.exit_reasons
            .iter()
            .find(|r| Some(r.exit_code) == exit_code)
    }
}

/// `<binary> upgrade check exit <rc>`: the wrapper's words, which
/// `check_exit_code` reads back.
fn check_message(binary: &str, rc: &str) -> String {
    format!("{binary} upgrade check exit {rc}")
}

impl Profile {
    pub fn phase(&self, name: &str) -> Option<(usize, &Phase)> {
        self.phases.iter().enumerate().find(|(_, p)| p.name == name)
    }

    /// The RPC/object version pin new pods run with while `phase` is current
    /// (the installed release during a pinned roll), or `None`.
    pub fn pin_during(&self, phase: &str, installed: &str) -> Option<String> {
        match self.phase(phase) {
            Some((
                _,
                Phase {
                    step:
                        Step::Roll {
                            pin: Pin::Installed,
                        },
                    ..
                },
            )) => Some(installed.to_string()),
            _ => None,
        }
    }

    /// Suffixes of every phase Job (deleted on abort and before a new upgrade).
    pub fn phase_job_suffixes(&self) -> Vec<&'static str> {
        self.phases
            .iter()
            .filter_map(|p| match &p.step {
                Step::Job { template: job, .. } => Some(job.suffix),
                Step::Roll { .. } => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::JobTemplate;

    /// What oslo.upgradecheck 2.x prints (captured from a real run).
    const TABLE: &str = "\
+-------------------------------------------+
| Upgrade Check Results                     |
+-------------------------------------------+
| Check: Database Schema                    |
| Result: Success                           |
| Details: None                             |
+-------------------------------------------+
| Check: Hardware Types and Interfaces      |
| Result: Failure                           |
| Details: DriverLoadError ipxe             |
+-------------------------------------------+
| Check: Policy File JSON to YAML Migration |
| Result: Warning                           |
| Details: something                        |
+-------------------------------------------+";

    /// Runs the wrapper with /bin/sh, a stand-in `svc-status` that prints the
    /// table and exits `rc`, and the termination log in a temporary file;
    /// returns the wrapper's exit code and termination message.
    fn run(tolerates: &[i32], rc: i32) -> (i32, String) {
        let dir = std::env::temp_dir().join(format!(
            "ratchet-check-{}-{rc}-{}",
            std::process::id(),
            tolerates.len()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let table = dir.join("table");
        std::fs::write(&table, TABLE).expect("table");
        let fake = dir.join("svc-status");
        std::fs::write(
            &fake,
            format!("#!/bin/sh\ncat {}\nexit {rc}\n", table.display()),
        )
        .expect("fake");
        let status = std::process::Command::new("chmod")
            .arg("+x")
            .arg(&fake)
            .status();
        assert!(status.is_ok_and(|s| s.success()));
        let log = dir.join("termination-log");
        let template = JobTemplate::upgrade_check("check", "svc-status", "/etc/svc", tolerates);
        let script =
            template.command[2].replace("/dev/termination-log", &log.display().to_string());
        let path = format!(
            "{}:{}",
            dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = std::process::Command::new("/bin/sh")
            .args(["-c", &script])
            .env("PATH", path)
            .output()
            .expect("sh runs");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Result: Failure"),
            "the table reaches the log"
        );
        let message = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        (out.status.code().unwrap_or(-1), message.trim().to_string())
    }

    #[test]
    fn tolerated_codes_succeed_with_the_seed_s_message() {
        assert_eq!(
            run(&[0, 1, 2], 2),
            (0, "svc-status upgrade check exit 2".into())
        );
        assert_eq!(
            run(&[0, 1], 1),
            (0, "svc-status upgrade check exit 1".into())
        );
        for (tolerates, rc) in [(&[0][..], 0), (&[0, 1], 1), (&[0, 1], 255)] {
            let template = JobTemplate::upgrade_check("check", "svc-status", "/etc/svc", tolerates);
            let (exit, message) = run(tolerates, rc);
            let simulated = template.check_result(rc).expect("a check");
            // The real wrapper may name failed checks after its own words.
            assert!(
                simulated.0 == exit && message.starts_with(&simulated.1),
                "a simulated check does what the wrapper does: {simulated:?} vs {exit} {message}"
            );
        }
        assert_eq!(JobTemplate::default().check_result(0), None);
    }

    #[test]
    fn other_codes_fail_with_their_own_code_naming_the_failed_checks() {
        assert_eq!(
            run(&[0, 1], 2),
            (
                2,
                "svc-status upgrade check exit 2; failed: Hardware Types and Interfaces".into()
            )
        );
        let template = JobTemplate::upgrade_check("check", "svc-status", "/etc/svc", &[0, 1]);
        assert_eq!(
            template.fail_fast_exit_codes,
            [2],
            "a failed check is not retried"
        );
        assert!(
            JobTemplate::upgrade_check("check", "s", "/d", &[0, 1, 2])
                .fail_fast_exit_codes
                .is_empty()
        );
    }
}
