//! A configuration that reads another service's resource follows it, on the
//! simulated kubelet: a Nova registering in Neutron's Keystone turns
//! Neutron's notifications to Nova on (in the Nova's region) and Neutron's
//! pods roll to read them; the Nova deleted, they turn off again. No pass
//! polls for it: the Nova's watch wakes Neutron.

mod common;

use anyhow::{Result, ensure};
use common::{Harness, TIMEOUT};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DeleteParams, PostParams};
use ratchet_operator::labels::CONFIG_HASH;
use ratchet_operator::service::OpenStackService;
use ratchet_operator::testing::witness::settled;
use ratchet_services::keystone::v1alpha1::Keystone;
use ratchet_services::neutron::v1alpha1::Neutron;
use ratchet_services::nova::v1alpha1::Nova;
use ratchet_testenv::wait::{until, until_deleted};
use serde_json::json;

const REPO: &str = "registry.invalid/openstack";

/// The service user's password Secret `name`.
async fn password(h: &Harness, name: &str) -> Result<()> {
    let secret: Secret = serde_json::from_value(json!({
        "metadata": { "name": name },
        "stringData": { "password": "ratchet-test" },
    }))?;
    h.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

/// `S`'s example named `name`, authenticating through Keystone `keystone`.
fn in_cloud<S: OpenStackService>(name: &str, keystone: &str, region: &str) -> Result<S> {
    let mut manifest = S::example(name, "2026.1", &format!("{REPO}/{}", S::SERVICE), 1).manifest;
    manifest["spec"]["identity"] = json!({
        "keystone": keystone,
        "region": region,
        "password": { "secretName": format!("{name}-keystone"), "key": "password" },
    });
    Ok(serde_json::from_value(manifest)?)
}

fn notifies(config: &ConfigMap, on: bool) -> bool {
    let text = config
        .data
        .as_ref()
        .and_then(|d| d.get("neutron.conf"))
        .cloned()
        .unwrap_or_default();
    text.contains(&format!("notify_nova_on_port_data_changes = {on}\n"))
        && text.contains(&format!("notify_nova_on_port_status_changes = {on}\n"))
}

fn config_hash(deployment: &Deployment) -> Option<String> {
    deployment
        .spec
        .as_ref()?
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(CONFIG_HASH)
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neutron_notifies_the_nova_of_its_cloud_while_it_exists() -> Result<()> {
    let h = Harness::start("peers").await?;
    let keystone: Keystone = serde_json::from_value(
        Keystone::example("keystone", "2026.1", &format!("{REPO}/keystone"), 1).manifest,
    )?;
    h.api::<Keystone>()
        .create(&PostParams::default(), &keystone)
        .await?;
    password(&h, "neutron-keystone").await?;
    password(&h, "nova-keystone").await?;
    let neutrons = h.api::<Neutron>();
    neutrons
        .create(
            &PostParams::default(),
            &in_cloud::<Neutron>("neutron", "keystone", "RegionOne")?,
        )
        .await?;
    until(
        &neutrons,
        "neutron",
        TIMEOUT,
        "Neutron settled",
        settled::<Neutron>("2026.1"),
    )
    .await?;
    let configs = h.api::<ConfigMap>();
    let alone = configs.get("neutron-config").await?;
    ensure!(notifies(&alone, false), "no Nova, yet: {:?}", alone.data);
    let api = h.api::<Deployment>();
    let before = config_hash(&api.get("neutron-api").await?);

    let novas = h.api::<Nova>();
    novas
        .create(
            &PostParams::default(),
            &in_cloud::<Nova>("nova", "keystone", "RegionTwo")?,
        )
        .await?;
    let told = until(
        &configs,
        "neutron-config",
        TIMEOUT,
        "notifications on",
        |c| notifies(c, true),
    )
    .await?;
    let text = told
        .data
        .as_ref()
        .and_then(|d| d.get("neutron.conf"))
        .cloned()
        .unwrap_or_default();
    let nova_section = text.split("[nova]\n").nth(1).unwrap_or_default();
    let nova_section = nova_section.split("\n[").next().unwrap_or_default();
    ensure!(
        nova_section.contains("region_name = RegionTwo\n"),
        "[nova] looks Nova up in its region: {text}"
    );
    until(
        &api,
        "neutron-api",
        TIMEOUT,
        "the API rolled to read it",
        |d| config_hash(d) != before,
    )
    .await?;
    until(
        &neutrons,
        "neutron",
        TIMEOUT,
        "Neutron settled again",
        settled::<Neutron>("2026.1"),
    )
    .await?;

    novas.delete("nova", &DeleteParams::default()).await?;
    until_deleted(&novas, "nova", TIMEOUT).await?;
    until(
        &configs,
        "neutron-config",
        TIMEOUT,
        "notifications off",
        |c| notifies(c, false),
    )
    .await?;
    h.finish().await;
    Ok(())
}
