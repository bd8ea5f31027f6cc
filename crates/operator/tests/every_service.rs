//! The same life for every registered service, on the simulated kubelet: its
//! example resource installs and settles, a one-release step runs the
//! service's phases in order, each phase Job once and each event once, and
//! settles at the target with its key Secrets (if any) untouched. A service
//! added to the registry gets this test without writing it.

mod common;

use ratchet_operator::service::peers::Peers;
use std::collections::BTreeMap;

use anyhow::{Result, ensure};
use common::{Harness, TIMEOUT};
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use ratchet_operator::registry::ServiceFn;
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::plan::start_patch;
use ratchet_operator::testing::witness::{
    Witness, event_counts, expected_upgrade, settled, violations,
};
use ratchet_services::{Registry, Services};
use ratchet_testenv::wait::until;
use ratchet_testenv::{Behaviour, PodSelector};

const REPO: &str = "registry.invalid/openstack";

struct Upgrade<'a>(&'a Harness);

impl<'a> ServiceFn for Upgrade<'a> {
    type Output = BoxFuture<'a, Result<()>>;
    fn call<S: OpenStackService>(self) -> Self::Output {
        Box::pin(install_and_upgrade::<S>(self.0))
    }
}

/// The data of every Secret the resource `name` owns (its key Secrets), by
/// Secret name.
async fn key_secrets(h: &Harness, name: &str) -> Result<BTreeMap<String, String>> {
    let secrets = h.api::<Secret>().list(&Default::default()).await?.items;
    Ok(secrets
        .into_iter()
        .filter(|s| {
            s.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.name == name)
        })
        .map(|s| {
            let data = serde_json::to_string(&s.data).unwrap_or_default();
            (s.metadata.name.unwrap_or_default(), data)
        })
        .collect())
}

/// Every DaemonSet of resource `name` placed a ready pod on a node: a
/// per-node agent that no node can run would count as rolled out with none.
async fn per_node_agents_run(h: &Harness, name: &str) -> Result<()> {
    let sets = h.api::<DaemonSet>().list(&Default::default()).await?.items;
    for set in sets.iter().filter(|s| {
        s.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.name == name)
    }) {
        let status = set.status.clone().unwrap_or_default();
        ensure!(
            status.desired_number_scheduled > 0
                && status.number_ready == status.desired_number_scheduled,
            "{name}: DaemonSet {:?} runs {} ready pods on {} nodes",
            set.metadata.name,
            status.number_ready,
            status.desired_number_scheduled
        );
    }
    Ok(())
}

async fn install_and_upgrade<S: OpenStackService>(h: &Harness) -> Result<()> {
    let name = S::SERVICE;
    let example = S::example(name, "2026.1", &format!("{REPO}/{name}"), 1);
    let object: S = serde_json::from_value(example.manifest)?;
    // A check the profile reports exits as the real wrapper says it does.
    let profile = S::profile();
    let groups = object.model(name, &Peers::none()).job_group_names();
    for run in profile.phase_job_runs(&groups) {
        if let Some((exit, message)) = run.template.check_result(0) {
            h.env.scenarios().add(
                PodSelector::workload(h.name(), &format!("{name}-{}", run.key())),
                Behaviour::always_exit(exit, message),
            );
        }
    }
    let api: Api<S> = h.api::<S>();
    api.create(&PostParams::default(), &object).await?;
    until(
        &api,
        name,
        TIMEOUT,
        "settled at 2026.1",
        settled::<S>("2026.1"),
    )
    .await?;
    per_node_agents_run(h, name).await?;
    let keys = key_secrets(h, name).await?;
    let expected_keys = object.model(name, &Peers::none()).key_secrets.len();
    ensure!(
        keys.len() == expected_keys,
        "{name}: key Secrets {:?}, the model has {expected_keys}",
        keys.keys()
    );

    let witness = Witness::start::<S>(&h.client, h.name());
    let installed = api.get(name).await?;
    let patch = start_patch(&installed.spec_view(), "2026.2");
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    until(
        &api,
        name,
        TIMEOUT,
        "settled at 2026.2",
        settled::<S>("2026.2"),
    )
    .await?;

    let counts = event_counts(&h.client, h.name(), name).await?;
    let broken = violations(
        &witness.seen(),
        name,
        &expected_upgrade(&profile, &groups),
        &counts,
    );
    ensure!(broken.is_empty(), "{name}: {broken:?}");
    ensure!(
        key_secrets(h, name).await? == keys,
        "{name}: its key Secrets changed during the upgrade"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_service_installs_and_upgrades_one_release_by_its_profile() -> Result<()> {
    let h = Harness::start("every-service").await?;
    let upgrades = Services::services()
        .into_iter()
        .filter_map(|s| Services::with_service(s.service, Upgrade(&h)));
    for result in futures::future::join_all(upgrades).await {
        result?;
    }
    h.finish().await;
    Ok(())
}
