//! The steady-state rows of the Cinder contract (C1, C11, C12, C17–C19), decided
//! without a cluster.

mod support;

use ratchet_phase_machine::vocabulary::{condition, reason};
use ratchet_phase_machine::*;
use support::{Script, World, condition_of};

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn applied(d: &Decision) -> Vec<(&str, &str, &str)> {
    d.workloads
        .iter()
        .filter_map(|w| match w {
            WorkloadAction::Apply {
                name,
                image,
                installed_release,
                ..
            } => Some((name.as_str(), image.as_str(), installed_release.as_str())),
            WorkloadAction::Delete { .. } => None,
        })
        .collect()
}

#[test]
fn fresh_install_runs_one_db_sync_then_workloads_in_order() {
    let mut w = World::cinder("2026.1");
    let d = w.step();
    assert!(
        matches!(&d.jobs[..], [JobAction::Ensure { suffix, image, .. }] if suffix == "db-sync" && image == "cinder:2026.1")
    );
    assert!(
        d.workloads.is_empty(),
        "no workload before the database is synced"
    );
    assert_eq!(d.status.installed_release, "");
    assert_eq!(d.status.phase, "", "a fresh install enters no phase");
    assert_eq!(
        condition_of(&d, condition::DATABASE_READY).reason,
        reason::DB_SYNC_IN_PROGRESS
    );
    assert_eq!(d.outcome, Outcome::Waiting);
    assert!(d.events.is_empty(), "in-progress states emit nothing");

    let d = w.step();
    assert_eq!(d.status.installed_release, "2026.1");
    let names: Vec<&str> = applied(&d)
        .iter()
        .map(|(n, _, r)| {
            assert_eq!(*r, "2026.1");
            *n
        })
        .collect();
    assert_eq!(names, ["c-scheduler", "c-volume-lvm", "c-backup", "c"]);
    assert!(condition_of(&d, condition::DATABASE_READY).status);
    assert_eq!(d.events.len(), 1);
    assert_eq!(d.events[0].reason, reason::DATABASE_SYNCED);

    let d = w.step();
    assert!(condition_of(&d, condition::READY).status);
    assert_eq!(d.outcome, Outcome::Settled);
    assert!(d.events.is_empty(), "no event repeats in steady state");
    assert_eq!(w.obs.jobs.len(), 1, "only db-sync, no phase Jobs");
}

#[test]
fn patch_bump_reruns_db_sync_before_rolling() {
    let mut w = World::install("2026.1");
    let old_uid = w.obs.jobs["db-sync"].uid.clone();
    w.scripts.insert("db-sync".into(), Script::Hang);
    w.obs.spec.image_tag = Some("2026.1-p1".into());
    let d = w.step();
    assert!(
        matches!(&d.jobs[..], [JobAction::Ensure { image, .. }] if image == "cinder:2026.1-p1")
    );
    assert_ne!(w.obs.jobs["db-sync"].uid, old_uid, "new image, new db-sync");
    assert!(
        d.workloads.is_empty(),
        "workloads keep the old image until db-sync succeeds"
    );
    assert_eq!(
        condition_of(&d, condition::DATABASE_READY).reason,
        reason::DB_SYNC_IN_PROGRESS
    );
    assert_eq!(d.status.phase, "");

    w.scripts.clear();
    w.obs.jobs.remove("db-sync");
    w.settle();
    assert!(
        w.obs
            .workloads
            .values()
            .all(|x| x.image == "cinder:2026.1-p1")
    );
    assert_eq!(w.obs.status.installed_release, "2026.1");
}

#[test]
fn a_db_sync_of_an_earlier_spec_is_left_to_finish_before_it_runs_again() {
    let mut w = World::install("2026.1");
    w.scripts.insert("db-sync".into(), Script::Hang);
    w.obs.spec.image_tag = Some("2026.1-p1".into());
    w.step();
    let running = w.obs.jobs["db-sync"].clone();

    w.obs.config_hash = "edited".into();
    let d = w.step();
    assert!(
        d.jobs.is_empty(),
        "the running db-sync is neither replaced nor deleted: {:?}",
        d.jobs
    );
    assert_eq!(w.obs.jobs["db-sync"], running);
    let database = condition_of(&d, condition::DATABASE_READY);
    assert_eq!(database.reason, reason::DB_SYNC_IN_PROGRESS);
    assert!(
        database.message.contains("left to finish"),
        "{}",
        database.message
    );

    if let Some(job) = w.obs.jobs.get_mut("db-sync") {
        job.outcome = JobOutcome::Succeeded;
    }
    w.scripts.clear();
    let d = w.step();
    assert!(
        matches!(&d.jobs[..], [JobAction::Ensure { image, .. }] if image == "cinder:2026.1-p1"),
        "once ended, it runs again for the current spec: {:?}",
        d.jobs
    );
    assert_ne!(w.obs.jobs["db-sync"].uid, running.uid);
    w.settle();
    assert!(w.database().0);
}

#[test]
fn failed_db_sync_warns_once_and_recovers_on_a_spec_change() {
    let mut w = World::cinder("2026.1");
    w.scripts
        .insert("db-sync".into(), Script::Fail { exit_code: 1 });
    w.step();
    let d = w.step();
    assert!(
        matches!(&d.outcome, Outcome::Failed { reason, .. } if reason == reason::DB_SYNC_FAILED)
    );
    assert_eq!(d.events.len(), 1);
    assert_eq!(d.events[0].kind, EventType::Warning);
    assert!(
        condition_of(&d, condition::DATABASE_READY)
            .message
            .contains("fix the cause")
    );
    let again = w.step();
    assert!(again.events.is_empty(), "the retry emits nothing");
    assert_eq!(again.jobs, d.jobs, "the failed Job is kept as is");
    w.scripts.clear();
    w.obs.spec.image_tag = Some("2026.1-p2".into());
    w.settle();
    assert!(w.database().0);
}

#[test]
fn lockstep_guard_blocks_tagged_mismatch_and_trusts_digests() {
    let mut w = World::new(
        support::cinder_profile(),
        "2026.2",
        "2026.1-p1",
        &[("c", false)],
    );
    let d = w.step();
    assert!(
        d.jobs.is_empty() && d.workloads.is_empty(),
        "nothing advances"
    );
    let db = condition_of(&d, condition::DATABASE_READY);
    assert_eq!(db.reason, reason::IMAGE_RELEASE_MISMATCH);
    assert!(db.message.contains("2026.1-p1") && db.message.contains("2026.2"));
    assert_eq!(d.events.len(), 1);
    assert_eq!(d.events[0].kind, EventType::Warning);
    assert!(w.step().events.is_empty());

    let mut digest = World::new(support::cinder_profile(), "2026.2", "x", &[("c", false)]);
    digest.obs.spec.image_tag = None;
    digest.obs.spec.image_digest = Some(DIGEST.into());
    digest.settle();
    assert_eq!(digest.obs.status.installed_release, "2026.2");
    let mut latest = World::new(
        support::cinder_profile(),
        "2026.2",
        "latest",
        &[("c", false)],
    );
    latest.settle();
    assert_eq!(latest.obs.status.installed_release, "2026.2");
}

#[test]
fn removed_back_end_is_deleted_and_missing_secrets_block() {
    let mut w = World::install("2026.1");
    w.obs.desired_workloads.retain(|x| x.name != "c-volume-lvm");
    let d = w.step();
    assert!(d.workloads.contains(&WorkloadAction::Delete {
        name: "c-volume-lvm".into()
    }));

    let mut missing = World::cinder("2026.1");
    missing.obs.missing_secrets = vec!["Secret db key connection".into()];
    let d = missing.step();
    assert_eq!(
        condition_of(&d, condition::DATABASE_READY).reason,
        reason::SECRET_MISSING
    );
    assert!(d.jobs.is_empty());
}

#[test]
fn configuration_naming_a_managed_option_blocks_until_removed() {
    let mut w = World::install("2026.1");
    let message = "spec.extraConfig.DEFAULT.pin_release_version: set by Ratchet";
    w.obs.spec.invalid_config = vec![message.into()];
    w.obs.spec.generation += 1;
    let d = w.step();
    assert!(d.jobs.is_empty() && d.workloads.is_empty(), "{d:?}");
    let db = condition_of(&d, condition::DATABASE_READY);
    assert_eq!(
        (db.status, db.reason.as_str(), db.message.as_str()),
        (false, reason::INVALID_CONFIG, message)
    );
    assert_eq!(d.events.len(), 1);
    assert_eq!(d.events[0].kind, EventType::Warning);

    w.obs.spec.invalid_config.clear();
    w.obs.spec.generation += 1;
    w.settle();
    assert_eq!(
        condition_of(&w.step(), condition::DATABASE_READY).reason,
        reason::DATABASE_SYNCED
    );
}

#[test]
fn transition_time_moves_only_when_status_flips() {
    let mut w = World::cinder("2026.1");
    w.scripts.insert("db-sync".into(), Script::Hang);
    w.step();
    w.obs.now = "2026-11-30T01:00:00Z".into();
    let second = w.step();
    assert_eq!(
        condition_of(&second, condition::DATABASE_READY).last_transition_time,
        "2026-11-30T00:00:00Z"
    );
}

/// Ready says the service serves: a rolling restart of workloads that were up
/// keeps it True while at most one pod of each is away, and drops it when a
/// lone pod is away or the roll stalls. DeploymentsReady says the roll is done.
#[test]
fn a_rolling_restart_keeps_ready_while_every_workload_serves() {
    let restarting = |available: i32, desired: i32, stalled: bool| {
        let mut w = World::install("2026.1");
        let backup = w.obs.workloads.get_mut("c-backup").expect("backup exists");
        backup.image = "cinder:2026.0".into();
        backup.rollout.desired = desired;
        backup.rollout.total = desired;
        backup.rollout.available = available;
        backup.stalled = stalled;
        w.step()
    };
    let d = restarting(2, 3, false);
    let deployments = condition_of(&d, condition::DEPLOYMENTS_READY);
    assert_eq!(deployments.reason, reason::ROLLOUT_IN_PROGRESS);
    let ready = condition_of(&d, condition::READY);
    assert!(ready.status, "one of three pods away: {}", ready.message);
    assert!(ready.message.contains("c-backup"), "{}", ready.message);

    for (available, desired, stalled, why) in [
        (0, 1, false, "a lone pod away"),
        (1, 3, false, "two of three pods away"),
        (3, 3, true, "a stalled roll"),
    ] {
        let d = restarting(available, desired, stalled);
        assert!(!condition_of(&d, condition::READY).status, "{why}");
    }
}

#[test]
fn a_fresh_install_is_not_ready_before_its_first_roll_completes() {
    let mut w = World::cinder("2026.1");
    w.hanging.insert("c-backup".into());
    w.settle();
    let d = w.history.last().expect("decided");
    assert_eq!(
        condition_of(d, condition::DEPLOYMENTS_READY).reason,
        reason::ROLLOUT_IN_PROGRESS
    );
    assert!(
        w.history
            .iter()
            .all(|d| !condition_of(d, condition::READY).status),
        "Ready before the first roll completed"
    );
}
