//! The local control plane is the real thing: real ReplicaSet rollouts, the real
//! Job controller's backoff limit, the real garbage collector, CRDs stored in a
//! real etcd. All tests share one cluster and isolate by namespace.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams,
};
use kube::{Api, Client};
use ratchet_testenv::wait::{until, until_deleted};
use ratchet_testenv::{Behaviour, PodSelector, TestEnv, TestNamespace};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(60);

async fn setup(prefix: &str) -> Result<(&'static TestEnv, Client, TestNamespace)> {
    let env = TestEnv::shared()?;
    let client = env.client()?;
    let ns = env.namespace(&client, prefix).await?;
    Ok((env, client, ns))
}

fn deployment(name: &str, replicas: i32, image: &str) -> Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 1, "maxUnavailable": 0 } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": "main", "image": image }] }
            }
        }
    }))?)
}

fn job(name: &str, backoff_limit: i32) -> Result<Job> {
    Ok(serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "backoffLimit": backoff_limit,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{ "name": "main", "image": "registry.invalid/tool:1" }]
                }
            }
        }
    }))?)
}

fn job_condition(job: &Job, kind: &str) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == kind && c.status == "True"))
}

fn fully_rolled_out(d: &Deployment, replicas: i32) -> bool {
    let generation = d.metadata.generation.unwrap_or_default();
    d.status.as_ref().is_some_and(|s| {
        s.observed_generation == Some(generation)
            && s.updated_replicas == Some(replicas)
            && s.ready_replicas == Some(replicas)
            && s.available_replicas == Some(replicas)
            && s.replicas == Some(replicas)
    })
}

#[tokio::test]
async fn deployment_rolls_through_replicasets_within_surge_limits() -> Result<()> {
    let (env, client, ns) = setup("rollout").await?;
    // Pods take a moment to become Ready, so the rollout has visible steps.
    env.scenarios().add(
        PodSelector::namespace(ns.name()),
        Behaviour::default().with_ready_delay(Duration::from_millis(300)),
    );
    let api: Api<Deployment> = Api::namespaced(client.clone(), ns.name());
    api.create(&PostParams::default(), &deployment("web", 3, "web:1")?)
        .await?;
    until(&api, "web", TIMEOUT, "initial rollout", |d| {
        fully_rolled_out(d, 3)
    })
    .await?;

    let patch = json!({ "spec": { "template": { "spec": { "containers": [{ "name": "main", "image": "web:2" }] } } } });
    let patched = api
        .patch("web", &PatchParams::default(), &Patch::Strategic(&patch))
        .await?;
    let new_generation = patched.metadata.generation.context("generation")?;

    // maxSurge 1: the ReplicaSets never ask for more than 4 pods together. Read
    // from their specs, polled beside the watch: the Deployment's
    // status.replicas sums what each ReplicaSet last observed, which may still
    // count pods of a scale-down (seen: 5 under a loaded machine).
    let sets: Api<k8s_openapi::api::apps::v1::ReplicaSet> =
        Api::namespaced(client.clone(), ns.name());
    let surge_watch = {
        let sets = sets.clone();
        tokio::spawn(async move {
            let mut most = 0;
            loop {
                if let Ok(list) = sets.list(&ListParams::default().labels("app=web")).await {
                    let asked: i32 = list
                        .items
                        .iter()
                        .filter_map(|rs| rs.spec.as_ref().and_then(|s| s.replicas))
                        .sum();
                    most = most.max(asked);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                if most > 4 {
                    return most;
                }
            }
        })
    };
    let mut updated_seen = Vec::new();
    let mut violations = Vec::new();
    until(&api, "web", TIMEOUT, "second rollout", |d| {
        let Some(s) = d.status.as_ref() else {
            return false;
        };
        // Until observedGeneration catches up, the status describes the old template.
        if s.observed_generation >= Some(new_generation) {
            let updated = s.updated_replicas.unwrap_or(0);
            if updated_seen.last() != Some(&updated) {
                updated_seen.push(updated);
            }
            // maxUnavailable 0: never fewer than 3 available.
            if s.available_replicas.unwrap_or(0) < 3 {
                violations.push(format!("{s:?}"));
            }
        }
        fully_rolled_out(d, 3)
    })
    .await?;
    if surge_watch.is_finished() {
        let most = surge_watch.await?;
        violations.push(format!("the ReplicaSets asked for {most} pods together"));
    } else {
        surge_watch.abort();
    }
    ensure!(
        violations.is_empty(),
        "surge limits violated: {violations:#?}"
    );
    ensure!(
        updated_seen.windows(2).all(|w| w[0] <= w[1]) && updated_seen.last() == Some(&3),
        "updatedReplicas should climb to 3, saw {updated_seen:?}"
    );
    ensure!(
        updated_seen.len() >= 3,
        "the rollout should pass through intermediate steps, saw {updated_seen:?}"
    );

    // Two real ReplicaSets: the old one scaled to zero, the new one at 3.
    let mut replicas: Vec<i32> = sets
        .list(&ListParams::default().labels("app=web"))
        .await?
        .items
        .iter()
        .map(|rs| rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(-1))
        .collect();
    replicas.sort();
    ensure!(replicas == vec![0, 3], "replica sets: {replicas:?}");
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn failing_job_hits_backoff_limit_after_five_pods() -> Result<()> {
    let (env, client, ns) = setup("job-fail").await?;
    env.scenarios().add(
        PodSelector::workload(ns.name(), "always-fails"),
        Behaviour::always_exit(3, "exit three"),
    );
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    jobs.create(&PostParams::default(), &job("always-fails", 4)?)
        .await?;
    let failed = until(
        &jobs,
        "always-fails",
        Duration::from_secs(120),
        "Job Failed",
        |j| job_condition(j, "Failed"),
    )
    .await?;
    let status = failed.status.context("status")?;
    ensure!(status.failed == Some(5), "failed pods: {:?}", status.failed);
    let reason = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Failed")
        .and_then(|c| c.reason);
    ensure!(
        reason.as_deref() == Some("BackoffLimitExceeded"),
        "reason {reason:?}"
    );

    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let listed = pods
        .list(&ListParams::default().labels("job-name=always-fails"))
        .await?;
    ensure!(listed.items.len() == 5, "pods: {}", listed.items.len());
    for pod in &listed.items {
        let terminated = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|cs| cs.first())
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.terminated.as_ref())
            .context("terminated state")?;
        ensure!(terminated.exit_code == 3);
        ensure!(terminated.message.as_deref() == Some("exit three"));
    }
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn successful_job_completes_with_readable_termination_message() -> Result<()> {
    let (env, client, ns) = setup("job-ok").await?;
    env.scenarios().add(
        PodSelector::workload(ns.name(), "works"),
        Behaviour::succeed_with_message("check exit 0"),
    );
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    jobs.create(&PostParams::default(), &job("works", 4)?)
        .await?;
    until(&jobs, "works", TIMEOUT, "Job Complete", |j| {
        job_condition(j, "Complete")
    })
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let listed = pods
        .list(&ListParams::default().labels("job-name=works"))
        .await?;
    let message = listed
        .items
        .first()
        .and_then(|p| p.status.as_ref())
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref())
        .and_then(|t| t.message.clone());
    ensure!(
        message.as_deref() == Some("check exit 0"),
        "message {message:?}"
    );
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn job_that_fails_twice_then_succeeds_completes() -> Result<()> {
    let (env, client, ns) = setup("job-flaky").await?;
    env.scenarios().add(
        PodSelector::workload(ns.name(), "flaky"),
        Behaviour::fail_times(2, 1, "transient"),
    );
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    jobs.create(&PostParams::default(), &job("flaky", 4)?)
        .await?;
    let done = until(&jobs, "flaky", TIMEOUT, "Job Complete", |j| {
        job_condition(j, "Complete")
    })
    .await?;
    let status = done.status.context("status")?;
    ensure!(
        status.failed == Some(2) && status.succeeded == Some(1),
        "{status:?}"
    );
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn deleting_a_job_in_background_removes_its_pods() -> Result<()> {
    let (env, client, ns) = setup("job-gc").await?;
    env.scenarios().add(
        PodSelector::workload(ns.name(), "forever"),
        Behaviour::hang(),
    );
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    jobs.create(&PostParams::default(), &job("forever", 4)?)
        .await?;
    until(&jobs, "forever", TIMEOUT, "Job pod running", |j| {
        j.status.as_ref().and_then(|s| s.active) == Some(1)
    })
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let pod_name = pods
        .list(&ListParams::default().labels("job-name=forever"))
        .await?
        .items
        .first()
        .and_then(|p| p.metadata.name.clone())
        .context("job pod")?;
    jobs.delete("forever", &DeleteParams::background()).await?;
    until_deleted(&jobs, "forever", TIMEOUT).await?;
    until_deleted(&pods, &pod_name, TIMEOUT).await?;
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn hanging_workload_never_becomes_ready() -> Result<()> {
    let (env, client, ns) = setup("hang").await?;
    env.scenarios()
        .add(PodSelector::workload(ns.name(), "stuck"), Behaviour::hang());
    let api: Api<Deployment> = Api::namespaced(client.clone(), ns.name());
    api.create(&PostParams::default(), &deployment("stuck", 1, "stuck:1")?)
        .await?;
    let outcome = until(
        &api,
        "stuck",
        Duration::from_secs(3),
        "ready replica",
        |d| {
            d.status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0)
                > 0
        },
    )
    .await;
    ensure!(outcome.is_err(), "a hanging pod became ready");
    // It is running, just never Ready.
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let listed = pods
        .list(&ListParams::default().labels("app=stuck"))
        .await?;
    let pod = listed.items.first().context("pod")?;
    let status = pod.status.as_ref().context("pod status")?;
    ensure!(
        status.phase.as_deref() == Some("Running"),
        "{:?}",
        status.phase
    );
    let ready = status
        .conditions
        .as_ref()
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .map(|c| c.status.clone());
    ensure!(ready.as_deref() == Some("False"), "{ready:?}");
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn crd_with_two_versions_stores_objects_in_the_storage_version() -> Result<()> {
    let (env, client, ns) = setup("crd").await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let schema = json!({
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": { "type": "object", "properties": { "size": { "type": "integer" } } },
                "status": { "type": "object", "properties": { "phase": { "type": "string" } } }
            }
        }
    });
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": { "name": "widgets.testenv.ratchet.c5c3.io" },
        "spec": {
            "group": "testenv.ratchet.c5c3.io",
            "scope": "Namespaced",
            "names": { "plural": "widgets", "singular": "widget", "kind": "Widget" },
            "versions": [
                { "name": "v1alpha1", "served": true, "storage": true, "schema": schema, "subresources": { "status": {} } },
                { "name": "v1beta1", "served": true, "storage": false, "schema": schema, "subresources": { "status": {} } }
            ]
        }
    }))?;
    crds.create(&PostParams::default(), &crd).await?;
    let established = until(
        &crds,
        "widgets.testenv.ratchet.c5c3.io",
        TIMEOUT,
        "CRD Established",
        |c| {
            c.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
        },
    )
    .await?;
    let stored = established
        .status
        .and_then(|s| s.stored_versions)
        .unwrap_or_default();
    ensure!(
        stored == vec!["v1alpha1".to_string()],
        "storedVersions {stored:?}"
    );

    // Written through v1beta1, stored as v1alpha1.
    let gvk = GroupVersionKind::gvk("testenv.ratchet.c5c3.io", "v1beta1", "Widget");
    let beta: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns.name(), &ApiResource::from_gvk(&gvk));
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "testenv.ratchet.c5c3.io/v1beta1",
        "kind": "Widget",
        "metadata": { "name": "w1" },
        "spec": { "size": 3 }
    }))?;
    beta.create(&PostParams::default(), &obj).await?;
    let status = json!({ "status": { "phase": "Ready" } });
    let updated = beta
        .patch_status("w1", &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    ensure!(
        updated.data["status"]["phase"] == "Ready",
        "status subresource: {:?}",
        updated.data
    );

    let key = format!("/registry/testenv.ratchet.c5c3.io/widgets/{}/w1", ns.name());
    let raw = env.etcd()?.get(&key).await?.context("object in etcd")?;
    ensure!(
        raw.json_api_version().as_deref() == Some("testenv.ratchet.c5c3.io/v1alpha1"),
        "stored as {:?}",
        raw.json_api_version()
    );
    let listed = env
        .etcd()?
        .list_prefix(&format!(
            "/registry/testenv.ratchet.c5c3.io/widgets/{}/",
            ns.name()
        ))
        .await?;
    ensure!(listed.len() == 1, "listed {}", listed.len());
    ns.cleanup().await;
    Ok(())
}
