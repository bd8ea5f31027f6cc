//! Pieces both the steady state and an upgrade use.

use std::collections::HashMap;

use ratchet_release::{ImageRef, Release, lockstep_mismatch};

use crate::conditions::{Verdict, standard};
use crate::decision::{
    CheckReport, Decision, DesiredStatus, Event, EventType, JobAction, Outcome, WorkloadAction,
};
use crate::drain::{self, After, Before, Host};
use crate::observe::{HostDrain, JobOutcome, Observed, ObservedWorkload, WorkloadId};
use crate::profile::Profile;
use crate::vocabulary::{condition, event, reason};

/// A refusal to advance: the DatabaseReady reason and message.
pub struct Blocked {
    pub reason: &'static str,
    pub message: String,
    /// Something else clears it soon by itself (the garbage collector): the
    /// pass waits, neither failing nor warning.
    pub waits: bool,
}

impl Blocked {
    pub fn new(reason: &'static str, message: impl Into<String>) -> Blocked {
        Blocked {
            reason,
            message: message.into(),
            waits: false,
        }
    }
}

/// The validated spec: the requested release and image.
pub fn parse_spec(obs: &Observed) -> Result<(Release, ImageRef), Blocked> {
    let release = Release::parse(&obs.spec.release).map_err(|e| {
        Blocked::new(
            reason::VERSION_PARSE_ERROR,
            format!("spec.openStackRelease: {e}"),
        )
    })?;
    let image = ImageRef::new(
        &obs.spec.image_repository,
        obs.spec.image_tag.as_deref(),
        obs.spec.image_digest.as_deref(),
    )
    .map_err(|e| Blocked::new(reason::INVALID_IMAGE, e.message(obs.spec.image_layout)))?;
    if !obs.spec.invalid_config.is_empty() {
        return Err(Blocked::new(
            reason::INVALID_CONFIG,
            obs.spec.invalid_config.join("; "),
        ));
    }
    Ok((release, image))
}

/// `status.installedRelease`, empty meaning a fresh install.
pub fn parse_installed(obs: &Observed) -> Result<Option<Release>, Blocked> {
    match obs.status.installed_release.as_str() {
        "" => Ok(None),
        text => Release::parse(text).map(Some).map_err(|e| {
            Blocked::new(
                reason::VERSION_PARSE_ERROR,
                format!("status.installedRelease: {e}"),
            )
        }),
    }
}

pub fn secrets_present(obs: &Observed) -> Result<(), Blocked> {
    if obs.missing_secrets.is_empty() {
        Ok(())
    } else {
        Err(Blocked::new(
            reason::SECRET_MISSING,
            format!("missing: {}", obs.missing_secrets.join(", ")),
        ))
    }
}

/// Children the resource may not take as its own hold it until they are gone.
pub fn children_own(obs: &Observed) -> Result<(), Blocked> {
    if obs.children_in_the_way.is_empty() {
        return Ok(());
    }
    Err(Blocked {
        waits: true,
        ..Blocked::new(
            reason::CHILDREN_NOT_OWNED,
            format!(
                "waiting for objects of this name that this resource does not own to go (a deleted predecessor's are removed by the garbage collector): {}",
                obs.children_in_the_way.join(", ")
            ),
        )
    })
}

/// Workloads that exist but the spec no longer asks for (a removed back end).
pub fn removed_workloads(obs: &Observed) -> Vec<WorkloadAction> {
    obs.workloads
        .keys()
        .filter(|name| !obs.desired_workloads.iter().any(|w| &w.name == *name))
        .map(|name| WorkloadAction::Delete { name: name.clone() })
        .collect()
}

/// The parameters a workload's pods run with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadParams {
    pub image: String,
    pub installed_release: String,
    pub pin: Option<String>,
}

impl WorkloadParams {
    pub fn apply(&self, workload: &WorkloadId) -> WorkloadAction {
        self.action(workload, false, None)
    }

    /// The workload with these parameters, scaled to no pod.
    pub fn stop(&self, workload: &WorkloadId) -> WorkloadAction {
        self.action(workload, true, None)
    }

    pub(crate) fn action(
        &self,
        workload: &WorkloadId,
        stopped: bool,
        partition: Option<i32>,
    ) -> WorkloadAction {
        WorkloadAction::Apply {
            name: workload.name.clone(),
            image: self.image.clone(),
            installed_release: self.installed_release.clone(),
            pin: self.pin.clone(),
            stopped,
            partition,
        }
    }

    /// [`Self::apply`], still holding the pods a per-pod drain has not
    /// released (a pass that may not move it must not release them all).
    fn apply_holding(
        &self,
        obs: &Observed,
        workload: &WorkloadId,
        live: Option<&ObservedWorkload>,
    ) -> WorkloadAction {
        let held = live
            .filter(|l| l.partition > 0 && self.current(obs, workload, l))
            .map(|l| l.partition);
        self.action(workload, false, held)
    }

    /// The live workload's template carries these parameters and the rendered
    /// configuration, and it was not stopped for an offline step.
    pub(crate) fn current(
        &self,
        obs: &Observed,
        workload: &WorkloadId,
        live: &ObservedWorkload,
    ) -> bool {
        !stopped(workload, live)
            && live.image == self.image
            && live.pin == self.pin
            && (!workload.carries_installed_release
                || live.installed_release.as_deref() == Some(self.installed_release.as_str()))
            && live.config_hash.as_deref() == Some(obs.config_hash.as_str())
    }

    /// The workload is current and has finished rolling out, every pod released.
    pub fn settled(&self, obs: &Observed, workload: &WorkloadId) -> bool {
        obs.workloads.get(&workload.name).is_some_and(|live| {
            self.current(obs, workload, live) && live.rollout.complete() && live.partition == 0
        })
    }

    /// The workload has settled and its hosts, if drained, are back in service.
    pub fn done(&self, obs: &Observed, workload: &WorkloadId) -> bool {
        self.settled(obs, workload) && self.pending_returns(obs, workload).is_empty()
    }

    /// What the roll's drain Jobs tell apart: one roll's parameters from another's.
    pub(crate) fn roll_key(&self) -> String {
        format!("{}\0{:?}", self.installed_release, self.pin)
    }

    /// The workloads to apply with these parameters, in roll order: one whose
    /// pods would restart waits until every workload before it is done.
    /// Restarting them together loses work: a Cinder scheduler that restarts
    /// sets to `error` the volumes it had handed to a back end that was itself
    /// restarting. A workload whose host is drained restarts once its drain
    /// Job is over, and is done once another Job gave its host back; one
    /// drained pod by pod rolls as `pod_roll` says.
    /// Missing workloads are created at once; current ones are applied as
    /// they are.
    pub fn ordered_roll(&self, obs: &Observed) -> Roll {
        let mut roll = Roll::default();
        let mut gate = RoleGate::new(obs.spec.max_parallel, &obs.desired_workloads);
        for workload in &obs.desired_workloads {
            let may_start = gate.may_start(&workload.role);
            let live = obs.workloads.get(&workload.name);
            let current = live.is_some_and(|l| self.current(obs, workload, l));
            match (&workload.drain, live) {
                (Some(drain), Some(live))
                    if drain.per_pod && may_start && self.pods_to_roll(obs, workload, live) =>
                {
                    self.drain_pods(obs, workload, drain, live, &mut roll);
                    gate.record(false);
                    continue;
                }
                (Some(drain), Some(_)) if !drain.per_pod && may_start && !current => {
                    self.drain(obs, workload, drain, &mut roll)
                }
                _ if may_start || live.is_none() || current => {
                    roll.workloads.push(self.apply_holding(obs, workload, live));
                }
                _ => {}
            }
            gate.record(self.settled(obs, workload) && self.returned(obs, workload, &mut roll));
        }
        roll
    }

    /// A workload about to restart: its drain's Job, and the restart once
    /// that is over.
    fn drain(&self, obs: &Observed, workload: &WorkloadId, drain: &HostDrain, roll: &mut Roll) {
        let host = Host::workload(&workload.name);
        match drain::before_restart(obs, host, drain, &self.image, &self.roll_key()) {
            Before::Draining { job, waits_for } => roll.draining(host, job, waits_for),
            Before::Drained { job, event } => {
                roll.jobs.push(job);
                roll.events.push(event);
                roll.workloads.push(self.apply(workload));
            }
        }
    }

    /// The hosts of `workload` still to be given back, with what that needs.
    pub(crate) fn pending_returns<'a>(
        &self,
        obs: &Observed,
        workload: &'a WorkloadId,
    ) -> Vec<(Host<'a>, After)> {
        let Some(drain) = &workload.drain else {
            return Vec::new();
        };
        let live = obs.workloads.get(&workload.name);
        let replicas = workload
            .replicas
            .fixed()
            .unwrap_or(0)
            .max(live.map_or(0, |l| l.rollout.desired));
        drain::hosts(&workload.name, drain, replicas)
            .into_iter()
            .filter_map(|host| Some((host, drain::after_restart(obs, host, drain, &self.image)?)))
            .collect()
    }

    /// Whether a settled workload's hosts are back in service, asking for the
    /// Jobs that give them back if not.
    fn returned(&self, obs: &Observed, workload: &WorkloadId, roll: &mut Roll) -> bool {
        let pending = self.pending_returns(obs, workload);
        let returned = pending.is_empty();
        for (host, after) in pending {
            roll.returning(host, after);
        }
        returned
    }
}

/// Which workload of a roll may start: every earlier role's workloads have
/// settled and been given back, and fewer than the bound of its own role's
/// have not (roles are runs of one `WorkloadId::role` in roll order). A role
/// of several workloads always keeps one in service: its others' drains move
/// work there (a Cinder back end disabled beside another), so the bound is at
/// most its size less one.
struct RoleGate<'a> {
    max_parallel: usize,
    sizes: HashMap<&'a str, usize>,
    role: Option<&'a str>,
    bound: usize,
    earlier_roles_done: bool,
    unfinished_in_role: usize,
}

impl<'a> RoleGate<'a> {
    fn new(max_parallel: u32, workloads: &'a [WorkloadId]) -> RoleGate<'a> {
        let mut sizes = HashMap::new();
        for workload in workloads {
            *sizes.entry(workload.role.as_str()).or_insert(0) += 1;
        }
        RoleGate {
            max_parallel: usize::try_from(max_parallel).unwrap_or(usize::MAX),
            sizes,
            role: None,
            bound: 1,
            earlier_roles_done: true,
            unfinished_in_role: 0,
        }
    }

    fn may_start(&mut self, role: &'a str) -> bool {
        if self.role != Some(role) {
            self.earlier_roles_done &= self.unfinished_in_role == 0;
            self.role = Some(role);
            self.unfinished_in_role = 0;
            let size = self.sizes.get(role).copied().unwrap_or(1);
            self.bound = self.max_parallel.min(size.saturating_sub(1)).max(1);
        }
        self.earlier_roles_done && self.unfinished_in_role < self.bound
    }

    /// Records whether the workload just looked at is done.
    fn record(&mut self, done: bool) {
        if !done {
            self.unfinished_in_role += 1;
        }
    }
}

/// What a roll asks for in one pass.
#[derive(Debug, Default)]
pub struct Roll {
    pub workloads: Vec<WorkloadAction>,
    /// Drain Jobs and the Jobs giving drained hosts back.
    pub jobs: Vec<JobAction>,
    /// How each drain that ended went.
    pub events: Vec<Event>,
    /// DeploymentsReady while a host is drained or given back.
    pub waiting: Option<Verdict>,
}

impl Roll {
    /// `host` is being drained by `job`.
    pub(crate) fn draining(&mut self, host: Host, job: JobAction, waits_for: &str) {
        self.jobs.push(job);
        self.waiting.get_or_insert(Verdict::no(
            reason::DRAINING,
            format!("draining {} before its restart: {waits_for}", host.name()),
        ));
    }

    /// `host` restarted and is being given back, or its return failed.
    pub(crate) fn returning(&mut self, host: Host, after: After) {
        let name = host.name();
        match after {
            After::Returning(job) => {
                self.jobs.push(job);
                self.waiting.get_or_insert(Verdict::no(
                    reason::ROLLOUT_IN_PROGRESS,
                    format!("giving {name} back to service after its restart"),
                ));
            }
            After::Failed { job, message } => {
                self.jobs.push(job);
                self.waiting.get_or_insert(
                    Verdict::no(
                        reason::RETURN_TO_SERVICE_FAILED,
                        format!(
                            "{name} stays out of service: the Job giving it back failed ({message}); \
                             fix the cause, then delete the Job to retry"
                        ),
                    )
                    .warn(),
                );
            }
        }
    }
}

/// Whether `live` was stopped for an offline step: no replica asked for
/// where the spec asks for some.
pub fn stopped(workload: &WorkloadId, live: &ObservedWorkload) -> bool {
    live.rollout.desired == 0 && workload.replicas.fixed().is_some_and(|r| r > 0)
}

/// Every desired workload is fully rolled out, whatever it runs.
pub fn all_rolled_out(obs: &Observed) -> bool {
    obs.desired_workloads.iter().all(|w| {
        obs.workloads
            .get(&w.name)
            .is_some_and(|o| o.rollout.complete())
    })
}

/// Whether every workload the spec asks for serves: it exists, its roll has
/// not stalled, and at most one of its pods is unavailable (what a rolling
/// restart takes down at a time; a lone pod must be up).
pub fn serving(obs: &Observed) -> bool {
    obs.desired_workloads.iter().all(|w| {
        obs.workloads.get(&w.name).is_some_and(|o| {
            let desired = o.rollout.desired;
            let needed = if desired > 1 { desired - 1 } else { desired };
            !o.stalled && o.rollout.available >= needed
        })
    })
}

/// The upgrade-check result of a reporting Job that succeeded and has not been
/// reported yet. Exit 0 or an unreadable code is a completed check; 1 and 2 are
/// warnings, never failures. The event names the checks that failed or warned.
pub fn check_report(profile: &Profile, obs: &Observed) -> Option<CheckReport> {
    profile
        .phase_job_runs(&obs.job_groups)
        .into_iter()
        .find_map(|run| {
            if !run.template.reports_check() {
                return None;
            }
            let observed = obs.jobs.get(&run.key())?;
            if observed.outcome != JobOutcome::Succeeded
                || obs.reported_check_job.as_deref() == Some(observed.uid.as_str())
            {
                return None;
            }
            Some(CheckReport {
                job_uid: observed.uid.clone(),
                event: check_event(profile.service, observed.termination_message.as_deref()),
            })
        })
}

/// The event reporting a tolerated check from its wrapper's termination message.
fn check_event(service: &str, message: Option<&str>) -> Event {
    let read = message.map(read_check_message).unwrap_or_default();
    let named = read.named();
    match read.exit_code {
        Some(rc @ (1 | 2)) => Event {
            kind: EventType::Warning,
            reason: event::UPGRADE_CHECK_WARNINGS.into(),
            message: if named.is_empty() {
                // A wrapper (or a simulated check) that named none.
                format!(
                    "{service} upgrade check exited {rc}: warnings or failed checks that do not block the upgrade; read the Job's log"
                )
            } else {
                format!(
                    "{service} upgrade check exited {rc}: {named}; these do not block the upgrade; the Job's log has each check's details"
                )
            },
        },
        Some(rc) if named.is_empty() => Event {
            kind: EventType::Normal,
            reason: event::UPGRADE_CHECK_COMPLETED.into(),
            message: format!("{service} upgrade check exited {rc}"),
        },
        Some(rc) => Event {
            kind: EventType::Normal,
            reason: event::UPGRADE_CHECK_COMPLETED.into(),
            message: format!("{service} upgrade check exited {rc}: {named}"),
        },
        None => Event {
            kind: EventType::Normal,
            reason: event::UPGRADE_CHECK_COMPLETED.into(),
            message: format!("{service} upgrade check finished; its exit code could not be read"),
        },
    }
}

/// What a check wrapper's termination message says
/// (`<binary> upgrade check exit <rc>[; failed: <check>, …][; warned: <check>, …]`,
/// written by [`crate::JobTemplate::upgrade_check`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckMessage {
    pub exit_code: Option<i32>,
    /// Checks whose result was Failure, in the check's order.
    pub failed: Vec<String>,
    /// Checks whose result was Warning, in the check's order.
    pub warned: Vec<String>,
}

impl CheckMessage {
    /// `failed: a, b; warned: c`, or empty when no check failed or warned.
    pub fn named(&self) -> String {
        [("failed", &self.failed), ("warned", &self.warned)]
            .iter()
            .filter(|(_, names)| !names.is_empty())
            .map(|(word, names)| format!("{word}: {}", names.join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Reads a check wrapper's termination message; what it cannot read stays
/// empty (an older wrapper wrote only the exit code).
pub fn read_check_message(message: &str) -> CheckMessage {
    let mut parts = message.trim().split("; ");
    let mut read = CheckMessage {
        exit_code: parts.next().and_then(check_exit_code),
        ..CheckMessage::default()
    };
    let names = |list: &str| -> Vec<String> {
        list.split(", ")
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(String::from)
            .collect()
    };
    for part in parts {
        if let Some(list) = part.strip_prefix("failed: ") {
            read.failed.extend(names(list));
        } else if let Some(list) = part.strip_prefix("warned: ") {
            read.warned.extend(names(list));
        }
    }
    read
}

/// The exit code in a wrapper's termination message, `... exit <rc>`.
fn check_exit_code(message: &str) -> Option<i32> {
    // The wrapper's own words come first; the checks' names may follow.
    let (_, rest) = message.trim().split_once("exit ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// `HighlyAvailable`, for profiles that name a replica minimum: a warning when
/// a workload runs fewer, since each restart of a lone replica is an outage.
fn advisories(profile: &Profile, obs: &Observed) -> Vec<(&'static str, Verdict)> {
    let Some(minimum) = profile.minimum_replicas else {
        return Vec::new();
    };
    let short: Vec<String> = obs
        .desired_workloads
        .iter()
        .filter_map(|w| Some((w, w.replicas.fixed()?)))
        .filter(|(_, replicas)| *replicas < minimum)
        .map(|(w, replicas)| format!("{} has {replicas}", w.name))
        .collect();
    let verdict = if short.is_empty() {
        Verdict::yes(
            reason::ENOUGH_REPLICAS,
            format!("every workload runs at least {minimum} replicas"),
        )
    } else {
        Verdict::no(
            reason::TOO_FEW_REPLICAS,
            format!(
                "{}; {} needs at least {minimum} replicas of each workload to stay available while it rolls",
                short.join(", "),
                profile.service
            ),
        )
        .warn()
    };
    vec![(condition::HIGHLY_AVAILABLE, verdict)]
}

/// Everything a pass decides, assembled.
pub struct Draft {
    pub installed_release: String,
    pub target_release: String,
    pub phase: String,
    pub rolling_workload: String,
    pub database: Verdict,
    pub deployments: Verdict,
    pub events: Vec<Event>,
    pub jobs: Vec<JobAction>,
    pub workloads: Vec<WorkloadAction>,
    pub outcome: Outcome,
}

impl Draft {
    pub fn finish(self, profile: &Profile, obs: &Observed) -> Decision {
        let (conditions, condition_events) = standard(
            &obs.status,
            obs.spec.generation,
            &obs.now,
            self.database,
            self.deployments,
            serving(obs),
            advisories(profile, obs)
                .into_iter()
                .chain(crate::advice::verdicts(profile, obs))
                .chain(
                    crate::registration::verdict(obs).map(|v| (condition::KEYSTONE_REGISTERED, v)),
                )
                .collect(),
        );
        let mut events = self.events;
        events.extend(condition_events);
        let phase_started_at = if self.phase.is_empty() {
            String::new()
        } else if self.phase == obs.status.phase && !obs.status.phase_started_at.is_empty() {
            obs.status.phase_started_at.clone()
        } else {
            obs.now.clone()
        };
        Decision {
            status: DesiredStatus {
                installed_release: self.installed_release,
                target_release: self.target_release,
                phase: self.phase,
                phase_started_at,
                rolling_workload: self.rolling_workload,
                conditions,
                observed_generation: obs.spec.generation,
            },
            events,
            jobs: self.jobs,
            workloads: self.workloads,
            check_report: check_report(profile, obs),
            outcome: self.outcome,
        }
    }
}

/// The image/release lockstep guard: a tag naming another release blocks.
pub fn lockstep(
    image: &ratchet_release::ImageRef,
    release: ratchet_release::Release,
    layout: ratchet_release::ImageLayout,
) -> Result<(), Blocked> {
    match lockstep_mismatch(image, release) {
        None => Ok(()),
        Some(named) => Err(Blocked::new(
            reason::IMAGE_RELEASE_MISMATCH,
            format!(
                "{}.tag {} names release {named} but spec.openStackRelease is {release}; change both together",
                layout.pin_field(),
                image.tag().unwrap_or_default()
            ),
        )),
    }
}

/// Nothing advances: no Job is started, no workload touched; the condition says
/// why (announced once) and the controller retries with backoff, or, for what
/// clears by itself, waits. An upgrade in
/// progress keeps its phase and target.
pub fn blocked(profile: &Profile, obs: &Observed, why: Blocked) -> Decision {
    let deployments = if all_rolled_out(obs) {
        Verdict::yes(
            reason::WORKLOADS_READY,
            "every workload is fully rolled out",
        )
    } else {
        Verdict::no(
            reason::WAITING_FOR_DATABASE,
            "held until the database condition clears",
        )
    };
    let message = why.message;
    let database = Verdict::no(why.reason, message.clone());
    Draft {
        installed_release: obs.status.installed_release.clone(),
        target_release: obs.status.target_release.clone(),
        phase: obs.status.phase.clone(),
        rolling_workload: String::new(),
        database: if why.waits { database } else { database.warn() },
        deployments,
        events: Vec::new(),
        jobs: Vec::new(),
        workloads: Vec::new(),
        outcome: if why.waits {
            Outcome::Waiting
        } else {
            Outcome::Failed {
                reason: why.reason.to_string(),
                message,
            }
        },
    }
    .finish(profile, obs)
}

#[cfg(test)]
mod tests {
    use super::{CheckMessage, check_event, check_exit_code, read_check_message};
    use crate::{Event, EventType};

    #[test]
    fn reads_wrapper_exit_codes() {
        assert_eq!(
            check_exit_code("cinder-status upgrade check exit 2"),
            Some(2)
        );
        assert_eq!(
            check_exit_code("cinder-status upgrade check exit 0\n"),
            Some(0)
        );
        assert_eq!(check_exit_code("exit 255"), Some(255));
        assert_eq!(
            check_exit_code("ironic-status upgrade check exit 2; failed: Hardware exit 3 Check"),
            Some(2)
        );
        assert_eq!(check_exit_code("garbage"), None);
        assert_eq!(check_exit_code(""), None);
        assert_eq!(check_exit_code("exit two"), None);
    }

    #[test]
    fn reads_the_checks_a_wrapper_names() {
        assert_eq!(
            read_check_message(
                "cinder-status upgrade check exit 2; failed: Service UUIDs, Attachment specs; \
                 warned: Use of Policy File\n"
            ),
            CheckMessage {
                exit_code: Some(2),
                failed: vec!["Service UUIDs".into(), "Attachment specs".into()],
                warned: vec!["Use of Policy File".into()],
            }
        );
        assert_eq!(
            read_check_message(
                "ironic-status upgrade check exit 1; warned: Policy File JSON to YAML Migration"
            ),
            CheckMessage {
                exit_code: Some(1),
                failed: vec![],
                warned: vec!["Policy File JSON to YAML Migration".into()],
            }
        );
        // An older wrapper's message, and ones that say nothing readable.
        assert_eq!(
            read_check_message("cinder-status upgrade check exit 0"),
            CheckMessage {
                exit_code: Some(0),
                ..CheckMessage::default()
            }
        );
        assert_eq!(read_check_message(""), CheckMessage::default());
        assert_eq!(
            read_check_message("garbage; failed: ; something: else"),
            CheckMessage::default()
        );
    }

    fn warning(message: &str) -> Event {
        Event {
            kind: EventType::Warning,
            reason: "UpgradeCheckWarnings".into(),
            message: message.into(),
        }
    }

    fn normal(message: &str) -> Event {
        Event {
            kind: EventType::Normal,
            reason: "UpgradeCheckCompleted".into(),
            message: message.into(),
        }
    }

    #[test]
    fn the_report_names_the_checks_that_failed_or_warned() {
        assert_eq!(
            check_event(
                "cinder",
                Some(
                    "cinder-status upgrade check exit 2; failed: Service UUIDs; warned: Use of Policy File"
                )
            ),
            warning(
                "cinder upgrade check exited 2: failed: Service UUIDs; warned: Use of Policy File; these do not block the upgrade; the Job's log has each check's details"
            )
        );
        assert_eq!(
            check_event(
                "ironic",
                Some(
                    "ironic-status upgrade check exit 1; warned: Policy File JSON to YAML Migration"
                )
            ),
            warning(
                "ironic upgrade check exited 1: warned: Policy File JSON to YAML Migration; these do not block the upgrade; the Job's log has each check's details"
            )
        );
    }

    #[test]
    fn a_report_without_names_says_what_it_can() {
        assert_eq!(
            check_event("cinder", Some("cinder-status upgrade check exit 2")),
            warning(
                "cinder upgrade check exited 2: warnings or failed checks that do not block the upgrade; read the Job's log"
            )
        );
        assert_eq!(
            check_event("cinder", Some("cinder-status upgrade check exit 0")),
            normal("cinder upgrade check exited 0")
        );
        for message in [None, Some(""), Some("garbage")] {
            assert_eq!(
                check_event("cinder", message),
                normal("cinder upgrade check finished; its exit code could not be read")
            );
        }
    }
}
