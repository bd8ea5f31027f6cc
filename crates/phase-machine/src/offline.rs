//! A phase's offline step: when one of its Jobs says the work needs workloads
//! stopped, hold unless the spec allows the outage; then stop them, wait until
//! no pod of theirs is left, run the offline Job, start them again and wait
//! until they are rolled out.

use crate::chain::{self, Chain};
use crate::conditions::Verdict;
use crate::decision::{JobAction, Outcome, WorkloadAction};
use crate::observe::{Observed, WorkloadId};
use crate::profile::{Offline, Phase};
use crate::shared::WorkloadParams;
use crate::vocabulary::reason;

/// Where the step stands.
pub enum OfflineStep {
    /// The offline Job succeeded and the stopped workloads serve again.
    Done,
    /// Holding, stopping, running, failed or starting again: the pass's
    /// DatabaseReady verdict, the Jobs and workloads to have, the outcome.
    Pending {
        database: Verdict,
        jobs: Vec<JobAction>,
        workloads: Vec<WorkloadAction>,
        outcome: Outcome,
    },
}

/// What the step works with.
pub struct Context<'a> {
    pub obs: &'a Observed,
    pub phase: &'a Phase,
    pub offline: &'a Offline,
    /// The phase's failure reason.
    pub failed_reason: &'static str,
    /// `<installed> → <target>`, for messages.
    pub span: &'a str,
    pub service: &'a str,
    pub image: &'a str,
    /// The parameters of this upgrade's last completed roll, if any: stopped
    /// workloads come back with them; otherwise with their own.
    pub rolled: Option<&'a WorkloadParams>,
    /// The online Jobs to keep (the one that asked for the offline step among them).
    pub online_jobs: Vec<JobAction>,
    /// What the other workloads get.
    pub others: Vec<WorkloadAction>,
}

/// The parameters `workload` is stopped and started with.
fn params_of(cx: &Context, workload: &WorkloadId) -> WorkloadParams {
    if let Some(rolled) = cx.rolled {
        return rolled.clone();
    }
    let live = cx.obs.workloads.get(&workload.name);
    WorkloadParams {
        image: live.map(|l| l.image.clone()).unwrap_or_default(),
        installed_release: live
            .and_then(|l| l.installed_release.clone())
            .unwrap_or_else(|| cx.obs.status.installed_release.clone()),
        pin: live.and_then(|l| l.pin.clone()),
    }
}

pub fn step(cx: Context) -> OfflineStep {
    let Context {
        obs,
        phase,
        offline,
        span,
        service,
        image,
        ..
    } = cx;
    let stops: Vec<&WorkloadId> = obs
        .desired_workloads
        .iter()
        .filter(|w| offline.stops.contains(&w.component.as_str()))
        .collect();
    let names = stops
        .iter()
        .map(|w| w.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let pending = |database: Verdict, jobs, workloads: Vec<WorkloadAction>, outcome| {
        let mut all = cx.others.clone();
        all.extend(workloads);
        OfflineStep::Pending {
            database,
            jobs,
            workloads: all,
            outcome,
        }
    };
    let keep: Vec<WorkloadAction> = stops
        .iter()
        .filter(|w| obs.workloads.contains_key(&w.name))
        .map(|w| params_of(&cx, w).stop(w))
        .collect();
    if !obs.spec.allows_outage {
        let message = format!(
            "{span}: {} needs {names} stopped (its Job exited {}); allow the outage in the spec to go on, or abort",
            phase.name, offline.exit_code
        );
        return pending(
            Verdict::no(reason::OUTAGE_NOT_ALLOWED, message).warn(),
            cx.online_jobs.clone(),
            Vec::new(),
            Outcome::Waiting,
        );
    }
    let look = chain::look(&[offline.run()], obs, image, "");
    match look.state {
        Chain::Done => {
            let starts: Vec<WorkloadAction> =
                stops.iter().map(|w| params_of(&cx, w).apply(w)).collect();
            if stops.iter().all(|w| params_of(&cx, w).settled(obs, w)) {
                return OfflineStep::Done;
            }
            let mut jobs = cx.online_jobs.clone();
            jobs.extend(look.ensures);
            pending(
                Verdict::no(
                    phase.in_progress_reason,
                    format!(
                        "{span}: {} starting {names} again after its offline Job",
                        phase.name
                    ),
                ),
                jobs,
                starts,
                Outcome::Waiting,
            )
        }
        Chain::Failed { job, message, .. } => {
            let text = format!(
                "{span}: {service}-{} failed in {} with {names} stopped ({message}); they stay stopped: fix the cause, then delete the Job to retry, or abort",
                offline.template.suffix, phase.name
            );
            let why = offline
                .template
                .exit_reason(job.exit_code)
                .map_or(cx.failed_reason, |r| r.reason);
            let mut jobs = cx.online_jobs.clone();
            jobs.extend(look.ensures);
            pending(
                Verdict::no(why, text.clone()).warn(),
                jobs,
                keep,
                Outcome::Failed {
                    reason: why.to_string(),
                    message: text,
                },
            )
        }
        Chain::Waiting(_) => {
            let gone = stops.iter().all(|w| {
                obs.workloads
                    .get(&w.name)
                    .is_none_or(|l| l.rollout.desired == 0 && l.rollout.total == 0)
            });
            let mut jobs = cx.online_jobs.clone();
            let doing = if gone {
                jobs.extend(look.ensures);
                format!(
                    "running {} with {names} stopped",
                    offline.template.command.join(" ")
                )
            } else {
                format!("stopping {names} for its offline Job (an outage the spec allows)")
            };
            // One reason from the first stop to the Job's end: one Warning
            // marks the outage's start; `OutageEnded` its end.
            pending(
                Verdict::no(
                    reason::OUTAGE_STARTED,
                    format!("{span}: {} {doing}", phase.name),
                )
                .warn(),
                jobs,
                keep,
                Outcome::Waiting,
            )
        }
    }
}
