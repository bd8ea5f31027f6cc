//! Glance for real: glance 32.0.0 (2026.1) upgraded to 33.0.0 (2026.2) with
//! every Job and API pod a real process on the process kubelet, against a
//! real MariaDB, images on a claim, while a client keeps uploading, listing
//! and downloading small images. Every image uploaded, before or during the
//! upgrade, must read back byte for byte afterwards. Needs root (the process
//! kubelet).

mod common;

use std::time::{Duration, SystemTime};

use anyhow::{Result, ensure};
use common::Harness;
use common::real::{
    STEADY_WINDOW, claim, clean_upgrade, install, latency_figures, no_failed_request,
    prepare_images, query, secret, stop_load, upgrade,
};
use ratchet_operator::service::OpenStackService;
use ratchet_services::glance::resource::EXAMPLE_CLAIM;
use ratchet_services::glance::v1alpha1::Glance;
use ratchet_testenv::backing;
use ratchet_testenv::load::glance::{self, GlanceLoadOptions};

const NAME: &str = "glance";
/// Cold: the first db sync and every uWSGI start on two cores.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(900);

#[tokio::test]
async fn a_real_glance_upgrades_under_load_with_no_failed_request_and_every_image_intact()
-> Result<()> {
    prepare_images(&["ratchet.test/glance:2026.1", "ratchet.test/glance:2026.2"]).await?;
    let h = Harness::start_real("glance-real").await?;
    let db = backing::mariadb(&h.client, h.name(), "mariadb", &["glance"]).await?;
    secret(&h, "glance-db", "connection", db.mysql_url("glance")).await?;
    claim(&h, EXAMPLE_CLAIM).await?;

    let example = Glance::example(NAME, "2026.1", "ratchet.test/glance", 2);
    let glance: Glance = serde_json::from_value(example.manifest)?;
    install(&h, &glance, NAME, "2026.1", INSTALL_TIMEOUT).await?;

    let netns = h.env.client_netns()?;
    let options = GlanceLoadOptions::default();
    let load = glance::start(&h.client, &netns, h.name(), NAME, options).await?;
    let steady_from = SystemTime::now();
    tokio::time::sleep(STEADY_WINDOW).await;
    let upgrade_from = SystemTime::now();
    let witness = upgrade::<Glance>(&h, NAME, "2026.2", UPGRADE_TIMEOUT).await?;
    let upgrade_to = SystemTime::now();

    let (outcome, tally) = stop_load(load, Duration::from_secs(60)).await?;
    let before_upgrade = outcome
        .uploaded
        .values()
        .filter(|i| i.at < upgrade_from)
        .count();
    eprintln!(
        "FIGURES requests={} failed={} {} images uploaded={} (before the upgrade \
         {before_upgrade})",
        tally.requests(),
        tally.failures().len(),
        latency_figures(&tally, steady_from, (upgrade_from, upgrade_to)),
        outcome.uploaded.len(),
    );
    no_failed_request(&tally, 100)?;
    ensure!(before_upgrade > 0, "no image uploaded before the upgrade");
    ensure!(
        outcome.damaged_after.is_empty(),
        "images not intact at 2026.2: {:#?}",
        outcome.damaged_after
    );
    clean_upgrade::<Glance>(&h, &witness, NAME).await?;

    // Glance's own rows agree: every uploaded image active, with its size.
    let active = query(
        &netns,
        &db,
        "glance",
        "SELECT COUNT(*) FROM images WHERE deleted = 0 AND status = 'active'",
    )
    .await?;
    ensure!(
        active.trim() == outcome.uploaded.len().to_string(),
        "active image rows {active:?}, uploaded {}",
        outcome.uploaded.len()
    );
    h.finish().await;
    Ok(())
}
