//! Hosts drained before their restart (issue 40), on the pure machine: the
//! drain Job runs before the workload's new template, the host is given back
//! once its successor rolled out, the next workload waits for both, and an
//! abort or a failed drain never leaves a host out of service.

mod support;

use ratchet_phase_machine::vocabulary::{condition, event, reason};
use ratchet_phase_machine::*;
use support::{Script, World, condition_of};

const VOLUME: &str = "c-volume-lvm";

fn drain() -> HostDrain {
    HostDrain {
        drain: vec!["drain".into(), VOLUME.into()],
        undrain: vec!["undrain".into(), VOLUME.into()],
        waits_for: "its operations to end".into(),
        per_pod: false,
    }
}

/// An installed Cinder world whose back end is drained before it restarts.
fn installed() -> World {
    let mut w = World::cinder("2026.1");
    for workload in &mut w.obs.desired_workloads {
        if workload.name == VOLUME {
            workload.drain = Some(drain());
        }
    }
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.1");
    w
}

/// What each step did, in order: `job <key>` when a Job was (re)created,
/// `roll <workload>` when a workload's template changed.
fn trace(w: &mut World, steps: usize) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..steps {
        let before = w.obs.clone();
        w.step();
        for (key, job) in &w.obs.jobs {
            if before.jobs.get(key).is_none_or(|j| j.uid != job.uid) {
                seen.push(format!("job {key}"));
            }
        }
        for (name, live) in &w.obs.workloads {
            if before
                .workloads
                .get(name)
                .is_none_or(|b| b.rollout.generation != live.rollout.generation)
            {
                seen.push(format!("roll {name}"));
            }
        }
        if w.obs == before {
            break;
        }
    }
    seen
}

/// The last decision says every workload rolled out (DeploymentsReady).
fn rolled_out(w: &World) -> bool {
    w.history
        .last()
        .is_some_and(|d| condition_of(d, condition::DEPLOYMENTS_READY).status)
}

fn filtered<'a>(trace: &'a [String], names: &[&str]) -> Vec<&'a str> {
    trace
        .iter()
        .map(String::as_str)
        .filter(|t| names.iter().any(|n| t.ends_with(n)))
        .collect()
}

#[test]
fn a_drained_host_restarts_after_its_drain_and_the_next_waits_for_its_return() {
    let mut w = installed();
    w.scripts.insert(
        format!("drain-{VOLUME}"),
        Script::Succeed {
            message: Some("drained in 3.2 s; nothing in flight".into()),
        },
    );
    w.set_release("2026.2");
    let seen = trace(&mut w, 80);
    assert_eq!(w.obs.status.installed_release, "2026.2");
    // Each roll (the ordered roll, then the second roll releasing the pins):
    // drain, restart, return, and only then the backup service.
    let order = filtered(&seen, &[VOLUME, "c-backup"]);
    let one_roll = [
        "job drain-c-volume-lvm",
        "roll c-volume-lvm",
        "job undrain-c-volume-lvm",
        "roll c-backup",
    ];
    assert_eq!(order, [one_roll, one_roll].concat(), "{seen:#?}");
    let drained: Vec<&Event> = w
        .history
        .iter()
        .flat_map(|d| &d.events)
        .filter(|e| e.reason == event::HOST_DRAINED)
        .collect();
    assert_eq!(drained.len(), 2, "one event per drained host and roll");
    assert_eq!(
        drained[0].message,
        "c-volume-lvm: drained in 3.2 s; nothing in flight"
    );
    assert!(rolled_out(&w));
}

#[test]
fn a_drain_in_progress_holds_the_restart_and_says_what_it_waits_for() {
    let mut w = installed();
    w.scripts.insert(format!("drain-{VOLUME}"), Script::Hang);
    w.set_release("2026.2");
    let d = w.settle().clone();
    assert_eq!(d.status.phase, "RollingUpdate");
    assert_eq!(d.status.rolling_workload, VOLUME);
    assert_eq!(
        w.obs.workloads[VOLUME].image, "cinder:2026.1",
        "not restarted while draining"
    );
    let deployments = condition_of(&d, condition::DEPLOYMENTS_READY);
    assert_eq!(deployments.reason, reason::DRAINING);
    assert_eq!(
        deployments.message,
        "draining c-volume-lvm before its restart: its operations to end"
    );
}

#[test]
fn a_failed_drain_warns_restarts_and_still_gives_the_host_back() {
    let mut w = installed();
    w.scripts
        .insert(format!("drain-{VOLUME}"), Script::Fail { exit_code: 1 });
    w.set_release("2026.2");
    let seen = trace(&mut w, 80);
    assert_eq!(w.obs.status.installed_release, "2026.2");
    assert!(seen.iter().any(|s| s == "job undrain-c-volume-lvm"));
    assert!(
        w.event_kinds(event::DRAIN_FAILED)
            .contains(&EventType::Warning)
    );
}

#[test]
fn a_failed_return_holds_the_next_workload_with_a_warning() {
    let mut w = installed();
    w.scripts
        .insert(format!("undrain-{VOLUME}"), Script::Fail { exit_code: 1 });
    w.set_release("2026.2");
    let d = w.settle().clone();
    assert_eq!(d.status.phase, "RollingUpdate");
    assert_eq!(
        w.obs.workloads["c-backup"].image, "cinder:2026.1",
        "the next workload waits"
    );
    let deployments = condition_of(&d, condition::DEPLOYMENTS_READY);
    assert_eq!(deployments.reason, reason::RETURN_TO_SERVICE_FAILED);
    assert_eq!(
        w.event_kinds(reason::RETURN_TO_SERVICE_FAILED),
        [EventType::Warning]
    );
}

#[test]
fn an_abort_during_a_drain_gives_the_host_back() {
    let mut w = installed();
    w.scripts.insert(format!("drain-{VOLUME}"), Script::Hang);
    w.set_release("2026.2");
    w.settle();
    assert_eq!(
        w.history.last().map(|d| d.status.rolling_workload.as_str()),
        Some(VOLUME)
    );
    w.set_release("2026.1");
    let seen = trace(&mut w, 40);
    assert!(w.events().iter().any(|e| e == "UpgradeAborted"));
    assert_eq!(w.obs.status.installed_release, "2026.1");
    assert_eq!(w.obs.workloads[VOLUME].image, "cinder:2026.1");
    assert!(
        seen.iter().any(|s| s == "job undrain-c-volume-lvm"),
        "the host the interrupted drain took out is given back: {seen:?}"
    );
    assert!(rolled_out(&w));
}

#[test]
fn a_drain_in_the_second_roll_keeps_the_service_ready() {
    let mut w = installed();
    w.set_release("2026.2");
    w.run_until(80, |d| d.status.phase == "Contracting");
    w.scripts.insert(format!("drain-{VOLUME}"), Script::Hang);
    let d = w.settle().clone();
    assert_eq!(d.status.installed_release, "2026.2");
    let deployments = condition_of(&d, condition::DEPLOYMENTS_READY);
    assert_eq!(deployments.reason, reason::DRAINING);
    let ready = condition_of(&d, condition::READY);
    assert!(
        ready.status,
        "a drained host still serves: {}",
        ready.message
    );
}

const BACKUP: &str = "c-backup";

/// An installed Cinder world whose backup service runs three pods, each
/// drained before it restarts.
fn installed_per_pod() -> World {
    let mut w = World::cinder("2026.1");
    for workload in &mut w.obs.desired_workloads {
        if workload.name == BACKUP {
            workload.replicas = Replicas::Fixed(3);
            workload.drain = Some(HostDrain {
                drain: vec!["drain".into()],
                undrain: vec!["undrain".into()],
                waits_for: "its backups to end".into(),
                per_pod: true,
            });
        }
    }
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.1");
    w
}

#[test]
fn pods_drained_one_by_one_restart_highest_first_each_after_its_drain_and_before_the_next() {
    let mut w = installed_per_pod();
    w.set_release("2026.2");
    let seen = trace(&mut w, 120);
    assert_eq!(w.obs.status.installed_release, "2026.2");
    let order: Vec<&str> = seen
        .iter()
        .map(String::as_str)
        .filter(|t| t.contains(BACKUP) || *t == "roll c")
        .collect();
    // The template goes in with every pod held, then each pod: drain,
    // release (the partition lowered to it), return; then the API.
    let one_roll = [
        "job drain-c-backup-2",
        "roll c-backup",
        "roll c-backup",
        "job undrain-c-backup-2",
        "job drain-c-backup-1",
        "roll c-backup",
        "job undrain-c-backup-1",
        "job drain-c-backup-0",
        "roll c-backup",
        "job undrain-c-backup-0",
        "roll c",
    ];
    // The API (no installed-release annotation) rolls once.
    let second_roll = &one_roll[..one_roll.len() - 1];
    assert_eq!(order, [&one_roll[..], second_roll].concat(), "{seen:#?}");
    let drained: Vec<&str> = w
        .history
        .iter()
        .flat_map(|d| &d.events)
        .filter(|e| e.reason == event::HOST_DRAINED)
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(
        drained,
        [
            "c-backup-2: drained",
            "c-backup-1: drained",
            "c-backup-0: drained"
        ]
        .repeat(2),
        "one event per pod and roll"
    );
    let job = |key: &str| match w
        .history
        .iter()
        .flat_map(|d| &d.jobs)
        .find(|a| matches!(a, JobAction::Ensure { suffix, .. } if suffix == key))
    {
        Some(JobAction::Ensure { command, .. }) => command.clone(),
        _ => Vec::new(),
    };
    assert_eq!(
        job("drain-c-backup-1"),
        ["drain", "c-backup-1"],
        "the pod named last"
    );
    assert_eq!(job("undrain-c-backup-1"), ["undrain", "c-backup-1"]);
    assert_eq!(w.obs.workloads[BACKUP].partition, 0, "every pod released");
    assert!(rolled_out(&w));
}

#[test]
fn a_pod_drain_in_progress_holds_that_pod_and_every_pod_below_it() {
    let mut w = installed_per_pod();
    w.scripts.insert("drain-c-backup-1".into(), Script::Hang);
    w.set_release("2026.2");
    let d = w.settle().clone();
    let live = &w.obs.workloads[BACKUP];
    assert_eq!(live.image, "cinder:2026.2", "the template is in");
    assert_eq!(live.partition, 2, "only pod 2 released");
    assert_eq!(live.rollout.updated, 1);
    let deployments = condition_of(&d, condition::DEPLOYMENTS_READY);
    assert_eq!(deployments.reason, reason::DRAINING);
    assert_eq!(
        deployments.message,
        "draining c-backup-1 before its restart: its backups to end"
    );
    assert!(
        w.obs.jobs.contains_key("undrain-c-backup-2"),
        "pod 2 given back first"
    );
    assert_eq!(w.obs.workloads["c"].image, "cinder:2026.1", "the API waits");
}

#[test]
fn an_abort_in_a_pod_by_pod_roll_gives_every_drained_pod_back() {
    let mut w = installed_per_pod();
    w.scripts.insert("drain-c-backup-1".into(), Script::Hang);
    w.set_release("2026.2");
    w.settle();
    w.scripts.clear();
    w.obs.jobs.remove("drain-c-backup-1");
    w.scripts.insert("drain-c-backup-0".into(), Script::Hang);
    w.settle();
    assert_eq!(w.obs.workloads[BACKUP].partition, 1);
    w.set_release("2026.1");
    w.scripts.clear();
    w.obs.jobs.remove("drain-c-backup-0");
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.1");
    assert_eq!(w.obs.status.phase, "", "aborted");
    let live = &w.obs.workloads[BACKUP];
    assert_eq!((live.image.as_str(), live.partition), ("cinder:2026.1", 0));
    for k in 0..3 {
        let drain = w.obs.jobs.get(&format!("drain-c-backup-{k}"));
        let undrain = w.obs.jobs.get(&format!("undrain-c-backup-{k}"));
        assert!(
            drain.is_none() || undrain.is_some_and(|u| u.outcome == JobOutcome::Succeeded),
            "pod {k} drained and not given back: {drain:?} {undrain:?}"
        );
    }
    assert!(rolled_out(&w));
}
