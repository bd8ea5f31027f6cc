//! Steady state: validation, the lockstep guard, the schema sync (fresh install
//! and patch bumps) and the workloads that follow it.

use ratchet_release::{ImageRef, Release, Step, lockstep_mismatch};

use crate::conditions::{Verdict, standard, transition_events};
use crate::decision::{Decision, DesiredStatus, JobAction, Outcome, WorkloadAction};
use crate::hash::job_spec_hash;
use crate::observe::{JobOutcome, Observed};
use crate::profile::Profile;
use crate::vocabulary::reason;

/// Decides one pass for a resource that is not upgrading.
pub fn decide(profile: &Profile, obs: &Observed) -> Decision {
    let release = match Release::parse(&obs.spec.release) {
        Ok(r) => r,
        Err(e) => {
            return blocked(
                obs,
                reason::VERSION_PARSE_ERROR,
                format!("spec.openStackRelease: {e}"),
            );
        }
    };
    let image = match ImageRef::new(
        &obs.spec.image_repository,
        obs.spec.image_tag.as_deref(),
        obs.spec.image_digest.as_deref(),
    ) {
        Ok(i) => i,
        Err(e) => return blocked(obs, reason::INVALID_IMAGE, e.to_string()),
    };
    let installed = match obs.status.installed_release.as_str() {
        "" => None,
        text => match Release::parse(text) {
            Ok(r) => Some(r),
            Err(e) => {
                return blocked(
                    obs,
                    reason::VERSION_PARSE_ERROR,
                    format!("status.installedRelease: {e}"),
                );
            }
        },
    };
    if let Some(installed) = installed {
        match installed.step_to(release) {
            Step::Same => {}
            Step::Downgrade => {
                return blocked(
                    obs,
                    reason::DOWNGRADE_NOT_SUPPORTED,
                    format!(
                        "{installed} → {release}: {release} is older than the installed release; OpenStack databases cannot be downgraded"
                    ),
                );
            }
            Step::SkipLevel => {
                return blocked(
                    obs,
                    reason::UPGRADE_PATH_INVALID,
                    format!(
                        "{installed} → {release}: only one release at a time; upgrade to {} first",
                        installed.next().map(|r| r.to_string()).unwrap_or_default()
                    ),
                );
            }
            Step::Sequential => {
                return blocked(
                    obs,
                    reason::UPGRADE_PATH_INVALID,
                    format!(
                        "{installed} → {release}: release upgrades are not available in this version of Ratchet"
                    ),
                );
            }
        }
    }
    if let Some(named) = lockstep_mismatch(&image, release) {
        return blocked(
            obs,
            reason::IMAGE_RELEASE_MISMATCH,
            format!(
                "spec.image.tag {} names release {named} but spec.openStackRelease is {release}; change both together",
                image.tag().unwrap_or_default()
            ),
        );
    }
    if !obs.missing_secrets.is_empty() {
        return blocked(
            obs,
            reason::SECRET_MISSING,
            format!("missing: {}", obs.missing_secrets.join(", ")),
        );
    }

    let image_ref = image.to_string();
    let sync = &profile.db_sync;
    let spec_hash = job_spec_hash(&image_ref, &sync.command, &obs.config_hash);
    let current = obs
        .jobs
        .get(sync.suffix)
        .filter(|j| j.spec_hash == spec_hash);
    let (database, synced, failure) = match current.map(|j| &j.outcome) {
        Some(JobOutcome::Succeeded) => (
            Verdict::yes(
                reason::DATABASE_SYNCED,
                format!("schema synced to {release} with {image_ref}"),
            ),
            true,
            None,
        ),
        Some(JobOutcome::Failed { message }) => {
            let text = format!(
                "{}-{} failed on {image_ref}: {message}; fix the cause, then change the spec or delete the Job to retry",
                profile.service, sync.suffix
            );
            (
                Verdict::no(reason::DB_SYNC_FAILED, text.clone()),
                false,
                Some(text),
            )
        }
        Some(JobOutcome::Running) | None => (
            Verdict::no(
                reason::DB_SYNC_IN_PROGRESS,
                format!("syncing the schema to {release} with {image_ref}"),
            ),
            false,
            None,
        ),
    };
    let jobs = vec![JobAction::Ensure {
        suffix: sync.suffix.to_string(),
        image: image_ref.clone(),
        command: sync.command.clone(),
        spec_hash,
    }];

    let installed_release = if synced {
        release.to_string()
    } else {
        obs.status.installed_release.clone()
    };
    let mut workloads: Vec<WorkloadAction> = Vec::new();
    if synced {
        workloads.extend(obs.desired_workloads.iter().map(|w| WorkloadAction::Apply {
            name: w.name.clone(),
            image: image_ref.clone(),
            installed_release: installed_release.clone(),
        }));
    }
    workloads.extend(removed_workloads(obs));

    let pending: Vec<&str> = obs
        .desired_workloads
        .iter()
        .filter(|w| {
            !obs.workloads
                .get(&w.name)
                .is_some_and(|o| o.image == image_ref && o.rollout.complete())
        })
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
    } else {
        Verdict::no(
            reason::ROLLOUT_IN_PROGRESS,
            format!("rolling out {}", pending.join(", ")),
        )
    };
    let outcome = match failure {
        Some(message) => Outcome::Failed {
            reason: reason::DB_SYNC_FAILED.into(),
            message,
        },
        None if synced && pending.is_empty() => Outcome::Settled,
        None => Outcome::Waiting,
    };
    finish(
        obs,
        installed_release,
        database,
        deployments,
        jobs,
        workloads,
        outcome,
    )
}

/// Workloads that exist but the spec no longer asks for (a removed back end).
fn removed_workloads(obs: &Observed) -> impl Iterator<Item = WorkloadAction> + '_ {
    obs.workloads
        .keys()
        .filter(|name| !obs.desired_workloads.iter().any(|w| &w.name == *name))
        .map(|name| WorkloadAction::Delete { name: name.clone() })
}

/// Nothing advances: no Job is started, no workload touched. The condition says
/// why, once; the controller retries with backoff.
fn blocked(obs: &Observed, why: &'static str, message: String) -> Decision {
    let all_ready = obs.desired_workloads.iter().all(|w| {
        obs.workloads
            .get(&w.name)
            .is_some_and(|o| o.rollout.complete())
    });
    let deployments = if all_ready {
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
    finish(
        obs,
        obs.status.installed_release.clone(),
        Verdict::no(why, message.clone()),
        deployments,
        Vec::new(),
        Vec::new(),
        Outcome::Failed {
            reason: why.to_string(),
            message,
        },
    )
}

fn finish(
    obs: &Observed,
    installed_release: String,
    database: Verdict,
    deployments: Verdict,
    jobs: Vec<JobAction>,
    workloads: Vec<WorkloadAction>,
    outcome: Outcome,
) -> Decision {
    let conditions = standard(
        &obs.status,
        obs.spec.generation,
        &obs.now,
        database,
        deployments,
    );
    let events = transition_events(&obs.status, &conditions);
    Decision {
        status: DesiredStatus {
            installed_release,
            target_release: String::new(),
            conditions,
            observed_generation: obs.spec.generation,
        },
        events,
        jobs,
        workloads,
        outcome,
    }
}
