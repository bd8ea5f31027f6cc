//! Placement for real: openstack-placement 15.0.0 (2026.1) upgraded to
//! 16.0.0 (2026.2) with every Job and API pod a real process on the process
//! kubelet, against a real MariaDB, authenticating every request through a
//! real Keystone (found by its Service name; tokens cached in memcached),
//! while a client logged in as Nova's services are (the `service` role in
//! project `service`) keeps creating allocations against resource providers,
//! reading them back and deleting some. Every allocation acknowledged must
//! read back afterwards, every deleted one stay gone. Needs root (the process
//! kubelet).

mod common;

use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, ensure};
use common::Harness;
use common::real::{
    STEADY_WINDOW, clean_upgrade, installed, keystone_beside, latency_figures, no_failed_request,
    prepare_images, registered, rows, secret, stop_load, upgrade,
};
use kube::api::PostParams;
use ratchet_operator::service::OpenStackService;
use ratchet_services::keystone::resource::authenticating;
use ratchet_services::keystone::v1alpha1::Keystone;
use ratchet_services::placement::model::API_PORT;
use ratchet_services::placement::v1alpha1::Placement;
use ratchet_testenv::backing;
use ratchet_testenv::load::placement::{self, PlacementLoadOptions};
use ratchet_testenv::load::{self, cluster_address};

const NAME: &str = "placement";
const KEYSTONE: &str = "keystone";
const ADMIN_PASSWORD: &str = "ratchet-admin-test";
const PLACEMENT_PASSWORD: &str = "ratchet-placement-test";
/// Cold: the first db syncs, Keystone's bootstrap and every uWSGI start on two cores.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(900);
/// The schema's one alembic head in both releases (16.0.0 adds no migration).
const SCHEMA_HEAD: &str = "a082b8bb98d0";

#[tokio::test]
async fn a_real_placement_upgrades_under_load_with_no_failed_request_and_every_allocation_kept()
-> Result<()> {
    prepare_images(&[
        "ratchet.test/placement:2026.1",
        "ratchet.test/placement:2026.2",
        "ratchet.test/keystone:2026.1",
    ])
    .await?;
    let h = Harness::start_real("placement-real").await?;
    let db = backing::mariadb(&h.client, h.name(), "mariadb", &[KEYSTONE, NAME]).await?;
    secret(&h, "placement-db", "connection", db.mysql_url(NAME)).await?;
    secret(
        &h,
        "placement-keystone",
        "password",
        PLACEMENT_PASSWORD.into(),
    )
    .await?;

    // Keystone and Placement at once: Placement's registration is retried
    // until Keystone serves.
    let cache = keystone_beside(&h, KEYSTONE, &db, ADMIN_PASSWORD).await?;
    let example = Placement::real_example(NAME, "2026.1", "ratchet.test/placement")
        .context("Placement has a real example")?;
    let manifest = authenticating(
        example.manifest,
        KEYSTONE,
        "placement-keystone",
        &cache.memcached_server(),
    );
    let placement: Placement = serde_json::from_value(manifest)?;
    h.api::<Placement>()
        .create(&PostParams::default(), &placement)
        .await?;
    installed::<Keystone>(&h, KEYSTONE, "2026.1", INSTALL_TIMEOUT).await?;
    installed::<Placement>(&h, NAME, "2026.1", INSTALL_TIMEOUT).await?;

    let netns = h.env.client_netns()?;
    let keystone_addr = cluster_address(&h.client, h.name(), KEYSTONE, "api").await?;
    let url = format!("http://{NAME}.{}.svc:{API_PORT}", h.name());
    registered(&netns, keystone_addr, ADMIN_PASSWORD, &[("placement", url)]).await?;
    // No token, no providers: Placement asks Keystone about every request.
    let api = cluster_address(&h.client, h.name(), NAME, "api").await?;
    let (status, _) = netns.http_get(api, "/resource_providers").await??;
    ensure!(status == 401, "a request without a token got {status}");

    let login = load::login_for(NAME, &netns, keystone_addr, ADMIN_PASSWORD)
        .await?
        .context("Placement's client logs in")?;
    let options = PlacementLoadOptions {
        login: Some(login),
        ..PlacementLoadOptions::default()
    };
    let load = placement::start(&h.client, &netns, h.name(), NAME, options).await?;
    let steady_from = SystemTime::now();
    tokio::time::sleep(STEADY_WINDOW).await;
    let upgrade_from = SystemTime::now();
    let witness = upgrade::<Placement>(&h, NAME, "2026.2", UPGRADE_TIMEOUT).await?;
    let upgrade_to = SystemTime::now();

    let (outcome, tally) = stop_load(load, Duration::from_secs(30)).await?;
    eprintln!(
        "FIGURES requests={} failed={} {} providers={} allocations kept={} deleted={} upgrade took {:.0}s",
        tally.requests(),
        tally.failures().len(),
        latency_figures(&tally, steady_from, (upgrade_from, upgrade_to)),
        outcome.providers.len(),
        outcome.allocated.len(),
        outcome.deleted.len(),
        upgrade_to
            .duration_since(upgrade_from)
            .unwrap_or_default()
            .as_secs_f64(),
    );
    no_failed_request(&tally, 100)?;
    ensure!(
        outcome.lost_after.is_empty(),
        "allocations lost: {:#?}",
        outcome.lost_after
    );
    ensure!(
        !outcome.deleted.is_empty() && outcome.allocated.len() > 10,
        "the load made too little: {} kept, {} deleted",
        outcome.allocated.len(),
        outcome.deleted.len()
    );
    clean_upgrade::<Placement>(&h, &witness, NAME).await?;

    // Placement's own rows agree: one consumer per kept allocation, and the
    // schema at the one head both releases have.
    let consumers = rows(&netns, &db, NAME, "SELECT COUNT(*) FROM consumers").await?;
    ensure!(
        consumers == [vec![outcome.allocated.len().to_string()]],
        "consumer rows {consumers:?}, allocations kept {}",
        outcome.allocated.len()
    );
    let heads = rows(&netns, &db, NAME, "SELECT version_num FROM alembic_version").await?;
    ensure!(
        heads == [vec![SCHEMA_HEAD.to_string()]],
        "alembic heads after the upgrade: {heads:?}"
    );
    h.finish().await;
    Ok(())
}
