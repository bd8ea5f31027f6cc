//! Draining a host before its pods restart: a workload whose model says how
//! (a [`HostDrain`]) is taken out of service by a Job before the roll replaces
//! its pods, and given back by another Job once its successor is rolled out;
//! the next workload waits for both. Work in flight on a host finishes before
//! its process stops, and no new work is sent to it meanwhile (docs/drain.md).
//! A workload whose pods are hosts of their own (`HostDrain::per_pod`) is
//! drained pod by pod, each pod's Jobs named after it.

use crate::decision::{Event, EventType, JobAction};
use crate::hash::job_spec_hash;
use crate::observe::{HostDrain, JobOutcome, Observed, ObservedJob};
use crate::vocabulary::event;

/// What one drain takes out of service: a workload's host, or one of its
/// pods (a StatefulSet's pod `<workload>-<ordinal>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Host<'a> {
    pub workload: &'a str,
    pub pod: Option<i32>,
}

impl<'a> Host<'a> {
    pub fn workload(workload: &'a str) -> Host<'a> {
        Host {
            workload,
            pod: None,
        }
    }

    pub fn pod(workload: &'a str, ordinal: i32) -> Host<'a> {
        Host {
            workload,
            pod: Some(ordinal),
        }
    }

    /// The workload's name, or the pod's.
    pub fn name(&self) -> String {
        match self.pod {
            Some(ordinal) => format!("{}-{ordinal}", self.workload),
            None => self.workload.to_string(),
        }
    }

    /// The Job key of its drain.
    pub fn drain_key(&self) -> String {
        format!("drain-{}", self.name())
    }

    /// The Job key of its return to service.
    pub fn undrain_key(&self) -> String {
        format!("undrain-{}", self.name())
    }

    /// A drain's command for this host: a pod's name comes last.
    fn command(&self, command: &[String]) -> Vec<String> {
        let mut command = command.to_vec();
        if self.pod.is_some() {
            command.push(self.name());
        }
        command
    }
}

/// Every host `drain` covers in the workload `workload` with `replicas`
/// pods: the workload's, or each pod's.
pub fn hosts<'a>(workload: &'a str, drain: &HostDrain, replicas: i32) -> Vec<Host<'a>> {
    if drain.per_pod {
        (0..replicas).map(|k| Host::pod(workload, k)).collect()
    } else {
        vec![Host::workload(workload)]
    }
}

/// Where a workload that is about to restart stands with its drain.
pub enum Before<'a> {
    /// Not drained yet: have this Job, and wait.
    Draining { job: JobAction, waits_for: &'a str },
    /// Drained (or its drain gave up): the restart may go ahead; the event
    /// says how it went.
    Drained { job: JobAction, event: Event },
}

/// The drain a restart of `host` onto `roll` (the roll's parameters, as
/// text) needs, and where it stands.
pub fn before_restart<'a>(
    obs: &Observed,
    host: Host,
    drain: &'a HostDrain,
    image: &str,
    roll: &str,
) -> Before<'a> {
    let command = host.command(&drain.drain);
    let hash = job_spec_hash(image, &command, &format!("{}\0{roll}", obs.config_hash));
    let job = ensure(host.drain_key(), image, &command, &hash, 2);
    let current = obs
        .jobs
        .get(&host.drain_key())
        .filter(|j| j.spec_hash == hash);
    match current.map(|j| (j, &j.outcome)) {
        Some((j, JobOutcome::Succeeded)) => Before::Drained {
            job,
            event: Event {
                kind: EventType::Normal,
                reason: event::HOST_DRAINED.into(),
                message: format!("{}: {}", host.name(), j.said().unwrap_or("drained")),
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
                    host.name()
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

/// Whether `host`, drained for some roll, must still be put back in
/// service: every drain Job that exists (this roll's, an aborted roll's) is
/// answered by a return whose hash names it, on `image`, what the workload
/// runs now. Called once it runs what the pass asks for and has rolled out.
pub fn after_restart(obs: &Observed, host: Host, drain: &HostDrain, image: &str) -> Option<After> {
    let drained = obs.jobs.get(&host.drain_key())?;
    let command = host.command(&drain.undrain);
    let hash = job_spec_hash("", &command, &drained.spec_hash);
    let job = ensure(host.undrain_key(), image, &command, &hash, 4);
    match obs
        .jobs
        .get(&host.undrain_key())
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

/// Whether what the pod of `host`'s drain Job said is still to be reported:
/// `drained` ended and `returned`, the host's return to service, does not
/// answer it yet (the controller reads pods only then).
pub fn report_due(
    host: Host,
    drain: &HostDrain,
    drained: &ObservedJob,
    returned: Option<&ObservedJob>,
) -> bool {
    let undrain = host.command(&drain.undrain);
    drained.outcome != JobOutcome::Running
        && returned.is_none_or(|r| r.spec_hash != job_spec_hash("", &undrain, &drained.spec_hash))
}
