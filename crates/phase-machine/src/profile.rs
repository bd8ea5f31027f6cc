//! What a service plugs into the machine: its Jobs, its upgrade phases and how
//! its workloads move. The machine is the same for every service.

use crate::decision::JobAction;
use crate::hash::job_spec_hash;

/// A Job the machine may run, named `<resource>-<suffix>` (per group:
/// `<resource>-<suffix>-<group>`).
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
    /// Whether it runs once per Job group the resource declares (e.g. each
    /// Nova cell's schema), one group after another, as Job
    /// `<resource>-<suffix>-<group>` with that group's Secrets; otherwise once,
    /// as `<resource>-<suffix>`.
    pub per_group: bool,
    /// Whether its pod's termination message reports what it did (e.g. the
    /// rows online data migrations moved): read once it succeeded, and quoted
    /// in the event that announces the end of its phase.
    pub reports: bool,
    /// An advisory condition its report sets (it must report): what it found
    /// stays in the status after its phase, while the event quoting it scrolls away.
    pub advice: Option<Advice>,
}

/// An advisory condition set from what a reporting Job's runs said: True
/// when every run said `all_clear`, False (a Warning) naming what the others
/// said. Like `HighlyAvailable`, it never affects Ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Advice {
    pub condition: &'static str,
    /// What a run that found nothing says, whole.
    pub all_clear: &'static str,
    pub clear_reason: &'static str,
    pub found_reason: &'static str,
}

/// One Job a template stands for: the template once, or for one group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobRun<'a> {
    pub template: &'a JobTemplate,
    pub group: Option<&'a str>,
}

impl JobRun<'_> {
    /// The Job's key among the resource's Jobs: the suffix of its name.
    pub fn key(&self) -> String {
        match self.group {
            Some(group) => format!("{}-{group}", self.template.suffix),
            None => self.template.suffix.to_string(),
        }
    }

    /// Its pod-spec hash on `image` with the configuration `config_hash`: a
    /// group's Job is another Job than the same template's for another group.
    pub fn spec_hash(&self, image: &str, config_hash: &str) -> String {
        match self.group {
            Some(group) => job_spec_hash(
                image,
                &self.template.command,
                &format!("{config_hash}\0group={group}"),
            ),
            None => job_spec_hash(image, &self.template.command, config_hash),
        }
    }

    /// The action that makes the Job exist with that hash.
    pub fn ensure(&self, image: &str, spec_hash: String) -> JobAction {
        let t = self.template;
        JobAction::Ensure {
            suffix: self.key(),
            group: self.group.map(str::to_string),
            image: image.to_string(),
            command: t.command.clone(),
            spec_hash,
            backoff_limit: t.backoff_limit(),
            fail_fast_exit_codes: t.fail_fast_exit_codes.clone(),
        }
    }
}

/// The Jobs `templates` stand for, in the order they run: each template's
/// (once, or per group in the groups' order) before the next template's.
pub fn job_runs<'a>(templates: &'a [JobTemplate], groups: &'a [String]) -> Vec<JobRun<'a>> {
    templates
        .iter()
        .flat_map(|template| {
            let groups: Vec<Option<&'a str>> = if template.per_group {
                groups.iter().map(|g| Some(g.as_str())).collect()
            } else {
                vec![None]
            };
            groups
                .into_iter()
                .map(move |group| JobRun { template, group })
        })
        .collect()
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
    /// Run Jobs on the target image, one after another ([`job_runs`]); the
    /// phase ends when the last succeeds.
    Jobs {
        templates: Vec<JobTemplate>,
        /// DatabaseReady's reason and Warning event when one fails permanently.
        failed_reason: &'static str,
        /// What the phase does when a Job says it must run with workloads
        /// stopped; `None`: such an answer is a failure like any other.
        offline: Option<Box<Offline>>,
    },
    /// Roll every workload, in roll order, onto the target image, each gated on
    /// its complete rollout before the next starts.
    Roll { pin: Pin },
}

/// A phase's work that needs some workloads stopped (Neutron's contract
/// migrations need every server process down). The phase's Jobs run online
/// first; one that ends with `exit_code` says the work must run offline. If
/// the spec allows an outage, the workloads of `stops` are stopped (no pod
/// left), `template`'s Job runs, and they are started again and rolled out
/// before the phase ends; otherwise the phase holds, saying why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offline {
    pub exit_code: i32,
    /// Components of the workloads stopped.
    pub stops: Vec<&'static str>,
    pub template: JobTemplate,
}

impl Offline {
    /// Its Job: once, never per group.
    pub fn run(&self) -> JobRun<'_> {
        JobRun {
            template: &self.template,
            group: None,
        }
    }
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
            step: Step::Jobs {
                failed_reason: "ExpandFailed",
                templates: vec![template],
                offline: None,
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
            step: Step::Jobs {
                failed_reason: "MigrateFailed",
                templates: vec![template],
                offline: None,
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
            step: Step::Jobs {
                failed_reason: "ContractFailed",
                templates: vec![template],
                offline: None,
            },
            abortable: true,
            abort_caution: Some(caution),
        }
    }

    /// The same phase with `template` run after its Jobs (e.g. each cell's
    /// schema after the API database's). A roll phase runs no Jobs: it is
    /// returned unchanged.
    pub fn then(mut self, template: JobTemplate) -> Phase {
        if let Step::Jobs { templates, .. } = &mut self.step {
            templates.push(template);
        }
        self
    }

    /// The same phase, running its work offline when a Job asks for it.
    /// A roll phase is returned unchanged.
    pub fn with_offline(mut self, step: Offline) -> Phase {
        if let Step::Jobs {
            offline, templates, ..
        } = &mut self.step
        {
            // "Run me offline" is an answer, not a failure to retry.
            for template in templates.iter_mut() {
                if !template.fail_fast_exit_codes.contains(&step.exit_code) {
                    template.fail_fast_exit_codes.push(step.exit_code);
                }
            }
            *offline = Some(Box::new(step));
        }
        self
    }

    /// Whether the Job of `key` may ask for this phase's offline step (its
    /// exit code must then be read).
    pub fn may_ask_offline(&self, key: &str, groups: &[String]) -> bool {
        self.offline().is_some()
            && job_runs(self.templates(), groups)
                .iter()
                .any(|run| run.key() == key)
    }

    /// Its offline step, if it has one.
    pub fn offline(&self) -> Option<&Offline> {
        match &self.step {
            Step::Jobs { offline, .. } => offline.as_deref(),
            Step::Roll { .. } => None,
        }
    }

    /// The Jobs this phase runs (none for a roll).
    pub fn templates(&self) -> &[JobTemplate] {
        match &self.step {
            Step::Jobs { templates, .. } => templates,
            Step::Roll { .. } => &[],
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
    /// The steady-state schema sync (fresh install and patch bumps), one Job
    /// after another ([`job_runs`]).
    pub db_sync: Vec<JobTemplate>,
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
    /// `<binary> upgrade check exit <rc>` in the termination message, followed
    /// by `; failed: <check>, …` and `; warned: <check>, …` (the checks whose
    /// result is Failure or Warning, read off the table), so the report names
    /// what to look at without the log. It exits 0 for the codes the service
    /// `tolerates`, which the machine reports once (warnings for the non-zero
    /// ones), and otherwise with the check's own code: a Failure (2) fails the
    /// Job at once, since it fails again until its cause is fixed, and a phase
    /// that gives the code a reason quotes the message (Ironic's does).
    pub fn upgrade_check(
        suffix: &'static str,
        binary: &str,
        config_dir: &str,
        tolerates: &[i32],
    ) -> JobTemplate {
        let tolerated: Vec<String> = tolerates.iter().map(i32::to_string).collect();
        // Without awk the names are missing, never the exit code.
        let script = format!(
            "out=$({binary} --config-dir {config_dir} upgrade check 2>&1); rc=$?; \
             printf '%s\\n' \"$out\"; \
             named=$(printf '%s\\n' \"$out\" | awk -F'|' '{CHECK_NAMES_AWK}'); \
             printf '%s\\n' \"{message}$named\" > /dev/termination-log; \
             case $rc in {tolerated}) exit 0 ;; esac; exit $rc",
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
/// `shared::read_check_message` reads back.
fn check_message(binary: &str, rc: &str) -> String {
    format!("{binary} upgrade check exit {rc}")
}

/// The awk program that reads oslo.upgradecheck's table (`| Check: <name> |`,
/// then `| Result: Success|Warning|Failure |`; details are wrapped with an
/// indent, so they never start a cell with `Check:`) into `; failed: <name>,
/// …; warned: <name>, …`. The kubelet keeps only a termination message's last
/// 4096 bytes and an event's note holds 1 KiB: the names are cut at 960
/// characters, so the exit code before them always survives.
const CHECK_NAMES_AWK: &str = "\
$2 ~ /^ Check: / { c = $2; sub(/^ Check: */, \"\", c); sub(/ *$/, \"\", c) } \
$2 ~ /^ Result: Failure/ { f = f (f == \"\" ? \"\" : \", \") c } \
$2 ~ /^ Result: Warning/ { w = w (w == \"\" ? \"\" : \", \") c } \
END { if (f != \"\") s = \"; failed: \" f; if (w != \"\") s = s \"; warned: \" w; \
if (length(s) > 960) s = substr(s, 1, 957) \"...\"; printf \"%s\", s }";

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

    /// Every phase Job with these groups, phase after phase.
    pub fn phase_job_runs<'a>(&'a self, groups: &'a [String]) -> Vec<JobRun<'a>> {
        self.phases
            .iter()
            .flat_map(|p| job_runs(p.templates(), groups))
            .collect()
    }

    /// The offline steps' Jobs.
    pub fn offline_job_runs(&self) -> impl Iterator<Item = JobRun<'_>> {
        self.phases
            .iter()
            .filter_map(Phase::offline)
            .map(Offline::run)
    }

    /// The template behind the Job of key `key` (a sync or phase Job), with
    /// these groups.
    pub fn template_of<'a>(&'a self, key: &str, groups: &'a [String]) -> Option<&'a JobTemplate> {
        job_runs(&self.db_sync, groups)
            .into_iter()
            .chain(self.phase_job_runs(groups))
            .chain(self.offline_job_runs())
            .find(|run| run.key() == key)
            .map(|run| run.template)
    }
}

#[cfg(test)]
mod tests {
    use super::JobTemplate;
    use crate::shared::{CheckMessage, read_check_message};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// What oslo.upgradecheck 2.8.0 prints for cinder 29.0.0's checks with two
    /// warnings and a failure (captured from a real run: a volume row still
    /// `creating`, a missing policy file, a non-default periodic interval).
    const TABLE: &str = "\
+----------------------------------------------------------------------+
| Upgrade Check Results                                                |
+----------------------------------------------------------------------+
| Check: Backup Driver Path                                            |
| Result: Success                                                      |
| Details: None                                                        |
+----------------------------------------------------------------------+
| Check: Use of Policy File                                            |
| Result: Warning                                                      |
| Details: Configured policy file '/tmp/ck/conf/nowhere.yaml' does not |
|   exist. This may be expected, but default policies will be          |
|   used until any desired overrides are added to the                  |
|   configured file.                                                   |
+----------------------------------------------------------------------+
| Check: Removed Drivers                                               |
| Result: Success                                                      |
| Details: None                                                        |
+----------------------------------------------------------------------+
| Check: Periodic Interval Use                                         |
| Result: Warning                                                      |
| Details: Detected non-default value for the 'periodic_interval'      |
|   option.  New configuration options have been introduced to         |
|   replace the use of 'periodic_interval' for some purposes.          |
|   Please consult the 'Upgrade' section of the Train release          |
|   notes for more information.                                        |
+----------------------------------------------------------------------+
| Check: Service UUIDs                                                 |
| Result: Failure                                                      |
| Details: Services and volumes must have a service UUID. Please fix   |
|   this issue by running Queens online data migrations.               |
+----------------------------------------------------------------------+
| Check: Attachment specs                                              |
| Result: Success                                                      |
| Details: None                                                        |
+----------------------------------------------------------------------+
| Check: Use of Nested Quota Driver                                    |
| Result: Success                                                      |
| Details: None                                                        |
+----------------------------------------------------------------------+";

    const NAMED: &str =
        "; failed: Service UUIDs; warned: Use of Policy File, Periodic Interval Use";

    /// Runs the wrapper with /bin/sh, a stand-in `svc-status` that prints
    /// `table` and exits `rc`, and the termination log in a temporary file;
    /// returns the wrapper's exit code and termination message.
    fn run_with(table: &str, tolerates: &[i32], rc: i32) -> (i32, String) {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ratchet-check-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let printed = dir.join("table");
        std::fs::write(&printed, table).expect("table");
        let fake = dir.join("svc-status");
        std::fs::write(
            &fake,
            format!("#!/bin/sh\ncat {}\nexit {rc}\n", printed.display()),
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
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim_end(),
            table.trim_end(),
            "the table reaches the log"
        );
        let message = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        (out.status.code().unwrap_or(-1), message.trim().to_string())
    }

    fn run(tolerates: &[i32], rc: i32) -> (i32, String) {
        run_with(TABLE, tolerates, rc)
    }

    #[test]
    fn tolerated_codes_succeed_naming_the_checks_that_failed_or_warned() {
        assert_eq!(
            run(&[0, 1, 2], 2),
            (0, format!("svc-status upgrade check exit 2{NAMED}"))
        );
        assert_eq!(
            run(&[0, 1], 1),
            (0, format!("svc-status upgrade check exit 1{NAMED}"))
        );
        for (tolerates, rc) in [(&[0][..], 0), (&[0, 1], 1), (&[0, 1], 255)] {
            let template = JobTemplate::upgrade_check("check", "svc-status", "/etc/svc", tolerates);
            let (exit, message) = run(tolerates, rc);
            let simulated = template.check_result(rc).expect("a check");
            // The real wrapper names checks after its own words.
            assert!(
                simulated.0 == exit && message.starts_with(&simulated.1),
                "a simulated check does what the wrapper does: {simulated:?} vs {exit} {message}"
            );
        }
        assert_eq!(JobTemplate::default().check_result(0), None);
    }

    #[test]
    fn a_clean_check_or_one_without_a_table_names_nothing() {
        let clean = TABLE
            .replace("Result: Warning", "Result: Success")
            .replace("Result: Failure", "Result: Success");
        assert_eq!(
            run_with(&clean, &[0, 1], 0),
            (0, "svc-status upgrade check exit 0".into())
        );
        assert_eq!(
            run_with(
                "Traceback (most recent call last):\n  File \"x.py\"\n",
                &[0, 1],
                255
            ),
            (255, "svc-status upgrade check exit 255".into())
        );
    }

    #[test]
    fn other_codes_fail_with_their_own_code_naming_the_checks() {
        assert_eq!(
            run(&[0, 1], 2),
            (2, format!("svc-status upgrade check exit 2{NAMED}"))
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

    #[test]
    fn the_machine_reads_back_what_the_wrapper_writes() {
        let (_, message) = run(&[0, 1, 2], 2);
        assert_eq!(
            read_check_message(&message),
            CheckMessage {
                exit_code: Some(2),
                failed: vec!["Service UUIDs".into()],
                warned: vec!["Use of Policy File".into(), "Periodic Interval Use".into()],
            }
        );
    }

    #[test]
    fn many_long_names_are_cut_so_the_exit_code_survives_the_kubelet() {
        let mut table = String::from("| Upgrade Check Results |\n");
        for i in 0..100 {
            table.push_str(&format!(
                "| Check: A check with a rather long name number {i} |\n| Result: Failure |\n| Details: None |\n"
            ));
        }
        let (exit, message) = run_with(&table, &[0, 1, 2], 2);
        assert_eq!(exit, 0);
        // The kubelet keeps a longer message's end; an event's note holds 1 KiB.
        assert!(message.len() <= 1000, "{} bytes", message.len());
        assert!(message.ends_with("..."), "{message}");
        let read = read_check_message(&message);
        assert_eq!(read.exit_code, Some(2));
        assert_eq!(
            read.failed.first().map(String::as_str),
            Some("A check with a rather long name number 0")
        );
    }
}
