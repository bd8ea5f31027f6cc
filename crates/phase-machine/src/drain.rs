//! Draining a host before its pods restart: a workload whose model says how
//! (a [`HostDrain`]) is taken out of service by a Job before the roll replaces
//! its pods, and given back by another Job once its successor is rolled out;
//! the next workload waits for both. Work in flight on a host finishes before
//! its process stops, and no new work is sent to it meanwhile (docs/drain.md).

use crate::decision::{Event, EventType, JobAction};
use crate::hash::job_spec_hash;
use crate::observe::{HostDrain, JobOutcome, Observed, ObservedJob, WorkloadId};
use crate::vocabulary::event;

/// The Job key of a workload's drain.
pub fn drain_key(workload: &str) -> String {
    format!("drain-{workload}")
}

/// The Job key of a workload's return to service.
pub fn undrain_key(workload: &str) -> String {
    format!("undrain-{workload}")
}

/// Where a workload that is about to restart stands with its drain.
pub enum Before<'a> {
    /// Not drained yet: have this Job, and wait.
    Draining { job: JobAction, waits_for: &'a str },
    /// Drained (or its drain gave up): the restart may go ahead; the event
    /// says how it went.
    Drained { job: JobAction, event: Event },
}

/// The drain a restart of `workload` onto `roll` (the roll's parameters, as
/// text) needs, and where it stands.
pub fn before_restart<'a>(
    obs: &Observed,
    workload: &WorkloadId,
    drain: &'a HostDrain,
    image: &str,
    roll: &str,
) -> Before<'a> {
    let hash = job_spec_hash(image, &drain.drain, &format!("{}\0{roll}", obs.config_hash));
    let job = ensure(drain_key(&workload.name), image, &drain.drain, &hash, 2);
    let current = obs
        .jobs
        .get(&drain_key(&workload.name))
        .filter(|j| j.spec_hash == hash);
    match current.map(|j| (j, &j.outcome)) {
        Some((j, JobOutcome::Succeeded)) => Before::Drained {
            job,
            event: Event {
                kind: EventType::Normal,
                reason: event::HOST_DRAINED.into(),
                message: format!("{}: {}", workload.name, j.said().unwrap_or("drained")),
            },
        },
        Some((_, JobOutcome::Failed { message })) => Before::Drained {
            job,
            event: Event {
                kind: EventType::Warning,
                reason: event::DRAIN_FAILED.into(),
                message: format!(
                    "{}: its drain Job failed ({message}); restarting it undrained, \
                     work in flight on it may be lost",
                    workload.name
                ),
            },
        },
        Some((_, JobOutcome::Running)) | None => Before::Draining {
            job,
            waits_for: &drain.waits_for,
        },
    }
}

/// Where a workload that no longer waits to restart stands with giving its
/// host back: `None` when nothing was drained or it was given back.
pub enum After {
    /// Have this Job (its successor runs) and wait for it.
    Returning(JobAction),
    /// Its Job failed: the host stays out of service until it succeeds.
    Failed { job: JobAction, message: String },
}

/// Whether the host of `workload`, drained for some roll, must still be put
/// back in service: every drain Job that exists (this roll's, an aborted
/// roll's) is answered by a return whose hash names it, on `image`, what the
/// workload runs now. Called once it runs what the pass asks for and has
/// rolled out.
pub fn after_restart(
    obs: &Observed,
    workload: &WorkloadId,
    drain: &HostDrain,
    image: &str,
) -> Option<After> {
    let drained = obs.jobs.get(&drain_key(&workload.name))?;
    let hash = job_spec_hash("", &drain.undrain, &drained.spec_hash);
    let job = ensure(undrain_key(&workload.name), image, &drain.undrain, &hash, 4);
    match obs
        .jobs
        .get(&undrain_key(&workload.name))
        .filter(|j| j.spec_hash == hash)
        .map(|j| &j.outcome)
    {
        Some(JobOutcome::Succeeded) => None,
        Some(JobOutcome::Failed { message }) => Some(After::Failed {
            job,
            message: message.clone(),
        }),
        Some(JobOutcome::Running) | None => Some(After::Returning(job)),
    }
}

/// The drain's or return's Job: once, in no group, retried on any failure.
fn ensure(
    key: String,
    image: &str,
    command: &[String],
    hash: &str,
    backoff_limit: i32,
) -> JobAction {
    JobAction::Ensure {
        suffix: key,
        group: None,
        image: image.to_string(),
        command: command.to_vec(),
        spec_hash: hash.to_string(),
        backoff_limit,
        fail_fast_exit_codes: Vec::new(),
    }
}

/// Whether what the pod of `workload`'s drain Job said is still to be
/// reported: `drained` ended and `returned`, the
/// workload's return to service, does not answer it yet (the controller
/// reads pods only then).
pub fn report_due(
    drain: &HostDrain,
    drained: &ObservedJob,
    returned: Option<&ObservedJob>,
) -> bool {
    drained.outcome != JobOutcome::Running
        && returned
            .is_none_or(|r| r.spec_hash != job_spec_hash("", &drain.undrain, &drained.spec_hash))
}
