//! The steady-state rows of the Cinder contract (C1, C11, C12, C17–C19), decided
//! without a cluster.

use std::collections::BTreeMap;

use ratchet_phase_machine::vocabulary::{condition, reason};
use ratchet_phase_machine::*;

fn profile() -> Profile {
    Profile {
        service: "cinder",
        db_sync: JobTemplate {
            suffix: "db-sync",
            command: vec!["cinder-manage".into(), "db".into(), "sync".into()],
        },
    }
}

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn observed(release: &str, tag: &str) -> Observed {
    Observed {
        spec: SpecView {
            generation: 1,
            release: release.into(),
            image_repository: "cinder".into(),
            image_tag: Some(tag.into()),
            image_digest: None,
        },
        status: StatusView::default(),
        config_hash: "c1".into(),
        missing_secrets: vec![],
        jobs: BTreeMap::new(),
        workloads: BTreeMap::new(),
        desired_workloads: ["c-scheduler", "c-volume-lvm", "c-backup", "c"]
            .iter()
            .map(|n| WorkloadId {
                name: n.to_string(),
            })
            .collect(),
        now: "2026-11-30T00:00:00Z".into(),
    }
}

/// Feeds a decision's status back as the stored status (what the controller writes).
fn store(obs: &mut Observed, d: &Decision) {
    obs.status = StatusView {
        installed_release: d.status.installed_release.clone(),
        target_release: d.status.target_release.clone(),
        conditions: d.status.conditions.clone(),
    };
}

/// Creates the Jobs a decision asks for, with the given outcome.
fn run_jobs(obs: &mut Observed, d: &Decision, outcome: JobOutcome) {
    for action in &d.jobs {
        if let JobAction::Ensure {
            suffix, spec_hash, ..
        } = action
        {
            obs.jobs.insert(
                suffix.clone(),
                ObservedJob {
                    name: format!("c-{suffix}"),
                    uid: format!("uid-{spec_hash}"),
                    spec_hash: spec_hash.clone(),
                    outcome: outcome.clone(),
                },
            );
        }
    }
}

/// Rolls out every applied workload completely.
fn roll(obs: &mut Observed, d: &Decision) {
    for action in &d.workloads {
        if let WorkloadAction::Apply { name, image, .. } = action {
            obs.workloads.insert(
                name.clone(),
                ObservedWorkload {
                    name: name.clone(),
                    image: image.clone(),
                    rollout: Rollout {
                        generation: 1,
                        observed_generation: 1,
                        desired: 1,
                        total: 1,
                        updated: 1,
                        ready: 1,
                        available: 1,
                    },
                },
            );
        }
    }
}

fn condition_of<'a>(d: &'a Decision, kind: &str) -> &'a ConditionState {
    d.status
        .conditions
        .iter()
        .find(|c| c.kind == kind)
        .expect("condition present")
}

#[test]
fn fresh_install_runs_one_db_sync_then_workloads_in_order() {
    let p = profile();
    let mut obs = observed("2026.1", "2026.1");
    let d = decide(&p, &obs);
    assert_eq!(d.jobs.len(), 1);
    assert!(
        matches!(&d.jobs[0], JobAction::Ensure { suffix, image, .. } if suffix == "db-sync" && image == "cinder:2026.1")
    );
    assert!(
        d.workloads.is_empty(),
        "no workload before the database is synced"
    );
    assert_eq!(d.status.installed_release, "");
    assert_eq!(
        condition_of(&d, condition::DATABASE_READY).reason,
        reason::DB_SYNC_IN_PROGRESS
    );
    assert_eq!(d.outcome, Outcome::Waiting);
    assert!(d.events.is_empty(), "in-progress states emit nothing");
    store(&mut obs, &d);

    run_jobs(&mut obs, &d, JobOutcome::Succeeded);
    let d = decide(&p, &obs);
    assert_eq!(d.status.installed_release, "2026.1");
    let names: Vec<&str> = d
        .workloads
        .iter()
        .map(|w| match w {
            WorkloadAction::Apply {
                name,
                installed_release,
                ..
            } => {
                assert_eq!(installed_release, "2026.1");
                name.as_str()
            }
            WorkloadAction::Delete { name } => panic!("unexpected delete of {name}"),
        })
        .collect();
    assert_eq!(names, ["c-scheduler", "c-volume-lvm", "c-backup", "c"]);
    assert!(condition_of(&d, condition::DATABASE_READY).status);
    assert!(!condition_of(&d, condition::READY).status);
    assert_eq!(d.events.len(), 1);
    assert_eq!(d.events[0].reason, reason::DATABASE_SYNCED);
    store(&mut obs, &d);

    roll(&mut obs, &d);
    let d = decide(&p, &obs);
    assert!(condition_of(&d, condition::READY).status);
    assert_eq!(d.outcome, Outcome::Settled);
    assert!(d.events.is_empty(), "no event repeats in steady state");
}

#[test]
fn patch_bump_reruns_db_sync_before_rolling() {
    let p = profile();
    let mut obs = observed("2026.1", "2026.1");
    let d = decide(&p, &obs);
    run_jobs(&mut obs, &d, JobOutcome::Succeeded);
    let d = decide(&p, &obs);
    store(&mut obs, &d);
    roll(&mut obs, &d);
    let old_hash = match &d.jobs[0] {
        JobAction::Ensure { spec_hash, .. } => spec_hash.clone(),
        other => panic!("{other:?}"),
    };

    obs.spec.image_tag = Some("2026.1-p1".into());
    let d = decide(&p, &obs);
    match &d.jobs[0] {
        JobAction::Ensure {
            spec_hash, image, ..
        } => {
            assert_ne!(spec_hash, &old_hash, "new image, new db-sync");
            assert_eq!(image, "cinder:2026.1-p1");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        d.workloads.is_empty(),
        "workloads keep the old image until db-sync succeeds"
    );
    assert_eq!(
        condition_of(&d, condition::DATABASE_READY).reason,
        reason::DB_SYNC_IN_PROGRESS
    );
    store(&mut obs, &d);
    run_jobs(&mut obs, &d, JobOutcome::Succeeded);
    let d = decide(&p, &obs);
    assert!(
        d.workloads.iter().all(
            |w| matches!(w, WorkloadAction::Apply { image, .. } if image == "cinder:2026.1-p1")
        )
    );
    assert_eq!(d.workloads.len(), 4);
    assert_eq!(d.status.installed_release, "2026.1");
}

#[test]
fn failed_db_sync_warns_once_and_retries_with_backoff() {
    let p = profile();
    let mut obs = observed("2026.1", "2026.1");
    let d = decide(&p, &obs);
    store(&mut obs, &d);
    run_jobs(
        &mut obs,
        &d,
        JobOutcome::Failed {
            message: "BackoffLimitExceeded".into(),
        },
    );
    let d = decide(&p, &obs);
    assert!(
        matches!(&d.outcome, Outcome::Failed { reason, .. } if reason == reason::DB_SYNC_FAILED)
    );
    assert_eq!(d.events.len(), 1);
    assert_eq!(d.events[0].kind, EventType::Warning);
    let db = condition_of(&d, condition::DATABASE_READY);
    assert!(!db.status && db.message.contains("fix the cause"));
    store(&mut obs, &d);
    // The retry sees the same failure: no new event, the failed Job is kept as is.
    let again = decide(&p, &obs);
    assert!(again.events.is_empty());
    assert_eq!(again.jobs, d.jobs);
    // A spec change (new image) starts a new db-sync.
    obs.spec.image_tag = Some("2026.1-p2".into());
    let fixed = decide(&p, &obs);
    assert_eq!(
        condition_of(&fixed, condition::DATABASE_READY).reason,
        reason::DB_SYNC_IN_PROGRESS
    );
    assert_ne!(fixed.jobs, d.jobs);
}

#[test]
fn lockstep_guard_blocks_tagged_mismatch_and_trusts_digests() {
    let p = profile();
    let obs = observed("2026.2", "2026.1-p1");
    let d = decide(&p, &obs);
    assert!(
        d.jobs.is_empty() && d.workloads.is_empty(),
        "nothing advances"
    );
    let db = condition_of(&d, condition::DATABASE_READY);
    assert_eq!(db.reason, reason::IMAGE_RELEASE_MISMATCH);
    assert!(db.message.contains("2026.1-p1") && db.message.contains("2026.2"));
    assert_eq!(d.events.len(), 1);
    assert_eq!(d.events[0].kind, EventType::Warning);

    let mut digest = observed("2026.2", "unused");
    digest.spec.image_tag = None;
    digest.spec.image_digest = Some(DIGEST.into());
    assert_eq!(decide(&p, &digest).jobs.len(), 1);
    let latest = observed("2026.2", "latest");
    assert_eq!(decide(&p, &latest).jobs.len(), 1);
}

#[test]
fn release_validation_reasons() {
    let p = profile();
    let cases = [
        ("2026.2", "2026.1", reason::DOWNGRADE_NOT_SUPPORTED),
        ("2026.1", "2027.1", reason::UPGRADE_PATH_INVALID),
        ("2026.1", "2025.9", reason::VERSION_PARSE_ERROR),
    ];
    for (installed, requested, expected) in cases {
        let mut obs = observed(requested, requested);
        obs.status.installed_release = installed.into();
        let d = decide(&p, &obs);
        let db = condition_of(&d, condition::DATABASE_READY);
        assert_eq!(db.reason, expected, "{installed} → {requested}");
        assert!(d.jobs.is_empty());
        assert!(matches!(d.outcome, Outcome::Failed { .. }));
        assert_eq!(d.status.installed_release, installed);
    }
}

#[test]
fn removed_back_end_is_deleted_and_missing_secrets_block() {
    let p = profile();
    let mut obs = observed("2026.1", "2026.1");
    let d = decide(&p, &obs);
    run_jobs(&mut obs, &d, JobOutcome::Succeeded);
    let d = decide(&p, &obs);
    roll(&mut obs, &d);
    obs.desired_workloads.retain(|w| w.name != "c-volume-lvm");
    let d = decide(&p, &obs);
    assert!(d.workloads.contains(&WorkloadAction::Delete {
        name: "c-volume-lvm".into()
    }));

    let mut missing = observed("2026.1", "2026.1");
    missing.missing_secrets = vec!["Secret db/connection".into()];
    let d = decide(&p, &missing);
    assert_eq!(
        condition_of(&d, condition::DATABASE_READY).reason,
        reason::SECRET_MISSING
    );
    assert!(d.jobs.is_empty());
}

#[test]
fn transition_time_moves_only_when_status_flips() {
    let p = profile();
    let mut obs = observed("2026.1", "2026.1");
    let first = decide(&p, &obs);
    store(&mut obs, &first);
    obs.now = "2026-11-30T01:00:00Z".into();
    let second = decide(&p, &obs);
    assert_eq!(
        condition_of(&second, condition::DATABASE_READY).last_transition_time,
        "2026-11-30T00:00:00Z"
    );
}
