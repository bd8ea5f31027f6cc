//! Steady state: validation, the lockstep guard, the schema sync (fresh install
//! and patch bumps) and the workloads that follow it. A single step forward of
//! the release hands over to the upgrade.

use ratchet_release::StepRefusal;

use crate::conditions::Verdict;
use crate::decision::{JobAction, Outcome};
use crate::hash::job_spec_hash;
use crate::observe::{JobOutcome, Observed};
use crate::profile::{Profile, Step};
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
    let sync = &profile.db_sync;
    let spec_hash = job_spec_hash(&image_ref, &sync.command, &obs.config_hash);
    let current = obs
        .jobs
        .get(sync.suffix)
        .filter(|j| j.spec_hash == spec_hash);
    let (database, synced, failure) = match current.map(|j| (&j.outcome, j.exit_code)) {
        Some((JobOutcome::Succeeded, _)) => (
            Verdict::yes(
                reason::DATABASE_SYNCED,
                format!("schema synced to {release} with {image_ref}"),
            )
            .notify(),
            true,
            None,
        ),
        Some((JobOutcome::Failed { message }, exit_code)) => {
            let special = sync.exit_reason(exit_code);
            let text = format!(
                "{}-{} failed on {image_ref}: {message}; {}fix the cause, then change the spec or delete the Job to retry",
                profile.service,
                sync.suffix,
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
        Some((JobOutcome::Running, _)) | None if upgraded_with(profile, obs, &image_ref) => (
            Verdict::yes(
                reason::DATABASE_SYNCED,
                format!(
                    "schema upgraded to {release} with {image_ref}; {}-{} confirms it",
                    profile.service, sync.suffix
                ),
            )
            .notify(),
            true,
            None,
        ),
        Some((JobOutcome::Running, _)) | None => (
            Verdict::no(
                reason::DB_SYNC_IN_PROGRESS,
                format!("syncing the schema to {release} with {image_ref}"),
            ),
            false,
            None,
        ),
    };
    let sync_done = current.is_some_and(|j| j.outcome == JobOutcome::Succeeded);
    let mut jobs = vec![JobAction::Ensure {
        suffix: sync.suffix.to_string(),
        image: image_ref.clone(),
        command: sync.command.clone(),
        spec_hash,
        backoff_limit: sync.backoff_limit(),
        fail_fast_exit_codes: sync.fail_fast_exit_codes.clone(),
    }];
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
    if synced && registered {
        workloads.extend(params.ordered_roll(obs));
    }
    workloads.extend(removed_workloads(obs));

    let pending: Vec<&str> = obs
        .desired_workloads
        .iter()
        .filter(|w| !params.settled(obs, w))
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
        events: Vec::new(),
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
    let last_job = profile.phases.iter().rev().find_map(|p| match &p.step {
        Step::Job { template, .. } => Some(template),
        Step::Roll { .. } => None,
    });
    last_job.is_some_and(|t| {
        obs.jobs.get(t.suffix).is_some_and(|j| {
            j.outcome == JobOutcome::Succeeded
                && j.spec_hash == job_spec_hash(image, &t.command, "")
        })
    })
}
