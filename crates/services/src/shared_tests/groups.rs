//! What the widened model renders: Job groups and a workload's own Secrets (a
//! Nova cell's database and bus) — the registry's rule that a per-group Job
//! has groups to run for, a group's Job, a workload with its own Secrets —
//! and a workload stopped for an offline step.

use ratchet_api::common::SecretKeyRef;
use ratchet_operator::registry::{Registry, ServiceFn};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::{ENV_JOB_GROUP, JobGroup, SecretEnv, ServiceModel};
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::render::{self, JobSpec, Owner, PodParams};
use serde_json::Value;

use crate::placement::v1alpha1::Placement;

/// Whether the service's profile has a per-group Job, and its example's groups.
struct GroupsOf;

impl ServiceFn for GroupsOf {
    type Output = (bool, Vec<String>);
    fn call<S: OpenStackService>(self) -> Self::Output {
        let profile = S::profile();
        let per_group = profile
            .db_sync
            .iter()
            .chain(profile.phases.iter().flat_map(|p| p.templates()))
            .any(|t| t.per_group);
        let example: S = super::stored(S::example(S::SERVICE, "2026.1", "repo", 1).manifest);
        (
            per_group,
            example.model(S::SERVICE, &Peers::none()).job_group_names(),
        )
    }
}

#[test]
fn every_service_with_a_per_group_job_declares_its_groups() {
    for name in crate::Services::service_names() {
        let (per_group, groups) =
            crate::Services::with_service(name, GroupsOf).expect("registered");
        assert!(
            !per_group || !groups.is_empty(),
            "{name}: a per-group Job with no group would never run"
        );
    }
}

fn secret(env: &str, name: &str) -> SecretEnv {
    SecretEnv {
        env: env.into(),
        source: SecretKeyRef {
            secret_name: name.into(),
            key: "connection".into(),
        },
    }
}

/// The Secret each variable of `container` comes from, and the plain values.
fn env_of(container: &Value) -> Vec<(String, String)> {
    container["env"]
        .as_array()
        .expect("env")
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap_or_default().to_string();
            let from = e["valueFrom"]["secretKeyRef"]["name"]
                .as_str()
                .or(e["value"].as_str())
                .unwrap_or_default()
                .to_string();
            (name, from)
        })
        .collect()
}

/// Placement's model with a group `cell1` and its API given its own
/// database, both in place of the model's `placement-db`.
fn widened() -> (Owner, ServiceModel) {
    let placement: Placement = super::stored(crate::placement::example_manifest(
        "p", "2026.1", "repo", "2026.1", 1,
    ));
    let owner = Owner::of(crate::placement::SERVICE, &placement).expect("owner");
    let mut model = placement.model("p", &Peers::none());
    let variable = model.secrets[0].env.clone();
    model.job_groups = vec![JobGroup {
        name: "cell1".into(),
        secrets: vec![secret(&variable, "cell1-db")],
    }];
    model.workloads[0].secrets = vec![secret(&variable, "api-db")];
    (owner, model)
}

#[test]
fn a_group_s_job_reads_its_group_s_secrets_in_place_of_the_model_s() {
    let (owner, model) = widened();
    let variable = model.secrets[0].env.clone();
    let command = vec!["sync".to_string()];
    let job = |group| {
        let job = render::job(
            &owner,
            &model,
            &JobSpec {
                suffix: "db-sync-cell1",
                image: "placement:2026.1",
                command: &command,
                spec_hash: "h",
                backoff_limit: 4,
                fail_fast_exit_codes: &[],
                secrets: None,
                group,
            },
        )
        .expect("renders");
        let job = serde_json::to_value(job).expect("json");
        env_of(&job["spec"]["template"]["spec"]["containers"][0])
    };
    let grouped = job(model.job_groups.first());
    assert!(grouped.contains(&(variable.clone(), "cell1-db".into())));
    assert!(grouped.contains(&(ENV_JOB_GROUP.into(), "cell1".into())));
    assert_eq!(
        grouped.iter().filter(|(name, _)| *name == variable).count(),
        1,
        "the model's database is replaced, not set twice: {grouped:?}"
    );
    let plain = job(None);
    assert!(plain.contains(&(variable, "placement-db".into())));
    assert!(!plain.iter().any(|(name, _)| name == ENV_JOB_GROUP));
}

/// The widened model's API rendered, serving or `stopped`.
fn api(owner: &Owner, model: &ServiceModel, stopped: bool) -> Value {
    let params = PodParams {
        image: "placement:2026.1",
        installed_release: "2026.1",
        pin: None,
        config_hash: "h",
        installed_release_annotation: Placement::INSTALLED_RELEASE_ANNOTATION,
        stopped,
        partition: None,
    };
    serde_json::to_value(
        render::workload(owner, model, &model.workloads[0], &params).expect("renders"),
    )
    .expect("json")
}

#[test]
fn a_workload_with_its_own_secrets_reads_them_and_they_wake_the_resource() {
    let (owner, model) = widened();
    let variable = model.secrets[0].env.clone();
    let api = api(&owner, &model, false);
    let env = env_of(&api["spec"]["template"]["spec"]["containers"][0]);
    assert!(
        env.contains(&(variable.clone(), "api-db".into())),
        "{env:?}"
    );
    assert_eq!(env.iter().filter(|(name, _)| *name == variable).count(), 1);
    // Every Secret any pod or Job reads is watched and checked for presence.
    let named: Vec<&str> = model
        .all_secrets()
        .map(|s| s.source.secret_name.as_str())
        .collect();
    for secret in ["placement-db", "cell1-db", "api-db"] {
        assert!(named.contains(&secret), "{secret} not among {named:?}");
    }
}

#[test]
fn a_workload_stopped_for_an_offline_step_renders_no_replica_and_a_new_template_hash() {
    let (owner, model) = widened();
    let (serving, stopped) = (api(&owner, &model, false), api(&owner, &model, true));
    assert_eq!(serving["spec"]["replicas"], 1);
    assert_eq!(stopped["spec"]["replicas"], 0);
    // The apply is skipped only on an unchanged hash: stopping must change it.
    let hash = |object: &Value| {
        object["metadata"]["annotations"][ratchet_operator::labels::TEMPLATE_HASH].clone()
    };
    assert_ne!(hash(&serving), hash(&stopped));
    assert_eq!(
        serving["spec"]["template"], stopped["spec"]["template"],
        "the pods' template is the same: they come back as they were"
    );
}
