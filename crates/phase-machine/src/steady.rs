//! Steady state: validation, the lockstep guard, the schema sync (fresh install
//! and patch bumps) and the workloads that follow it. A single step forward of
//! the release hands over to the upgrade.

use ratchet_release::StepRefusal;

use crate::chain::{self, Chain};
use crate::conditions::Verdict;
use crate::decision::Outcome;
use crate::observe::Observed;
use crate::profile::{Profile, job_runs};
use crate::registration;
use crate::shared::{
    Blocked, Draft, WorkloadParams, blocked, lockstep, parse_installed, parse_spec,
    removed_workloads, secrets_present,
};
use crate::upgrade::{self, Pass};
use crate::vocabulary::reason;

/// Decides one pass for a resource that is not upgrading.
pub fn decide(profile: &Profile, obs: &Observed) -> Pass {
    match decide_or_block(profile, obs) {
        Ok(pass) => pass,
        Err(why) => blocked(profile, obs, why).into(),
    }
}

fn decide_or_block(profile: &Profile, obs: &Observed) -> Result<Pass, Blocked> {
    let (release, image) = parse_spec(obs)?;
    let installed = parse_installed(obs)?;
    if let Some(installed) = installed {
        if let Some(refusal) = installed.refuse_step_to(release) {
            let reason = match refusal {
                StepRefusal::Downgrade { .. } => reason::DOWNGRADE_NOT_SUPPORTED,
                StepRefusal::SkipLevel { .. } => reason::UPGRADE_PATH_INVALID,
            };
            return Err(Blocked::new(reason, refusal.to_string()));
        }
        if installed.is_sequential_upgrade(release) {
            lockstep(&image, release, obs.spec.image_layout)?;
            secrets_present(obs)?;
            return Ok(upgrade::initiate(profile, obs, installed, release, &image));
        }
    }
    lockstep(&image, release, obs.spec.image_layout)?;
    secrets_present(obs)?;

    let image_ref = image.to_string();
    let runs = job_runs(&profile.db_sync, &obs.job_groups);
    let sync = chain::look(&runs, obs, &image_ref, &obs.config_hash);
    let (database, synced, failure) = match &sync.state {
        Chain::Done => (
            Verdict::yes(
                reason::DATABASE_SYNCED,
                format!("schema synced to {release} with {image_ref}"),
            )
            .notify(),
            true,
            None,
        ),
        Chain::Failed { run, job, message } => {
            let special = run.template.exit_reason(job.exit_code);
            let text = format!(
                "{}-{} failed on {image_ref}: {message}; {}fix the cause, then change the spec or delete the Job to retry",
                profile.service,
                run.key(),
                special
                    .map(|r| format!("{}; ", r.explanation))
                    .unwrap_or_default()
            );
            (
                Verdict::no(
                    special.map_or(reason::DB_SYNC_FAILED, |r| r.reason),
                    text.clone(),
                )
                .warn(),
                false,
                Some(text),
            )
        }
        Chain::Waiting(_) if upgraded_with(profile, obs, &image_ref) => (
            Verdict::yes(
                reason::DATABASE_SYNCED,
                format!(
                    "schema upgraded to {release} with {image_ref}; {} confirms it",
                    chain::names(profile.service, &runs)
                ),
            )
            .notify(),
            true,
            None,
        ),
        Chain::Waiting(run) if sync.finishing_earlier_spec => (
            Verdict::no(
                reason::DB_SYNC_IN_PROGRESS,
                format!(
                    "{}-{} still runs an earlier spec: it is left to finish (a schema change killed half-way races its successor), then runs again with {image_ref}",
                    profile.service,
                    run.key()
                ),
            ),
            false,
            None,
        ),
        Chain::Waiting(run) => (
            Verdict::no(
                reason::DB_SYNC_IN_PROGRESS,
                match runs.len() {
                    1 => format!("syncing the schema to {release} with {image_ref}"),
                    n => format!(
                        "syncing the schema to {release} with {image_ref}: {}-{} ({} of {n})",
                        profile.service,
                        run.key(),
                        runs.iter().position(|r| r == run).map_or(n, |i| i + 1)
                    ),
                },
            ),
            false,
            None,
        ),
    };
    let sync_done = matches!(sync.state, Chain::Done);
    let mut jobs = sync.ensures;
    jobs.extend(registration::job(obs));
    let registered = registration::registered(obs);

    let installed_release = if synced {
        release.to_string()
    } else {
        obs.status.installed_release.clone()
    };
    let params = WorkloadParams {
        image: image_ref,
        installed_release: installed_release.clone(),
        pin: None,
    };
    let mut workloads = Vec::new();
    let mut events = Vec::new();
    let mut host = None;
    if synced && registered {
        let roll = params.ordered_roll(obs);
        workloads.extend(roll.workloads);
        jobs.extend(roll.jobs);
        events.extend(roll.events);
        host = roll.waiting;
    }
    workloads.extend(removed_workloads(obs));

    let pending: Vec<&str> = obs
        .desired_workloads
        .iter()
        .filter(|w| !params.done(obs, w))
        .map(|w| w.name.as_str())
        .collect();
    let deployments = if pending.is_empty() {
        Verdict::yes(
            reason::WORKLOADS_READY,
            "every workload runs the spec image and is fully rolled out",
        )
    } else if !synced {
        Verdict::no(
            reason::WAITING_FOR_DATABASE,
            format!(
                "waiting for the database before rolling {}",
                pending.join(", ")
            ),
        )
    } else if !registered {
        Verdict::no(
            reason::WAITING_FOR_REGISTRATION,
            format!(
                "waiting for the registration in Keystone before rolling {}",
                pending.join(", ")
            ),
        )
    } else if let Some(host) = host {
        host
    } else {
        Verdict::no(
            reason::ROLLOUT_IN_PROGRESS,
            format!("rolling out {}", pending.join(", ")),
        )
    };
    let outcome = match failure {
        Some(message) => Outcome::Failed {
            reason: database.reason.into(),
            message,
        },
        None => match registration::failure(obs) {
            Some(failed) => failed,
            None if sync_done && registered && pending.is_empty() => Outcome::Settled,
            None => Outcome::Waiting,
        },
    };
    Ok(Draft {
        installed_release,
        target_release: String::new(),
        phase: String::new(),
        rolling_workload: String::new(),
        database,
        deployments,
        events,
        jobs,
        workloads,
        outcome,
    }
    .finish(profile, obs)
    .into())
}

/// Whether the upgrade that installed this release left the schema at
/// `image`'s level: its last phase Job succeeded on that image. The steady
/// state's db-sync that follows is then a no-op, so the database stays Ready
/// while it runs and the second roll need not wait for it (no Ready blip after
/// every upgrade). A patch bump's new image, or an abort (which deletes the
/// phase Jobs), has no such Job: its sync is waited for.
fn upgraded_with(profile: &Profile, obs: &Observed, image: &str) -> bool {
    profile
        .phases
        .iter()
        .rev()
        .map(|p| job_runs(p.templates(), &obs.job_groups))
        .find(|runs| !runs.is_empty())
        .is_some_and(|runs| chain::succeeded(&runs, obs, image, ""))
}
