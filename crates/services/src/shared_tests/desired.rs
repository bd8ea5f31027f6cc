//! The pass's whole set, rendered before anything is applied: each Job and
//! workload the decision asks for, with the Services it needs, or an error
//! that leaves everything unwritten.

use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::desired::{Desired, Inputs};
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::render::{Owner, Workload};
use ratchet_phase_machine::{Decision, DesiredStatus, JobAction, Outcome, WorkloadAction};

use crate::ironic::v1alpha1::Ironic;

fn ironic() -> (Owner, Ironic) {
    let ironic: Ironic = super::stored(crate::ironic::example_manifest(
        "i", "2026.1", "repo", "2026.1", 1,
    ));
    let owner = Owner::of(crate::ironic::SERVICE, &ironic).expect("owner");
    (owner, ironic)
}

fn inputs() -> Inputs<'static> {
    Inputs {
        config_hash: "h",
        installed_release_annotation: Ironic::INSTALLED_RELEASE_ANNOTATION,
        registration_secrets: None,
    }
}

/// A fresh install's pass once its sync succeeded: the sync Job kept, every
/// workload applied.
fn fresh_install_decision(ironic: &Ironic) -> Decision {
    let model = ironic.model("i", &Peers::none());
    let sync = &Ironic::profile().db_sync[0];
    Decision {
        status: DesiredStatus {
            installed_release: "2026.1".into(),
            target_release: String::new(),
            phase: String::new(),
            phase_started_at: String::new(),
            rolling_workload: String::new(),
            conditions: Vec::new(),
            observed_generation: 1,
        },
        events: Vec::new(),
        jobs: vec![JobAction::Ensure {
            suffix: sync.suffix.into(),
            group: None,
            image: "repo:2026.1".into(),
            command: sync.command.clone(),
            spec_hash: "h".into(),
            backoff_limit: sync.backoff_limit(),
            fail_fast_exit_codes: sync.fail_fast_exit_codes.clone(),
        }],
        workloads: model
            .workload_ids()
            .into_iter()
            .map(|w| WorkloadAction::Apply {
                name: w.name,
                image: "repo:2026.1".into(),
                installed_release: "2026.1".into(),
                pin: None,
                stopped: false,
                partition: None,
            })
            .collect(),
        check_report: None,
        outcome: Outcome::Waiting,
    }
}

#[test]
fn every_job_and_workload_is_rendered_with_the_services_it_needs() {
    let (owner, ironic) = ironic();
    let model = ironic.model("i", &Peers::none());
    let decision = fresh_install_decision(&ironic);
    let desired = Desired::render(&owner, &model, &decision, &inputs()).expect("renders");
    assert_eq!(
        desired
            .jobs
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>(),
        ["db-sync"]
    );
    let conductor = desired.workload("i-conductor").expect("conductor");
    assert!(matches!(conductor.object, Workload::StatefulSet(_)));
    assert_eq!(
        conductor
            .headless
            .as_ref()
            .and_then(|s| s.metadata.name.as_deref()),
        Some("i-conductor")
    );
    assert!(conductor.api.is_none());
    let api = desired.workload("i-api").expect("api");
    assert!(matches!(api.object, Workload::Deployment(_)));
    assert!(api.headless.is_none());
    assert_eq!(
        api.api.as_ref().and_then(|s| s.metadata.name.as_deref()),
        Some("i")
    );
}

#[test]
fn a_child_that_cannot_be_rendered_fails_the_whole_set() {
    let (owner, ironic) = ironic();
    let model = ironic.model("i", &Peers::none());
    let mut decision = fresh_install_decision(&ironic);
    decision.jobs.push(JobAction::Ensure {
        suffix: "db-sync-cell9".into(),
        group: Some("cell9".into()),
        image: "repo:2026.1".into(),
        command: vec!["sync".into()],
        spec_hash: "h".into(),
        backoff_limit: 4,
        fail_fast_exit_codes: vec![],
    });
    let refused = Desired::render(&owner, &model, &decision, &inputs());
    assert!(
        refused.is_err_and(|e| e.to_string().contains("names a group the model lacks")),
        "a Job of an unknown group renders nothing"
    );
}
