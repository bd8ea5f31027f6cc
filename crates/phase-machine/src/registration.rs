//! A service's registration in Keystone (`spec.identity`): its service user,
//! role, catalogue entry and endpoints, made true by one idempotent Job. Its
//! workloads wait for it in steady state, so nothing serves as if registered
//! before it is; the `KeystoneRegistered` condition says how it went.

use crate::conditions::Verdict;
use crate::decision::{JobAction, Outcome};
use crate::hash::job_spec_hash;
use crate::observe::{JobOutcome, Observed, ObservedJob};
use crate::vocabulary::reason;

/// The Job is named `<resource>-keystone-registration`.
pub const SUFFIX: &str = "keystone-registration";
/// The script's exit code when Keystone refuses the service user's password
/// from its Secret (a user Ratchet did not create, so it does not reset it).
pub const EXIT_PASSWORD_REFUSED: i32 = 3;
/// The script's exit code when Keystone refuses the admin login.
pub const EXIT_ADMIN_REFUSED: i32 = 4;
/// Pod failures retried with the Job controller's backoff (10 s doubling to
/// 6 min): about 20 minutes for a Keystone that is not up yet.
const BACKOFF_LIMIT: i32 = 8;
/// A Job that gave up on a failure other than a refusal is replaced this
/// long after, so a Keystone that comes up later is found without a hand.
/// Refusals are not: a wrong password tried again and again may lock the
/// account; they run again when a Secret changes.
pub const RETRY_AFTER_SECONDS: u64 = 30;

/// What the controller found for the registration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedRegistration {
    /// The image the Job runs on (the Keystone resource's, not the service's).
    pub image: String,
    /// What the Job runs, or why it cannot run (the Keystone named is not there).
    pub command: Result<Vec<String>, String>,
    /// Hash of what the Job reads beyond its command (the password Secret's version).
    pub inputs: String,
    /// What is registered, for messages (`user glance, service image`).
    pub summary: String,
}

impl ObservedRegistration {
    fn spec_hash(&self) -> Option<String> {
        // Not the image: the same registration holds across releases.
        let command = self.command.as_ref().ok()?;
        Some(job_spec_hash("", command, &self.inputs))
    }

    /// The Job for the registration as it is now, if it has one.
    fn current<'a>(&self, obs: &'a Observed) -> Option<&'a ObservedJob> {
        let hash = self.spec_hash()?;
        obs.jobs.get(SUFFIX).filter(|j| j.spec_hash == hash)
    }
}

/// The `KeystoneRegistered` condition, in every state of the machine.
pub fn verdict(obs: &Observed) -> Option<Verdict> {
    let registration = obs.registration.as_ref()?;
    let summary = &registration.summary;
    let Err(why) = &registration.command else {
        return Some(job_verdict(summary, registration.current(obs)));
    };
    Some(Verdict::no(reason::KEYSTONE_NOT_USABLE, why.clone()).warn())
}

fn job_verdict(summary: &str, job: Option<&ObservedJob>) -> Verdict {
    let Some(job) = job else {
        return Verdict::no(
            reason::REGISTRATION_IN_PROGRESS,
            format!("registering {summary} in Keystone"),
        );
    };
    let said = |fallback: &str| job.said().unwrap_or(fallback).to_string();
    match (&job.outcome, job.exit_code) {
        (JobOutcome::Succeeded, _) => Verdict::yes(
            reason::REGISTERED,
            format!("{summary} registered in Keystone; the service user logs in"),
        )
        .notify(),
        (JobOutcome::Failed { message }, code) => {
            let (why, then) = match code {
                Some(EXIT_PASSWORD_REFUSED) => (
                    reason::SERVICE_PASSWORD_REFUSED,
                    "runs again when the Secret changes".to_string(),
                ),
                Some(EXIT_ADMIN_REFUSED) => (
                    reason::KEYSTONE_ADMIN_REFUSED,
                    "runs again when the admin password's Secret changes".to_string(),
                ),
                _ => (
                    reason::REGISTRATION_FAILED,
                    format!("tried again {RETRY_AFTER_SECONDS} s after it gave up"),
                ),
            };
            Verdict::no(why, format!("{}: {}; {then}", job.name, said(message))).warn()
        }
        (JobOutcome::Running, Some(_)) => Verdict::no(
            reason::REGISTRATION_RETRYING,
            format!(
                "{}: an attempt failed ({}); retrying with backoff",
                job.name,
                said("no message")
            ),
        )
        .warn(),
        (JobOutcome::Running, None) => Verdict::no(
            reason::REGISTRATION_IN_PROGRESS,
            format!("registering {summary} in Keystone ({} runs)", job.name),
        ),
    }
}

/// Whether the workloads may roll: no registration is asked for, or its Job
/// for the current inputs succeeded.
pub fn registered(obs: &Observed) -> bool {
    obs.registration.as_ref().is_none_or(|r| {
        r.current(obs)
            .is_some_and(|j| j.outcome == JobOutcome::Succeeded)
    })
}

/// The registration Job to keep (steady state), on Keystone's image; or, a
/// while after it gave up on a failure that is not a refusal, its deletion
/// (the next pass creates it again).
pub fn job(obs: &Observed) -> Option<JobAction> {
    let registration = obs.registration.as_ref()?;
    let command = registration.command.as_ref().ok()?;
    let retry_due = registration.current(obs).is_some_and(|j| {
        matches!(j.outcome, JobOutcome::Failed { .. })
            && !matches!(
                j.exit_code,
                Some(EXIT_PASSWORD_REFUSED | EXIT_ADMIN_REFUSED)
            )
            && j.failed_seconds_ago
                .is_some_and(|ago| ago >= RETRY_AFTER_SECONDS)
    });
    if retry_due {
        return Some(JobAction::Delete {
            suffix: SUFFIX.to_string(),
        });
    }
    Some(JobAction::Ensure {
        suffix: SUFFIX.to_string(),
        group: None,
        image: registration.image.clone(),
        command: command.clone(),
        spec_hash: registration.spec_hash()?,
        backoff_limit: BACKOFF_LIMIT,
        fail_fast_exit_codes: vec![EXIT_PASSWORD_REFUSED, EXIT_ADMIN_REFUSED],
    })
}

/// A registration that cannot go on by itself: retried with the controller's
/// backoff (a Keystone created later is found then) or after a fix.
pub fn failure(obs: &Observed) -> Option<Outcome> {
    let verdict = verdict(obs)?;
    let gave_up = [
        reason::KEYSTONE_NOT_USABLE,
        reason::SERVICE_PASSWORD_REFUSED,
        reason::KEYSTONE_ADMIN_REFUSED,
        reason::REGISTRATION_FAILED,
    ]
    .contains(&verdict.reason);
    gave_up.then(|| Outcome::Failed {
        reason: verdict.reason.to_string(),
        message: verdict.message,
    })
}
