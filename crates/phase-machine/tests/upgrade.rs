//! The Cinder upgrade contract (C2–C16, C21) on the pure machine, one test per
//! seed behaviour, driven through a simulated world.

mod support;

use ratchet_phase_machine::vocabulary::{condition, reason};
use ratchet_phase_machine::*;
use ratchet_services::{Registry, Services};
use support::{Script, World, condition_of};

fn ensured(d: &Decision) -> Vec<(String, String)> {
    d.jobs
        .iter()
        .filter_map(|a| match a {
            JobAction::Ensure { suffix, image, .. } => Some((suffix.clone(), image.clone())),
            JobAction::Delete { .. } => None,
        })
        .collect()
}

#[test]
fn full_upgrade_walks_every_phase_in_order_and_promotes_last() {
    let mut w = World::install("2026.1");
    w.scripts.insert(
        "db-migrate".into(),
        Script::Succeed {
            message: Some("cinder-status upgrade check exit 0".into()),
        },
    );
    let before = w.history.len();
    w.set_release("2026.2");
    w.settle();
    let upgrade = &w.history[before..];

    let phases: Vec<&str> = upgrade.iter().map(|d| d.status.phase.as_str()).collect();
    let mut distinct: Vec<&str> = phases.clone();
    distinct.dedup();
    assert_eq!(
        distinct,
        ["Expanding", "Migrating", "RollingUpdate", "Contracting", ""]
    );

    // installedRelease stays at the source until Contracting has succeeded.
    for d in upgrade {
        if !d.status.phase.is_empty() {
            assert_eq!(d.status.installed_release, "2026.1");
            assert_eq!(d.status.target_release, "2026.2");
        }
    }
    assert_eq!(w.obs.status.installed_release, "2026.2");
    assert_eq!(w.obs.status.target_release, "");

    // Every phase Job runs the target image.
    for d in upgrade {
        for (suffix, image) in ensured(d) {
            if suffix != "db-sync" {
                assert_eq!(image, "cinder:2026.2", "{suffix}");
            }
        }
    }
    let events: Vec<String> = w
        .events()
        .into_iter()
        .skip_while(|e| e != "UpgradeInitiated")
        .collect();
    let expected = [
        "UpgradeInitiated",
        "ExpandComplete",
        "MigrateComplete",
        "UpgradeCheckCompleted",
        "DeploymentRolloutComplete",
        "UpgradeComplete",
    ];
    let seen: Vec<&str> = events
        .iter()
        .map(String::as_str)
        .filter(|e| expected.contains(e))
        .collect();
    assert_eq!(seen, expected);
    // The in-progress reasons appear on DatabaseReady, and emit nothing.
    let reasons: Vec<String> = upgrade
        .iter()
        .filter_map(|d| {
            d.status
                .conditions
                .iter()
                .find(|c| c.kind == "DatabaseReady")
                .map(|c| c.reason.clone())
        })
        .collect();
    for r in [
        "ExpandInProgress",
        "MigrateInProgress",
        "UpgradeRollingUpdate",
        "ContractInProgress",
    ] {
        assert!(
            reasons.iter().any(|x| x == r),
            "{r} missing from {reasons:?}"
        );
        assert!(!events.iter().any(|e| e == r), "{r} must not be an event");
    }
    assert!(
        w.history
            .last()
            .is_some_and(|d| d.outcome == Outcome::Settled)
    );
}

#[test]
fn roll_order_is_gated_on_each_complete_rollout() {
    let mut w = World::install("2026.1");
    w.hanging.insert("c-volume-lvm".into());
    w.set_release("2026.2");
    let d = w.settle().clone();
    assert_eq!(d.status.phase, "RollingUpdate");
    assert_eq!(d.status.rolling_workload, "c-volume-lvm");
    assert_eq!(w.obs.workloads["c-scheduler"].image, "cinder:2026.2");
    assert_eq!(w.obs.workloads["c-volume-lvm"].image, "cinder:2026.2");
    assert_eq!(
        w.obs.workloads["c-backup"].image, "cinder:2026.1",
        "backup waits for the volume roll"
    );
    assert_eq!(
        w.obs.workloads["c"].image, "cinder:2026.1",
        "the API rolls last"
    );
    assert!(
        !w.obs.jobs.contains_key("db-contract"),
        "contract waits for the roll"
    );
    // The roll order as the machine applied new images.
    let mut order: Vec<String> = Vec::new();
    for d in &w.history {
        for a in &d.workloads {
            if let WorkloadAction::Apply { name, image, .. } = a
                && image == "cinder:2026.2"
                && !order.contains(name)
            {
                order.push(name.clone());
            }
        }
    }
    assert_eq!(order, ["c-scheduler", "c-volume-lvm"]);
    // Once the volume roll completes, the rest follows in order.
    w.hanging.clear();
    if let Some(v) = w.obs.workloads.get_mut("c-volume-lvm") {
        v.rollout.total = 1;
    }
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.2");
}

/// After the upgrade, the db-sync on the image the contract Job just ran is a
/// no-op: Ready never drops while it runs, and the second roll does not wait
/// for it. A patch bump's sync on a new image is still waited for.
#[test]
fn a_finished_upgrade_stays_ready_while_its_db_sync_confirms_the_schema() {
    for profile in Services::profiles() {
        let service = profile.service;
        let mut w = World::new(
            profile,
            "2026.1",
            "2026.1",
            &[("first", true), ("last", false)],
        );
        w.obs.job_groups = vec!["cell0".into()];
        w.settle();
        // The sync's first Job (Nova's API database before its cells').
        let sync = job_runs(&w.profile.db_sync, &w.obs.job_groups)[0].key();
        w.scripts.insert(sync.clone(), Script::Hang);
        w.set_release("2026.2");
        let before = w.history.len();
        w.settle();
        assert_eq!(w.obs.status.installed_release, "2026.2", "{service}");
        for d in w.history[before..]
            .iter()
            .filter(|d| d.status.phase.is_empty())
        {
            let database = condition_of(d, condition::DATABASE_READY);
            assert!(
                database.status,
                "{service}: DatabaseReady {} after the upgrade",
                database.reason
            );
            let ready = condition_of(d, condition::READY);
            assert!(
                ready.status,
                "{service}: Ready {} during the second roll",
                ready.message
            );
        }
        let last = w.history.last().expect("decided");
        assert!(
            condition_of(last, condition::READY).status,
            "{service}: Ready while db-sync still runs"
        );
        assert_eq!(
            w.obs.workloads["first"].installed_release.as_deref(),
            Some("2026.2"),
            "{service}: the second roll ran while db-sync was still running"
        );
        assert_eq!(w.obs.jobs[&sync].outcome, JobOutcome::Running, "{service}");
        assert_eq!(
            w.history.last().map(|d| d.outcome.clone()),
            Some(Outcome::Waiting),
            "{service}: not settled before db-sync confirms"
        );

        // A patch bump: a new image, whose sync may change the schema.
        w.obs.spec.image_tag = Some("2026.2-p1".into());
        w.obs.spec.generation += 1;
        let d = w.step();
        assert_eq!(
            condition_of(&d, condition::DATABASE_READY).reason,
            reason::DB_SYNC_IN_PROGRESS,
            "{service}"
        );
    }
}

#[test]
fn second_roll_restarts_one_workload_at_a_time_in_roll_order() {
    let mut w = World::install("2026.1");
    w.set_release("2026.2");
    w.run_until(50, |d| d.status.phase == "Contracting");
    w.hanging.insert("c-scheduler".into());
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.2");
    let annotation = |w: &World, name: &str| w.obs.workloads[name].installed_release.clone();
    assert_eq!(annotation(&w, "c-scheduler").as_deref(), Some("2026.2"));
    for name in ["c-volume-lvm", "c-backup"] {
        assert_eq!(
            annotation(&w, name).as_deref(),
            Some("2026.1"),
            "{name} waits while the scheduler rolls"
        );
    }
    w.hanging.clear();
    if let Some(s) = w.obs.workloads.get_mut("c-scheduler") {
        s.rollout.total = 1;
    }
    w.settle();
    for name in ["c-volume-lvm", "c-backup"] {
        assert_eq!(annotation(&w, name).as_deref(), Some("2026.2"), "{name}");
    }
}

#[test]
fn a_config_edit_restarts_one_workload_at_a_time_in_roll_order() {
    let mut w = World::install("2026.1");
    w.hanging.insert("c-volume-lvm".into());
    w.obs.config_hash = "edited".into();
    w.settle();
    let hash = |w: &World, name: &str| w.obs.workloads[name].config_hash.clone();
    for name in ["c-scheduler", "c-volume-lvm"] {
        assert_eq!(hash(&w, name).as_deref(), Some("edited"), "{name}");
    }
    for name in ["c-backup", "c"] {
        assert_ne!(
            hash(&w, name).as_deref(),
            Some("edited"),
            "{name} waits for the volume roll"
        );
    }
}

#[test]
fn second_roll_moves_the_installed_release_annotation_except_on_the_api() {
    let mut w = World::install("2026.1");
    w.set_release("2026.2");
    w.run_until(50, |d| d.status.phase == "Contracting");
    for name in ["c-scheduler", "c-volume-lvm", "c-backup"] {
        assert_eq!(
            w.obs.workloads[name].installed_release.as_deref(),
            Some("2026.1"),
            "{name} during contract"
        );
    }
    w.settle();
    for name in ["c-scheduler", "c-volume-lvm", "c-backup"] {
        assert_eq!(
            w.obs.workloads[name].installed_release.as_deref(),
            Some("2026.2"),
            "{name} after the second roll"
        );
    }
    assert_eq!(w.obs.workloads["c"].installed_release, None);
}

#[test]
fn upgrade_check_exit_codes_are_reported_once() {
    for (message, expected) in [
        (
            Some("cinder-status upgrade check exit 0"),
            "UpgradeCheckCompleted",
        ),
        (
            Some("cinder-status upgrade check exit 1"),
            "UpgradeCheckWarnings",
        ),
        (
            Some("cinder-status upgrade check exit 2"),
            "UpgradeCheckWarnings",
        ),
        (None, "UpgradeCheckCompleted"),
    ] {
        let mut w = World::install("2026.1");
        w.scripts.insert(
            "db-migrate".into(),
            Script::Succeed {
                message: message.map(String::from),
            },
        );
        w.set_release("2026.2");
        w.settle();
        let reports: Vec<String> = w
            .events()
            .into_iter()
            .filter(|e| e.starts_with("UpgradeCheck"))
            .collect();
        assert_eq!(reports, [expected], "{message:?}");
        assert_eq!(w.obs.status.installed_release, "2026.2", "never wedges");
        let kind = w
            .history
            .iter()
            .find_map(|d| d.check_report.clone())
            .map(|r| r.event.kind);
        let warning = expected == "UpgradeCheckWarnings";
        assert_eq!(
            kind,
            Some(if warning {
                EventType::Warning
            } else {
                EventType::Normal
            })
        );
    }
}

#[test]
fn each_phase_job_failing_permanently_fails_its_phase_once() {
    for (suffix, phase, reason) in [
        ("db-expand", "Expanding", "ExpandFailed"),
        ("db-migrate", "Migrating", "MigrateFailed"),
        ("db-contract", "Contracting", "ContractFailed"),
    ] {
        let mut w = World::install("2026.1");
        w.scripts
            .insert(suffix.into(), Script::Fail { exit_code: 3 });
        w.set_release("2026.2");
        let d = w.settle().clone();
        assert_eq!(d.status.phase, phase);
        assert_eq!(d.status.installed_release, "2026.1");
        let (ready, why, message) = w.database();
        assert!(!ready);
        assert_eq!(why, reason);
        assert!(message.contains("2026.1 → 2026.2"), "{message}");
        assert!(matches!(d.outcome, Outcome::Failed { .. }));
        let warnings = w.events().iter().filter(|e| *e == reason).count();
        assert_eq!(warnings, 1, "one Warning, not one per retry");

        // Recovery: the cause is fixed and the failed Job deleted.
        w.scripts.remove(suffix);
        w.obs.jobs.remove(suffix);
        w.settle();
        assert_eq!(
            w.obs.status.installed_release, "2026.2",
            "{suffix} recovered"
        );
    }
}

#[test]
fn validation_refuses_skip_level_downgrade_and_garbage() {
    for (target, reason) in [
        ("2027.1", "UpgradePathInvalid"),
        ("2025.2", "DowngradeNotSupported"),
        ("2026.x", "VersionParseError"),
    ] {
        let mut w = World::install("2026.1");
        w.set_release(target);
        let d = w.settle().clone();
        let (_, why, message) = w.database();
        assert_eq!(why, reason, "{target}");
        assert!(
            message.contains("2026.1") && message.contains(target),
            "the message carries source and target (C11): {message}"
        );
        assert_eq!(w.event_kinds(reason), [EventType::Warning], "{target}");
        assert_eq!(d.status.phase, "");
        assert!(d.jobs.is_empty());
        assert_eq!(w.obs.status.installed_release, "2026.1");
    }
}

#[test]
fn unreadable_stored_releases_block_with_a_reason() {
    for (installed, target, field) in [
        ("2026.x", "2026.2", "status.installedRelease"),
        ("2026.1", "garbage", "status.targetRelease"),
    ] {
        let mut w = World::install("2026.1");
        w.scripts.insert("db-expand".into(), Script::Hang);
        w.set_release("2026.2");
        w.settle();
        assert_eq!(w.obs.status.phase, "Expanding");
        w.obs.status.installed_release = installed.into();
        w.obs.status.target_release = target.into();
        let d = w.step();
        let (ready, why, message) = w.database();
        assert!(!ready);
        assert_eq!(why, "VersionParseError");
        assert!(message.starts_with(field), "{message}");
        assert!(d.jobs.is_empty(), "nothing runs on an unreadable release");
        assert_eq!(w.event_kinds("VersionParseError"), [EventType::Warning]);
    }
}

#[test]
fn changed_target_holds_then_continues_or_aborts() {
    for (revert_to, aborted) in [("2026.2", false), ("2026.1", true)] {
        let mut w = World::install("2026.1");
        w.scripts.insert("db-expand".into(), Script::Hang);
        w.set_release("2026.2");
        w.settle();
        assert_eq!(w.obs.status.phase, "Expanding");
        w.set_release("2027.1");
        let held = w.settle().clone();
        assert_eq!(w.database().1, "UpgradeTargetChanged");
        assert_eq!(w.event_kinds("UpgradeTargetChanged"), [EventType::Warning]);
        assert!(held.jobs.is_empty(), "a held upgrade creates no Job");
        assert_eq!(
            held.status.phase, "Expanding",
            "neither advances nor restarts"
        );
        assert_eq!(held.status.target_release, "2026.2");

        w.scripts.remove("db-expand");
        w.obs.jobs.remove("db-expand"); // let a fresh expand succeed when continuing
        w.set_release(revert_to);
        w.settle();
        if aborted {
            assert!(w.events().iter().any(|e| e == "UpgradeAborted"));
            assert_eq!(w.obs.status.installed_release, "2026.1");
        } else {
            assert_eq!(w.obs.status.installed_release, "2026.2");
        }
        assert_eq!(w.obs.status.phase, "");
    }
}

#[test]
fn abort_deletes_phase_jobs_before_clearing_status_from_any_pre_contract_phase() {
    for (hang, phase) in [
        ("db-expand", "Expanding"),
        ("db-migrate", "Migrating"),
        ("", "RollingUpdate"),
    ] {
        let mut w = World::install("2026.1");
        if hang.is_empty() {
            w.hanging.insert("c-backup".into());
        } else {
            w.scripts.insert(hang.into(), Script::Hang);
        }
        w.set_release("2026.2");
        w.settle();
        assert_eq!(w.obs.status.phase, phase);
        w.set_release("2026.1");
        let d = w.step();
        assert_eq!(d.status.phase, "");
        assert_eq!(d.status.target_release, "");
        assert!(d.events.iter().any(|e| e.reason == "UpgradeAborted"));
        assert!(
            d.jobs.iter().all(|a| matches!(a, JobAction::Delete { .. })),
            "abort creates nothing: {:?}",
            d.jobs
        );
        assert!(
            !w.obs
                .jobs
                .keys()
                .any(|k| k.starts_with("db-") && k != "db-sync"),
            "phase Jobs deleted"
        );
        w.hanging.clear();
        for wl in w.obs.workloads.values_mut() {
            wl.rollout.total = wl.rollout.desired;
        }
        w.settle();
        assert!(
            w.database().0,
            "steady-state db sync restores DatabaseReady after abort from {phase}"
        );
        assert_eq!(w.obs.status.installed_release, "2026.1");
        assert!(
            w.obs
                .workloads
                .values()
                .all(|wl| wl.image == "cinder:2026.1"),
            "rolled back to the installed image"
        );
    }
}

#[test]
fn after_contract_a_revert_is_a_downgrade() {
    let mut w = World::install("2026.1");
    w.set_release("2026.2");
    w.settle();
    w.set_release("2026.1");
    w.settle();
    assert_eq!(w.database().1, "DowngradeNotSupported");
    assert_eq!(w.obs.status.installed_release, "2026.2");
}

#[test]
fn lone_release_bump_with_tag_stalls_and_with_digest_is_trusted() {
    let mut w = World::install("2026.1");
    w.obs.spec.release = "2026.2".into();
    w.settle();
    assert_eq!(w.database().1, "ImageReleaseMismatch");
    assert_eq!(w.obs.status.phase, "", "no upgrade starts");

    let mut d = World::install("2026.1");
    d.obs.spec.image_tag = None;
    d.obs.spec.image_digest = Some(format!("sha256:{}", "b".repeat(64)));
    d.settle();
    d.obs.spec.release = "2026.2".into();
    d.settle();
    assert_eq!(
        d.obs.status.installed_release, "2026.2",
        "a digest is trusted to match"
    );
}

#[test]
fn reverting_only_the_release_with_a_tagged_image_aborts_then_stalls() {
    let mut w = World::install("2026.1");
    w.scripts.insert("db-migrate".into(), Script::Hang);
    w.set_release("2026.2");
    w.settle();
    w.obs.spec.release = "2026.1".into(); // image still tagged 2026.2
    w.settle();
    assert!(
        w.events().iter().any(|e| e == "UpgradeAborted"),
        "the abort trigger works without the image"
    );
    assert_eq!(
        w.database().1,
        "ImageReleaseMismatch",
        "then the guard parks it"
    );
}

#[test]
fn year_rollover_is_a_single_step() {
    let mut w = World::install("2026.2");
    w.set_release("2027.1");
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2027.1");
}

#[test]
fn ironic_profile_pins_then_unpins_and_refuses_late_aborts() {
    let mut w = World::new(
        support::ironic_profile(),
        "2026.1",
        "2026.1",
        &[("i-conductor", false), ("i-api", false)],
    );
    w.settle();
    w.hanging.insert("i-api".into());
    w.set_release("2026.2");
    w.settle();
    assert_eq!(w.obs.status.phase, "PinnedRoll");
    assert_eq!(
        w.obs.workloads["i-conductor"].pin.as_deref(),
        Some("2026.1")
    );
    // Abort while pinned is allowed.
    let mut late = World::new(
        support::ironic_profile(),
        "2026.1",
        "2026.1",
        &[("i-conductor", false), ("i-api", false)],
    );
    late.settle();
    late.scripts
        .insert("online-migrations".into(), Script::Hang);
    late.set_release("2026.2");
    late.settle();
    assert_eq!(late.obs.status.phase, "OnlineMigrations");
    assert!(
        late.obs.workloads.values().all(|wl| wl.pin.is_none()),
        "unpinned before online migrations"
    );
    late.set_release("2026.1");
    late.settle();
    assert_eq!(late.database().1, "AbortNotSafe");
    assert_eq!(late.obs.status.phase, "OnlineMigrations");

    w.set_release("2026.1");
    w.settle();
    assert!(w.events().iter().any(|e| e == "UpgradeAborted"));
}

fn ironic() -> World {
    let mut w = World::new(
        support::ironic_profile(),
        "2026.1",
        "2026.1",
        &[("i-conductor", false), ("i-api", false)],
    );
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.1");
    w
}

#[test]
fn ironic_schema_upgrade_exit_2_names_the_incomplete_online_migrations() {
    let mut w = ironic();
    w.scripts
        .insert("db-upgrade".into(), Script::Fail { exit_code: 2 });
    w.set_release("2026.2");
    w.settle();
    let (_, reason, message) = w.database();
    assert_eq!(reason, "OnlineMigrationsIncomplete");
    assert!(
        message.contains("previous release's online data migrations were never completed"),
        "{message}"
    );
    // Another exit code is the generic phase failure.
    let mut other = ironic();
    other
        .scripts
        .insert("db-upgrade".into(), Script::Fail { exit_code: 1 });
    other.set_release("2026.2");
    other.settle();
    assert_eq!(other.database().1, "DBUpgradeFailed");
}

#[test]
fn ironic_online_migrations_exit_codes_have_their_reasons() {
    for (code, reason) in [
        (2, "DatabaseNotCompatible"),
        (127, "InvalidMigrationInput"),
        (1, "OnlineMigrationsFailed"),
    ] {
        let mut w = ironic();
        w.scripts
            .insert("online-migrations".into(), Script::Fail { exit_code: code });
        w.set_release("2026.2");
        w.settle();
        assert_eq!(w.database().1, reason, "exit {code}");
        assert_eq!(w.obs.status.installed_release, "2026.1", "not promoted");
    }
}

#[test]
fn ironic_jobs_fail_fast_on_final_exit_codes_and_rerun_on_progress() {
    let mut w = ironic();
    w.scripts.insert("online-migrations".into(), Script::Hang);
    w.set_release("2026.2");
    w.settle();
    let ensure = w
        .history
        .iter()
        .flat_map(|d| d.jobs.iter())
        .find_map(|a| match a {
            JobAction::Ensure {
                suffix,
                backoff_limit,
                fail_fast_exit_codes,
                ..
            } if suffix == "online-migrations" => {
                Some((*backoff_limit, fail_fast_exit_codes.clone()))
            }
            _ => None,
        })
        .expect("online migrations ensured");
    assert_eq!(
        ensure,
        (10, vec![2, 127]),
        "exit 1 is re-run (backoff limit 10), 2 and 127 fail the Job at once"
    );
}

#[test]
fn ironic_unpins_before_online_migrations_conductors_first() {
    let mut w = ironic();
    w.scripts.insert("online-migrations".into(), Script::Hang);
    w.set_release("2026.2");
    w.settle();
    // Every apply of a new parameter set, in order.
    let mut applied: Vec<(String, Option<String>)> = Vec::new();
    for d in &w.history {
        for a in &d.workloads {
            if let WorkloadAction::Apply {
                name, image, pin, ..
            } = a
                && image == "cinder:2026.2"
                && applied.last() != Some(&(name.clone(), pin.clone()))
                && !applied.contains(&(name.clone(), pin.clone()))
            {
                applied.push((name.clone(), pin.clone()));
            }
        }
    }
    let pinned = Some("2026.1".to_string());
    assert_eq!(
        applied,
        [
            ("i-conductor".to_string(), pinned.clone()),
            ("i-api".to_string(), pinned),
            ("i-conductor".to_string(), None),
            ("i-api".to_string(), None),
        ]
    );
    assert_eq!(w.obs.status.phase, "OnlineMigrations");
}

#[test]
fn a_pass_on_a_stale_resource_does_not_delete_the_running_expand_job() {
    let mut w = World::install("2026.1");
    w.scripts.insert("db-expand".into(), Script::Hang);
    w.set_release("2026.2");
    let stale = w.obs.status.clone();
    w.step();
    assert_eq!(w.obs.status.phase, "Expanding");
    let uid = w.obs.jobs["db-expand"].uid.clone();
    // The controller's cache still holds the status from before the initiation.
    w.obs.status = stale;
    let d = w.step();
    assert!(
        d.jobs
            .iter()
            .all(|a| !matches!(a, JobAction::Delete { .. })),
        "{:?}",
        d.jobs
    );
    assert_eq!(
        w.obs.jobs["db-expand"].uid, uid,
        "the running expand Job is kept"
    );
}

#[test]
fn ironic_warns_once_about_too_few_replicas_without_refusing() {
    let mut w = ironic();
    let warnings = |w: &World| w.events().iter().filter(|e| *e == "TooFewReplicas").count();
    let highly_available = |w: &World| {
        w.obs
            .status
            .conditions
            .iter()
            .find(|c| c.kind == "HighlyAvailable")
            .map(|c| (c.status, c.reason.clone(), c.message.clone()))
            .expect("HighlyAvailable")
    };
    let (status, why, message) = highly_available(&w);
    assert!(!status);
    assert_eq!(why, "TooFewReplicas");
    assert!(message.contains("i-conductor has 1"), "{message}");
    assert_eq!(warnings(&w), 1, "announced once, not every pass");
    let ready = w
        .obs
        .status
        .conditions
        .iter()
        .find(|c| c.kind == "Ready")
        .expect("Ready");
    assert!(ready.status, "a warning, not a refusal");

    for workload in &mut w.obs.desired_workloads {
        workload.replicas = Replicas::Fixed(2);
    }
    w.settle();
    assert_eq!(
        highly_available(&w),
        (
            true,
            "EnoughReplicas".to_string(),
            "every workload runs at least 2 replicas".to_string()
        )
    );
    assert_eq!(warnings(&w), 1);
}

#[test]
fn cinder_has_no_replica_advisory() {
    let w = World::install("2026.1");
    assert!(
        w.obs
            .status
            .conditions
            .iter()
            .all(|c| c.kind != "HighlyAvailable")
    );
}

#[test]
fn the_pin_in_force_is_the_installed_release_during_the_pinned_roll_only() {
    let profile = support::ironic_profile();
    assert_eq!(
        profile.pin_during("PinnedRoll", "2026.1").as_deref(),
        Some("2026.1")
    );
    for phase in [
        "",
        "DatabaseUpgrade",
        "UpgradeCheck",
        "Unpinning",
        "OnlineMigrations",
    ] {
        assert_eq!(profile.pin_during(phase, "2026.1"), None, "{phase}");
    }
    let cinder = support::cinder_profile();
    assert_eq!(cinder.pin_during("RollingUpdate", "2026.1"), None);
}

#[test]
fn ironic_patch_bump_db_sync_exit_2_names_the_incomplete_online_migrations() {
    let mut w = ironic();
    w.scripts
        .insert("db-sync".into(), Script::Fail { exit_code: 2 });
    w.obs.spec.image_tag = Some("2026.1-p1".into());
    w.obs.spec.generation += 1;
    let d = w.settle().clone();
    let (_, reason, _) = w.database();
    assert_eq!(reason, "OnlineMigrationsIncomplete");
    assert!(
        matches!(&d.outcome, Outcome::Failed { reason, .. } if reason == "OnlineMigrationsIncomplete")
    );
    // Another exit code is the generic sync failure.
    let mut other = ironic();
    other
        .scripts
        .insert("db-sync".into(), Script::Fail { exit_code: 1 });
    other.obs.spec.image_tag = Some("2026.1-p1".into());
    other.obs.spec.generation += 1;
    other.settle();
    assert_eq!(other.database().1, "DBSyncFailed");
}

/// A Cinder of `back_ends` back ends rolled by `max_parallel`, upgraded to
/// 2026.2 while every back end's new pods hang.
fn upgraded_with_back_ends_hanging(back_ends: usize, max_parallel: u32) -> World {
    let mut w = World::with_back_ends("2026.1", back_ends);
    w.obs.spec.max_parallel = max_parallel;
    for i in 0..back_ends {
        w.hanging.insert(format!("c-volume-{i}"));
    }
    w.set_release("2026.2");
    w.settle();
    w
}

#[test]
fn back_ends_of_one_role_roll_side_by_side_up_to_the_bound_and_roles_never_overlap() {
    let mut w = upgraded_with_back_ends_hanging(5, 2);
    let image = |w: &World, name: &str| w.obs.workloads[name].image.clone();
    let rolled: Vec<String> = (0..5)
        .map(|i| format!("c-volume-{i}"))
        .filter(|n| image(&w, n) == "cinder:2026.2")
        .collect();
    assert_eq!(
        rolled,
        ["c-volume-0", "c-volume-1"],
        "two at once, in order"
    );
    assert_eq!(
        image(&w, "c-backup"),
        "cinder:2026.1",
        "the next role waits"
    );

    // One finishes: the next back end starts, still two at once.
    w.hanging.remove("c-volume-0");
    if let Some(v) = w.obs.workloads.get_mut("c-volume-0") {
        v.rollout.total = 1;
    }
    w.settle();
    assert_eq!(image(&w, "c-volume-2"), "cinder:2026.2");
    assert_eq!(image(&w, "c-volume-3"), "cinder:2026.1");
    assert_eq!(image(&w, "c-backup"), "cinder:2026.1");

    w.hanging.clear();
    for v in w.obs.workloads.values_mut() {
        v.rollout.total = v.rollout.desired;
    }
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.2");
    assert!((0..5).all(|i| image(&w, &format!("c-volume-{i}")) == "cinder:2026.2"));
}

#[test]
fn a_batch_never_takes_every_back_end_out_of_service_at_once() {
    let w = upgraded_with_back_ends_hanging(2, 5);
    let image = |w: &World, name: &str| w.obs.workloads[name].image.clone();
    assert_eq!(image(&w, "c-volume-0"), "cinder:2026.2");
    assert_eq!(
        image(&w, "c-volume-1"),
        "cinder:2026.1",
        "the other back end keeps serving while the first restarts"
    );
}
