//! Per-group Jobs (a Nova cell's schema, one Job per cell) on the pure
//! machine: each group's Job is its own, runs after the one before it, once,
//! and a failure names the group's Job.

mod support;

use ratchet_phase_machine::*;
use support::{Script, World};

/// Cinder's profile with a per-group Job after the sync and after Expanding's
/// Job (bit 0), for cells `cell0` and `cell1`.
fn grouped_world(release: &str) -> World {
    cells_world(World::grouped(support::cinder_profile(), 0b1), release)
}

/// A world of `profile` installed at `release` with Cinder's scheduler and
/// API, for cells `cell0` and `cell1`.
fn cells_world(profile: Profile, release: &str) -> World {
    let mut w = World::new(
        profile,
        release,
        release,
        &[("c-scheduler", true), ("c", false)],
    );
    w.obs.job_groups = vec!["cell0".into(), "cell1".into()];
    w
}

/// The Jobs `decisions` ask for, in the order of their first appearance.
fn created(decisions: &[Decision]) -> Vec<(String, Option<String>)> {
    let mut seen: Vec<(String, Option<String>)> = Vec::new();
    for d in decisions {
        for action in &d.jobs {
            if let JobAction::Ensure { suffix, group, .. } = action
                && !seen.iter().any(|(s, _)| s == suffix)
            {
                seen.push((suffix.clone(), group.clone()));
            }
        }
    }
    seen
}

fn pair(key: &str, group: Option<&str>) -> (String, Option<String>) {
    (key.to_string(), group.map(str::to_string))
}

#[test]
fn a_fresh_install_syncs_each_group_in_turn_before_any_workload() {
    let mut w = grouped_world("2026.1");
    w.scripts.insert("cell-sync-cell0".into(), Script::Hang);
    w.settle();
    assert_eq!(
        created(&w.history),
        [
            pair("db-sync", None),
            pair("cell-sync-cell0", Some("cell0"))
        ],
        "cell1's Job waits for cell0's"
    );
    let (ready, reason, message) = w.database();
    assert!(!ready);
    assert_eq!(reason, "DBSyncInProgress");
    assert!(
        message.contains("cinder-cell-sync-cell0 (2 of 3)"),
        "{message}"
    );
    assert!(w.obs.workloads.is_empty(), "nothing rolls before the sync");

    w.scripts.clear();
    w.obs.jobs.remove("cell-sync-cell0");
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.1");
    assert!(w.obs.jobs.contains_key("cell-sync-cell1"));
    assert_eq!(w.obs.workloads.len(), 2);
}

#[test]
fn an_upgrade_runs_every_group_s_job_once_in_order_and_reports_the_phase_once() {
    let mut w = grouped_world("2026.1");
    w.settle();
    let before = w.history.len();
    w.set_release("2026.2");
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.2");
    assert_eq!(
        created(&w.history[before..]),
        [
            pair("db-expand", None),
            pair("g0-cell0", Some("cell0")),
            pair("g0-cell1", Some("cell1")),
            pair("db-migrate", None),
            pair("db-contract", None),
            // Steady state at the new release confirms the schema.
            pair("db-sync", None),
            pair("cell-sync-cell0", Some("cell0")),
            pair("cell-sync-cell1", Some("cell1")),
        ]
    );
    let expand_complete: Vec<&Event> = w.history[before..]
        .iter()
        .flat_map(|d| &d.events)
        .filter(|e| e.reason == "ExpandComplete")
        .collect();
    assert_eq!(expand_complete.len(), 1);
    assert!(
        expand_complete[0]
            .message
            .ends_with("cinder-db-expand, cinder-g0-cell0, cinder-g0-cell1 succeeded"),
        "{}",
        expand_complete[0].message
    );
}

#[test]
fn a_failed_group_job_fails_its_phase_naming_it_and_its_rerun_goes_on() {
    let mut w = grouped_world("2026.1");
    w.settle();
    w.scripts
        .insert("g0-cell1".into(), Script::Fail { exit_code: 1 });
    w.set_release("2026.2");
    w.settle();
    let (ready, reason, message) = w.database();
    assert!(!ready);
    assert_eq!(reason, "ExpandFailed");
    assert!(
        message.contains("cinder-g0-cell1 failed in Expanding"),
        "{message}"
    );
    assert_eq!(w.obs.status.phase, "Expanding");

    // Deleting the failed Job re-runs it alone: cell0's stays as it was.
    let cell0 = w.obs.jobs["g0-cell0"].uid.clone();
    w.scripts.clear();
    w.obs.jobs.remove("g0-cell1");
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.2");
    assert_eq!(w.obs.jobs["g0-cell0"].uid, cell0);
}

#[test]
fn an_abort_deletes_every_group_s_job() {
    let mut w = grouped_world("2026.1");
    w.settle();
    w.scripts.insert("db-migrate".into(), Script::Hang);
    w.set_release("2026.2");
    w.settle();
    assert_eq!(w.obs.status.phase, "Migrating");
    assert!(w.obs.jobs.contains_key("g0-cell1"));
    w.set_release("2026.1");
    w.step();
    for key in ["db-expand", "g0-cell0", "g0-cell1", "db-migrate"] {
        assert!(!w.obs.jobs.contains_key(key), "{key} kept after the abort");
    }
}

/// Nova's upgrade, cells `cell0` and `cell1`: each cell's online data
/// migrations report what they moved, and the event announcing the
/// upgrade's end quotes both.
#[test]
fn each_cell_s_report_reaches_the_upgrade_s_completion() {
    let mut w = World::new(
        ratchet_services::nova::profile::profile(),
        "2026.1",
        "2026.1",
        &[("n-conductor", true), ("n-api", true)],
    );
    w.obs.job_groups = vec!["cell0".into(), "cell1".into()];
    w.settle();
    for (cell, moved) in [("cell0", "nothing"), ("cell1", "populate_user_id 12, ")] {
        w.scripts.insert(
            format!("online-migrations-{cell}"),
            Script::Succeed {
                message: Some(format!(
                    "online_data_migrations exit 0; passes: 2; moved: {moved}"
                )),
            },
        );
    }
    w.set_release("2026.2");
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.2");
    let complete: Vec<String> = w
        .history
        .iter()
        .flat_map(|d| &d.events)
        .filter(|e| e.reason == "UpgradeComplete")
        .map(|e| e.message.clone())
        .collect();
    let [message] = complete.as_slice() else {
        panic!("UpgradeComplete once: {complete:?}");
    };
    for said in [
        "nova-online-migrations-cell0: online_data_migrations exit 0; passes: 2; moved: nothing",
        "nova-online-migrations-cell1: online_data_migrations exit 0; passes: 2; moved: populate_user_id 12",
    ] {
        assert!(message.contains(said), "{said} in {message}");
    }
}

const STALE: Advice = Advice {
    condition: "RowsCurrent",
    all_clear: "nothing stale",
    clear_reason: "NothingStale",
    found_reason: "StaleFound",
};

/// Cinder's profile whose Expanding also runs a reporting per-group Job that
/// sets the advisory condition `STALE`, for cells `cell0` and `cell1`.
fn advising_world() -> World {
    let mut profile = support::cinder_profile();
    profile.phases[0] = profile.phases[0].clone().then(JobTemplate {
        suffix: "look",
        command: vec!["look".into()],
        per_group: true,
        reports: true,
        advice: Some(STALE),
        ..JobTemplate::default()
    });
    cells_world(profile, "2026.1")
}

fn says(w: &mut World, key: &str, message: &str) {
    w.scripts.insert(
        key.into(),
        Script::Succeed {
            message: Some(message.into()),
        },
    );
}

fn advice_condition(w: &World) -> Option<(bool, String, String)> {
    w.obs
        .status
        .condition(STALE.condition)
        .map(|c| (c.status, c.reason.clone(), c.message.clone()))
}

#[test]
fn a_reporting_job_s_findings_set_its_advisory_condition_and_stay_after_its_phase() {
    let mut w = advising_world();
    w.settle();
    assert_eq!(advice_condition(&w), None, "no look taken yet");

    says(&mut w, "look-cell0", "nothing stale");
    w.scripts.insert("look-cell1".into(), Script::Hang);
    w.set_release("2026.2");
    w.settle();
    assert_eq!(
        advice_condition(&w),
        None,
        "judged only once every cell said"
    );

    says(&mut w, "look-cell1", "stale: compute-2 (forced down)");
    w.obs.jobs.remove("look-cell1");
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.2");
    let found = (
        false,
        "StaleFound".to_string(),
        "look-cell1: stale: compute-2 (forced down)".to_string(),
    );
    assert_eq!(advice_condition(&w), Some(found.clone()));
    assert_eq!(
        w.event_kinds("StaleFound"),
        [EventType::Warning],
        "told once"
    );

    // Past its phase the controller no longer reads what the Jobs said.
    for job in w.obs.jobs.values_mut() {
        job.termination_message = None;
    }
    w.settle();
    assert_eq!(advice_condition(&w), Some(found), "kept from the status");
    assert_eq!(w.event_kinds("StaleFound").len(), 1);

    // The next upgrade's look finds nothing.
    says(&mut w, "look-cell1", "nothing stale");
    w.set_release("2027.1");
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2027.1");
    assert_eq!(
        advice_condition(&w),
        Some((true, "NothingStale".into(), "nothing stale".into()))
    );
    assert_eq!(
        w.obs.status.condition("Ready").map(|c| c.status),
        Some(true),
        "advisory: never holds Ready"
    );
}
