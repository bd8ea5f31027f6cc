//! A release upgrade: initiation, the profile's phases in order, the hold on a
//! changed target, the abort, and the promotion of the installed release.

use ratchet_release::{ImageRef, Release};

use crate::chain::{self, Chain};
use crate::conditions::Verdict;
use crate::decision::{Decision, Event, EventType, JobAction, Outcome, WorkloadAction};
use crate::observe::{Observed, ObservedJob};
use crate::offline::{self, OfflineStep};
use crate::profile::{JobRun, Offline, Phase, Pin, Profile, Step, job_runs};
use crate::shared::{
    Blocked, Draft, Roll, WorkloadParams, all_rolled_out, blocked, lockstep, parse_installed,
    parse_spec, removed_workloads, secrets_present,
};
use crate::vocabulary::{event, reason};

fn normal(reason: &str, message: String) -> Event {
    Event {
        kind: EventType::Normal,
        reason: reason.to_string(),
        message,
    }
}

/// Every Job an upgrade may run: each phase's, its offline steps' too.
fn upgrade_job_runs<'a>(profile: &'a Profile, obs: &'a Observed) -> Vec<JobRun<'a>> {
    let mut runs = profile.phase_job_runs(&obs.job_groups);
    runs.extend(profile.offline_job_runs());
    runs
}

/// Delete actions for every phase Job that exists.
fn delete_phase_jobs(profile: &Profile, obs: &Observed) -> Vec<JobAction> {
    upgrade_job_runs(profile, obs)
        .iter()
        .map(JobRun::key)
        .filter(|key| obs.jobs.contains_key(key))
        .map(|suffix| JobAction::Delete { suffix })
        .collect()
}

/// Delete actions for phase Jobs of an *earlier* upgrade: a Job whose pod spec
/// is exactly what this upgrade runs in that phase is this upgrade's own (a pass
/// that read a stale resource repeats the initiation) and is kept.
fn delete_stale_phase_jobs(profile: &Profile, obs: &Observed, image: &str) -> Vec<JobAction> {
    upgrade_job_runs(profile, obs)
        .iter()
        .filter(|run| {
            obs.jobs
                .get(&run.key())
                .is_some_and(|j| j.spec_hash != run.spec_hash(image, ""))
        })
        .map(|run| JobAction::Delete { suffix: run.key() })
        .collect()
}

/// What an upgrade pass comes to.
pub enum Pass {
    Decided(Box<Decision>),
    /// The target was promoted with these events; the same pass continues as
    /// steady state on `observed`, the observation at the new release.
    Promoted {
        observed: Box<Observed>,
        events: Vec<Event>,
    },
}

impl From<Decision> for Pass {
    fn from(decision: Decision) -> Pass {
        Pass::Decided(Box::new(decision))
    }
}

/// An accepted single step forward: record the target, enter the first phase.
/// Phase Jobs left from an earlier upgrade are deleted first, so a stale
/// success can never advance this one.
pub fn initiate(
    profile: &Profile,
    obs: &Observed,
    installed: Release,
    target: Release,
    image: &ImageRef,
) -> Pass {
    let Some(first) = profile.phases.first() else {
        return blocked(
            profile,
            obs,
            Blocked::new(
                reason::UPGRADE_PATH_INVALID,
                format!("{} has no upgrade phases", profile.service),
            ),
        )
        .into();
    };
    let initiated = normal(
        event::UPGRADE_INITIATED,
        format!("{installed} → {target}: upgrade initiated with {image}"),
    );
    let leftovers = delete_stale_phase_jobs(profile, obs, &image.to_string());
    if !leftovers.is_empty() {
        // The deletions wake the controller; the first phase starts next pass.
        return Draft {
            installed_release: installed.to_string(),
            target_release: target.to_string(),
            phase: first.name.to_string(),
            rolling_workload: String::new(),
            database: Verdict::no(
                first.in_progress_reason,
                format!("{installed} → {target}: removing the previous upgrade's Jobs"),
            ),
            deployments: deployments_verdict(obs),
            events: vec![initiated],
            jobs: leftovers,
            workloads: Vec::new(),
            outcome: Outcome::Waiting,
        }
        .finish(profile, obs)
        .into();
    }
    advance(profile, obs, 0, installed, target, image, vec![initiated])
}

/// A pass while `status.upgradePhase` is set.
pub fn decide(profile: &Profile, obs: &Observed) -> Pass {
    match decide_or_block(profile, obs) {
        Ok(pass) => pass,
        Err(why) => blocked(profile, obs, why).into(),
    }
}

fn decide_or_block(profile: &Profile, obs: &Observed) -> Result<Pass, Blocked> {
    let (release, image) = parse_spec(obs)?;
    let installed = parse_installed(obs)?.ok_or_else(|| {
        Blocked::new(
            reason::VERSION_PARSE_ERROR,
            "status.installedRelease is empty during an upgrade",
        )
    })?;
    let target = Release::parse(&obs.status.target_release).map_err(|e| {
        Blocked::new(
            reason::VERSION_PARSE_ERROR,
            format!("status.targetRelease: {e}"),
        )
    })?;
    let (index, phase) = profile.phase(&obs.status.phase).ok_or_else(|| {
        Blocked::new(
            reason::UPGRADE_PATH_INVALID,
            format!(
                "status.upgradePhase {:?} is not a phase of {}",
                obs.status.phase, profile.service
            ),
        )
    })?;

    if release == installed {
        // The abort trigger; the lockstep guard is skipped on exactly this path.
        if !phase.abortable {
            return Err(Blocked::new(
                reason::ABORT_NOT_SAFE,
                format!(
                    "{installed} → {target}: cannot abort in {}: the services already run {target} unpinned; set spec.openStackRelease back to {target} to finish the upgrade",
                    phase.name
                ),
            ));
        }
        return Ok(abort(profile, obs, installed, target, phase).into());
    }
    if release != target {
        return Err(Blocked::new(
            reason::UPGRADE_TARGET_CHANGED,
            format!(
                "{installed} → {target}: spec.openStackRelease changed to {release} during the upgrade; set it back to {target} to continue or to {installed} to abort"
            ),
        ));
    }
    lockstep(&image, target, obs.spec.image_layout)?;
    secrets_present(obs)?;
    Ok(advance(
        profile,
        obs,
        index,
        installed,
        target,
        &image,
        Vec::new(),
    ))
}

fn abort(
    profile: &Profile,
    obs: &Observed,
    installed: Release,
    target: Release,
    phase: &Phase,
) -> Decision {
    // Jobs are deleted (with their pods) before the status is cleared: the
    // controller applies job actions before writing status.
    Draft {
        installed_release: installed.to_string(),
        target_release: String::new(),
        phase: String::new(),
        rolling_workload: String::new(),
        database: Verdict::no(
            reason::DB_SYNC_IN_PROGRESS,
            format!("{installed} → {target} aborted in {}; re-syncing the schema at {installed}", phase.name),
        ),
        deployments: deployments_verdict(obs),
        events: vec![normal(
            event::UPGRADE_ABORTED,
            format!("{installed} → {target}: aborted in {}; spec.openStackRelease was reverted to {installed}", phase.name),
        )],
        jobs: delete_phase_jobs(profile, obs),
        workloads: Vec::new(),
        outcome: Outcome::Waiting,
    }
    .finish(profile, obs)
}

fn deployments_verdict(obs: &Observed) -> Verdict {
    if all_rolled_out(obs) {
        Verdict::yes(
            reason::WORKLOADS_READY,
            "every workload is fully rolled out",
        )
    } else {
        Verdict::no(reason::ROLLOUT_IN_PROGRESS, "workloads are rolling")
    }
}

/// Runs phases from `index` on, moving through every phase that is already
/// complete in this same pass, until one is in progress, failed, or all are done.
fn advance(
    profile: &Profile,
    obs: &Observed,
    mut index: usize,
    installed: Release,
    target: Release,
    image: &ImageRef,
    mut events: Vec<Event>,
) -> Pass {
    let image_ref = image.to_string();
    let span = format!("{installed} → {target}");
    let mut jobs = Vec::new();
    // Reports of phases without an event of their own: UpgradeComplete's.
    let mut carried_reports = String::new();
    // Parameters of the last roll this upgrade completed: workloads keep them.
    let mut rolled: Option<WorkloadParams> =
        profile.phases[..index]
            .iter()
            .rev()
            .find_map(|p| match p.step {
                Step::Roll { pin } => Some(roll_params(&image_ref, installed, pin)),
                Step::Jobs { .. } => None,
            });
    while let Some(phase) = profile.phases.get(index) {
        match &phase.step {
            Step::Jobs {
                templates,
                failed_reason,
                offline,
            } => {
                let runs = job_runs(templates, &obs.job_groups);
                let look = chain::look(&runs, obs, &image_ref, "");
                jobs.extend(look.ensures);
                let asks_offline = |job: &ObservedJob| {
                    offline
                        .as_deref()
                        .filter(|o| job.exit_code == Some(o.exit_code))
                };
                match look.state {
                    Chain::Failed { job, .. } if let Some(offline) = asks_offline(job) => {
                        let others = keep_rolled(obs, rolled.as_ref(), &mut jobs, &mut events)
                            .into_iter()
                            .filter(|a| !stopped_by(a, obs, offline))
                            .collect();
                        let step = offline::step(offline::Context {
                            obs,
                            phase,
                            offline,
                            failed_reason,
                            span: &span,
                            service: profile.service,
                            image: &image_ref,
                            rolled: rolled.as_ref(),
                            online_jobs: jobs.clone(),
                            others,
                        });
                        let OfflineStep::Pending {
                            database,
                            jobs,
                            workloads,
                            outcome,
                        } = step
                        else {
                            events.push(normal(
                                event::OUTAGE_ENDED,
                                format!(
                                    "{span}: {} serve again; {}-{} ran while they were stopped",
                                    offline.stops.join(", "),
                                    profile.service,
                                    offline.template.suffix,
                                ),
                            ));
                            if let Some(reason) = phase.complete_event {
                                events.push(normal(
                                    reason,
                                    format!(
                                        "{span}: {}-{} succeeded with {} stopped",
                                        profile.service,
                                        offline.template.suffix,
                                        offline.stops.join(", ")
                                    ),
                                ));
                            }
                            index += 1;
                            continue;
                        };
                        return Draft {
                            installed_release: installed.to_string(),
                            target_release: target.to_string(),
                            phase: phase.name.to_string(),
                            rolling_workload: String::new(),
                            database,
                            deployments: deployments_verdict(obs),
                            events,
                            jobs,
                            workloads,
                            outcome,
                        }
                        .finish(profile, obs)
                        .into();
                    }
                    Chain::Done => {
                        let reported = reports(profile.service, &runs, obs);
                        match phase.complete_event {
                            Some(reason) => events.push(normal(
                                reason,
                                format!(
                                    "{span}: {} succeeded{reported}",
                                    chain::names(profile.service, &runs)
                                ),
                            )),
                            None => carried_reports.push_str(&reported),
                        }
                        index += 1;
                    }
                    Chain::Failed { run, job, message } => {
                        let special = run.template.exit_reason(job.exit_code);
                        let (why, explanation) = match special {
                            Some(r) => (r.reason, format!("{}; ", r.explanation)),
                            None => (*failed_reason, String::new()),
                        };
                        // What the pod itself said (e.g. the failed checks' names).
                        let said = job
                            .said()
                            .map(|m| format!("; its pod said: {m}"))
                            .unwrap_or_default();
                        let text = format!(
                            "{span}: {}-{} failed in {} ({message}{said}); {explanation}fix the cause, then delete the Job or change the image to retry",
                            profile.service,
                            run.key(),
                            phase.name
                        );
                        let kept = keep_rolled(obs, rolled.as_ref(), &mut jobs, &mut events);
                        return Draft {
                            installed_release: installed.to_string(),
                            target_release: target.to_string(),
                            phase: phase.name.to_string(),
                            rolling_workload: String::new(),
                            database: Verdict::no(why, text.clone()).warn(),
                            deployments: deployments_verdict(obs),
                            events,
                            jobs,
                            workloads: kept,
                            outcome: Outcome::Failed {
                                reason: why.to_string(),
                                message: text,
                            },
                        }
                        .finish(profile, obs)
                        .into();
                    }
                    Chain::Waiting(run) => {
                        let group = run.group.map(|g| format!(" for {g}")).unwrap_or_default();
                        let kept = keep_rolled(obs, rolled.as_ref(), &mut jobs, &mut events);
                        return Draft {
                            installed_release: installed.to_string(),
                            target_release: target.to_string(),
                            phase: phase.name.to_string(),
                            rolling_workload: String::new(),
                            database: Verdict::no(
                                phase.in_progress_reason,
                                format!(
                                    "{span}: {} running {}{group} on {image_ref}",
                                    phase.name,
                                    run.template.command.join(" ")
                                ),
                            ),
                            deployments: deployments_verdict(obs),
                            events,
                            jobs,
                            workloads: kept,
                            outcome: Outcome::Waiting,
                        }
                        .finish(profile, obs)
                        .into();
                    }
                }
            }
            Step::Roll { pin } => {
                let params = roll_params(&image_ref, installed, *pin);
                let total = obs.desired_workloads.len();
                let pending = obs
                    .desired_workloads
                    .iter()
                    .position(|w| !params.done(obs, w));
                let Some(position) = pending else {
                    if let Some(reason) = phase.complete_event {
                        events.push(normal(
                            reason,
                            format!("{span}: every workload rolled out on {image_ref}"),
                        ));
                    }
                    rolled = Some(params);
                    index += 1;
                    continue;
                };
                let workload = &obs.desired_workloads[position];
                let roll = params.ordered_roll(obs);
                let mut workloads = roll.workloads;
                workloads.extend(removed_workloads(obs));
                jobs.extend(roll.jobs);
                events.extend(roll.events);
                let stalled = obs.workloads.get(&workload.name).is_some_and(|w| w.stalled);
                let deployments = if let Some(host) = roll.waiting.filter(|_| !stalled) {
                    host
                } else if stalled {
                    Verdict::no(
                        reason::ROLLOUT_STALLED,
                        format!(
                            "{span}: {} made no progress within its deadline; check its pods",
                            workload.name
                        ),
                    )
                    .warn()
                } else {
                    Verdict::no(
                        reason::ROLLOUT_IN_PROGRESS,
                        format!("rolling {} ({}/{total})", workload.name, position + 1),
                    )
                };
                return Draft {
                    installed_release: installed.to_string(),
                    target_release: target.to_string(),
                    phase: phase.name.to_string(),
                    rolling_workload: workload.name.clone(),
                    database: Verdict::no(
                        phase.in_progress_reason,
                        format!(
                            "{span}: {} rolling {} ({}/{total})",
                            phase.name,
                            workload.name,
                            position + 1
                        ),
                    ),
                    deployments,
                    events,
                    jobs,
                    workloads,
                    outcome: Outcome::Waiting,
                }
                .finish(profile, obs)
                .into();
            }
        }
    }
    promote(obs, installed, target, events, &carried_reports)
}

fn roll_params(image: &str, installed: Release, pin: Pin) -> WorkloadParams {
    WorkloadParams {
        image: image.to_string(),
        installed_release: installed.to_string(),
        pin: match pin {
            Pin::None => None,
            Pin::Installed => Some(installed.to_string()),
        },
    }
}

/// Whether `action` is for a workload the offline step stops (the step
/// decides what those get).
fn stopped_by(action: &WorkloadAction, obs: &Observed, offline: &Offline) -> bool {
    let name = match action {
        WorkloadAction::Apply { name, .. } | WorkloadAction::Delete { name } => name,
    };
    obs.desired_workloads
        .iter()
        .any(|w| &w.name == name && offline.stops.contains(&w.component.as_str()))
}

/// Workloads rolled earlier in this upgrade keep their parameters; before the
/// roll, workloads are left exactly as they are.
/// The Jobs and events of their drains join the pass's.
fn keep_rolled(
    obs: &Observed,
    rolled: Option<&WorkloadParams>,
    jobs: &mut Vec<JobAction>,
    events: &mut Vec<Event>,
) -> Vec<WorkloadAction> {
    let roll = rolled.map_or_else(Roll::default, |params| params.ordered_roll(obs));
    jobs.extend(roll.jobs);
    events.extend(roll.events);
    let mut workloads = roll.workloads;
    workloads.extend(removed_workloads(obs));
    workloads
}

/// What the reporting Jobs of `runs` said of their work (their pods'
/// termination messages), as `; <job>: <message>` each.
fn reports(service: &str, runs: &[JobRun], obs: &Observed) -> String {
    runs.iter()
        .filter(|run| run.template.reports)
        .filter_map(|run| {
            let said = obs.jobs.get(&run.key())?.said()?;
            Some(format!("; {service}-{}: {said}", run.key()))
        })
        .collect()
}

/// Every phase is done: the installed release becomes the target, and the pass
/// continues as steady state at the new release (whose installed-release
/// annotation starts the second roll).
fn promote(
    obs: &Observed,
    installed: Release,
    target: Release,
    mut events: Vec<Event>,
    reports: &str,
) -> Pass {
    events.push(normal(
        event::UPGRADE_COMPLETE,
        format!("{installed} → {target}: upgrade complete; {target} is installed{reports}"),
    ));
    let mut observed = obs.clone();
    observed.status.installed_release = target.to_string();
    observed.status.target_release = String::new();
    observed.status.phase = String::new();
    Pass::Promoted {
        observed: Box::new(observed),
        events,
    }
}
