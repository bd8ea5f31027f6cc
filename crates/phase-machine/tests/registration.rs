//! A resource with `spec.identity`: its registration in Keystone runs beside
//! the fresh install's schema sync, its workloads wait for it, and the
//! `KeystoneRegistered` condition says how it went, through installs,
//! failures, retries and upgrades.

mod support;

use ratchet_phase_machine::registration::{EXIT_PASSWORD_REFUSED, RETRY_AFTER_SECONDS, SUFFIX};
use ratchet_phase_machine::vocabulary::{condition, reason};
use ratchet_phase_machine::*;
use support::{Script, World, condition_of};

fn with_registration(mut w: World) -> World {
    w.obs.registration = Some(ObservedRegistration {
        image: "keystone:2026.1".into(),
        command: Ok(vec!["register".into(), "--user".into(), "cinder".into()]),
        inputs: "secret-version-1".into(),
        summary: "user cinder, service block-storage".into(),
    });
    w
}

/// A fresh install whose registration Job Keystone refuses the password of.
fn refused() -> World {
    let mut w = with_registration(World::cinder("2026.1"));
    w.scripts.insert(
        SUFFIX.into(),
        Script::Fail {
            exit_code: EXIT_PASSWORD_REFUSED,
        },
    );
    w
}

fn registered(d: &Decision) -> &ConditionState {
    condition_of(d, condition::KEYSTONE_REGISTERED)
}

fn ensured(d: &Decision) -> Vec<&str> {
    d.jobs
        .iter()
        .filter_map(|j| match j {
            JobAction::Ensure { suffix, .. } => Some(suffix.as_str()),
            JobAction::Delete { .. } => None,
        })
        .collect()
}

#[test]
fn a_fresh_install_registers_beside_the_sync_and_rolls_only_once_registered() {
    let mut w = with_registration(World::cinder("2026.1"));
    w.scripts.insert(SUFFIX.into(), Script::Hang);
    let d = w.step();
    assert_eq!(ensured(&d), ["db-sync", SUFFIX]);
    assert_eq!(registered(&d).reason, reason::REGISTRATION_IN_PROGRESS);
    let d = w.step();
    assert!(condition_of(&d, condition::DATABASE_READY).status);
    assert!(d.workloads.is_empty(), "nothing rolls before registration");
    assert_eq!(
        condition_of(&d, condition::DEPLOYMENTS_READY).reason,
        reason::WAITING_FOR_REGISTRATION
    );
    assert!(!condition_of(&d, condition::READY).status);
    assert_eq!(d.outcome, Outcome::Waiting);

    if let Some(job) = w.obs.jobs.get_mut(SUFFIX) {
        job.outcome = JobOutcome::Succeeded;
    }
    let d = w.step();
    assert!(registered(&d).status, "{:?}", registered(&d));
    assert_eq!(d.workloads.len(), 4, "every workload rolls now");
    let d = w.settle().clone();
    assert!(condition_of(&d, condition::READY).status);
    assert_eq!(
        w.event_kinds(reason::REGISTERED),
        [EventType::Normal],
        "announced once"
    );
}

#[test]
fn a_refused_password_blocks_the_install_until_the_secret_changes() {
    let mut w = refused();
    w.step();
    let d = w.step();
    assert_eq!(registered(&d).reason, reason::SERVICE_PASSWORD_REFUSED);
    assert!(d.workloads.is_empty());
    assert!(
        matches!(&d.outcome, Outcome::Failed { reason, .. } if reason == reason::SERVICE_PASSWORD_REFUSED)
    );
    w.step();
    assert_eq!(
        w.event_kinds(reason::SERVICE_PASSWORD_REFUSED),
        [EventType::Warning],
        "said once, not every retry"
    );

    // A new password in the Secret: a new Job, which succeeds.
    w.scripts.remove(SUFFIX);
    if let Some(r) = w.obs.registration.as_mut() {
        r.inputs = "secret-version-2".into();
    }
    let d = w.settle().clone();
    assert!(registered(&d).status);
    assert!(condition_of(&d, condition::READY).status);
}

#[test]
fn a_failed_attempt_is_reported_while_the_job_retries() {
    let mut w = with_registration(World::cinder("2026.1"));
    w.scripts.insert(SUFFIX.into(), Script::Hang);
    w.step();
    if let Some(job) = w.obs.jobs.get_mut(SUFFIX) {
        job.exit_code = Some(1);
        job.termination_message =
            Some("Keystone at http://keystone.os.svc:5000 unreachable".into());
    }
    let d = w.step();
    let c = registered(&d);
    assert_eq!(c.reason, reason::REGISTRATION_RETRYING);
    assert!(c.message.contains("unreachable"), "{}", c.message);
    assert_eq!(d.outcome, Outcome::Waiting, "the Job retries by itself");
    assert!(ensured(&d).contains(&SUFFIX), "the same Job is kept");
}

#[test]
fn a_job_that_gave_up_is_replaced_a_while_later_but_not_a_refusal() {
    let mut w = with_registration(World::cinder("2026.1"));
    w.scripts
        .insert(SUFFIX.into(), Script::Fail { exit_code: 1 });
    w.step();
    let d = w.step();
    assert_eq!(registered(&d).reason, reason::REGISTRATION_FAILED);
    assert!(matches!(d.outcome, Outcome::Failed { .. }));
    if let Some(job) = w.obs.jobs.get_mut(SUFFIX) {
        job.failed_seconds_ago = Some(RETRY_AFTER_SECONDS - 1);
    }
    assert_eq!(ensured(&w.step()), ["db-sync", SUFFIX], "not yet");
    if let Some(job) = w.obs.jobs.get_mut(SUFFIX) {
        job.failed_seconds_ago = Some(RETRY_AFTER_SECONDS);
    }
    w.scripts.remove(SUFFIX);
    let d = w.step();
    assert!(
        d.jobs
            .iter()
            .any(|j| matches!(j, JobAction::Delete { suffix } if suffix == SUFFIX)),
        "{:?}",
        d.jobs
    );
    let d = w.settle().clone();
    assert!(registered(&d).status, "the new Job registered");

    let mut w = refused();
    w.step();
    if let Some(job) = w.obs.jobs.get_mut(SUFFIX) {
        job.failed_seconds_ago = Some(3600);
    }
    let d = w.step();
    assert!(
        !d.jobs.iter().any(|j| matches!(j, JobAction::Delete { .. })),
        "a refused password is not tried again by itself"
    );
}

#[test]
fn a_keystone_that_is_not_there_runs_no_job_and_retries() {
    let mut w = with_registration(World::cinder("2026.1"));
    if let Some(r) = w.obs.registration.as_mut() {
        r.command = Err("no Keystone keystone in namespace os".into());
    }
    w.step();
    let d = w.step();
    assert_eq!(ensured(&d), ["db-sync"]);
    assert_eq!(registered(&d).reason, reason::KEYSTONE_NOT_USABLE);
    assert!(d.workloads.is_empty());
    assert!(matches!(d.outcome, Outcome::Failed { .. }));
}

#[test]
fn an_upgrade_keeps_the_registration_and_does_not_rerun_it() {
    let mut w = with_registration(World::cinder("2026.1"));
    w.settle();
    let uid = w.obs.jobs[SUFFIX].uid.clone();
    w.set_release("2026.2");
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.2");
    assert!(
        w.history.iter().all(|d| d
            .status
            .conditions
            .iter()
            .any(|c| c.kind == condition::KEYSTONE_REGISTERED)),
        "the condition is kept in every phase"
    );
    assert!(w.history.last().is_some_and(|d| registered(d).status));
    assert_eq!(
        w.obs.jobs[SUFFIX].uid, uid,
        "a new image registers nothing new"
    );
}

#[test]
fn without_identity_there_is_no_registration_condition() {
    let mut w = World::cinder("2026.1");
    let d = w.settle().clone();
    assert!(
        !d.status
            .conditions
            .iter()
            .any(|c| c.kind == condition::KEYSTONE_REGISTERED)
    );
    assert!(!w.obs.jobs.contains_key(SUFFIX));
}
