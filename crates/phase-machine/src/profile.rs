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
    /// Whether the Job's termination message carries an upgrade-check exit code
    /// (`... exit <rc>`) to report once per Job.
    pub reports_check: bool,
}

/// A failure reason for one exit code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitReason {
    pub exit_code: i32,
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
