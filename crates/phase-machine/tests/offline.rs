//! A phase's offline step (Neutron's contract with every server stopped) on
//! the pure machine: it holds without the spec's consent, stops only the
//! workloads it names, runs its Job only once their pods are gone, and ends
//! the phase only once they serve again.

mod support;

use ratchet_phase_machine::*;
use support::{Script, World};

/// Cinder's profile whose contract, when its Job exits 3, runs `contract
/// --offline` with the API (`c`) stopped.
fn world() -> World {
    let mut profile = support::cinder_profile();
    let last = profile.phases.len() - 1;
    profile.phases[last] = profile.phases[last].clone().with_offline(Offline {
        exit_code: 3,
        stops: vec!["c"],
        template: JobTemplate {
            suffix: "db-contract-offline",
            command: vec!["contract".into(), "--offline".into()],
            ..JobTemplate::default()
        },
    });
    let mut w = World::new(
        profile,
        "2026.1",
        "2026.1",
        &[("c-scheduler", true), ("c", false)],
    );
    w.settle();
    w.scripts
        .insert("db-contract".into(), Script::Fail { exit_code: 3 });
    w
}

fn stopped(d: &Decision) -> Vec<&str> {
    d.workloads
        .iter()
        .filter_map(|a| match a {
            WorkloadAction::Apply {
                name,
                stopped: true,
                ..
            } => Some(name.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn without_consent_the_phase_holds_saying_what_it_would_stop() {
    let mut w = world();
    w.set_release("2026.2");
    w.settle();
    assert_eq!(w.obs.status.phase, "Contracting");
    let (ready, reason, message) = w.database();
    assert!(!ready);
    assert_eq!(reason, "OutageNotAllowed");
    assert!(message.contains("needs c stopped"), "{message}");
    assert!(w.history.iter().all(|d| stopped(d).is_empty()));
    assert_eq!(w.obs.workloads["c"].rollout.desired, 1, "the API serves on");
    assert!(!w.obs.jobs.contains_key("db-contract-offline"));
}

#[test]
fn with_consent_it_stops_runs_and_starts_again_before_promoting() {
    let mut w = world();
    w.set_release("2026.2");
    w.settle();
    // The API's pods linger while stopping: the Job waits for them.
    w.hanging.insert("c".into());
    w.obs.spec.allows_outage = true;
    w.obs.spec.generation += 1;
    let d = w.step();
    assert_eq!(stopped(&d), ["c"], "only the API is stopped");
    assert!(!w.obs.jobs.contains_key("db-contract-offline"));
    w.step();
    assert!(
        !w.obs.jobs.contains_key("db-contract-offline"),
        "the offline Job waits until no API pod is left"
    );
    assert!(w.database().2.contains("stopping c"), "{}", w.database().2);

    w.hanging.clear();
    w.obs.workloads.get_mut("c").expect("c").rollout.total = 0;
    w.settle();
    assert!(w.obs.jobs.contains_key("db-contract-offline"));
    assert_eq!(w.obs.status.installed_release, "2026.2");
    assert_eq!(w.obs.workloads["c"].rollout.desired, 1, "the API is back");
    assert!(w.obs.workloads["c"].rollout.complete());
    // The scheduler was never stopped.
    assert!(
        w.history
            .iter()
            .all(|d| !stopped(d).contains(&"c-scheduler"))
    );
    // The outage's start and end, each announced once, in that order.
    let events = w.events();
    let outage: Vec<&str> = events
        .iter()
        .map(String::as_str)
        .filter(|e| e.starts_with("Outage"))
        .collect();
    // Held without consent first (the test gives it late), then the outage.
    assert_eq!(
        outage,
        ["OutageNotAllowed", "OutageStarted", "OutageEnded"],
        "{events:?}"
    );
}

#[test]
fn a_failed_offline_job_keeps_the_workloads_stopped_and_says_so() {
    let mut w = world();
    w.scripts
        .insert("db-contract-offline".into(), Script::Fail { exit_code: 1 });
    w.obs.spec.allows_outage = true;
    w.set_release("2026.2");
    w.settle();
    let (_, reason, message) = w.database();
    assert_eq!(reason, "ContractFailed");
    assert!(message.contains("they stay stopped"), "{message}");
    assert_eq!(w.obs.workloads["c"].rollout.desired, 0);

    // An abort brings them back at the installed release.
    w.set_release("2026.1");
    w.settle();
    assert_eq!(w.obs.status.phase, "");
    assert_eq!(w.obs.workloads["c"].rollout.desired, 1);
    assert!(!w.obs.jobs.contains_key("db-contract-offline"));
}

#[test]
fn a_job_that_needs_nothing_offline_stops_nothing() {
    let mut w = world();
    w.scripts.clear();
    w.obs.spec.allows_outage = true;
    w.set_release("2026.2");
    w.settle();
    assert_eq!(w.obs.status.installed_release, "2026.2");
    assert!(w.history.iter().all(|d| stopped(d).is_empty()));
    assert!(!w.obs.jobs.contains_key("db-contract-offline"));
}

#[test]
fn asking_for_the_offline_step_ends_the_job_at_once_and_its_code_is_read() {
    let w = world();
    let (_, contracting) = w.profile.phase("Contracting").expect("phase");
    for template in contracting.templates() {
        assert!(
            template.fail_fast_exit_codes.contains(&3),
            "{}: the Job controller would retry an answer",
            template.suffix
        );
    }
    assert!(contracting.may_ask_offline("db-contract", &[]));
    assert!(!contracting.may_ask_offline("db-expand", &[]));
}
