//! Keystone for real: keystone 29.1.0 (2026.1) upgraded to 30.0.0 (2026.2)
//! with every Job and API pod a real process on the process kubelet, against a
//! real MariaDB, while a client keeps issuing and validating tokens and
//! creating projects. Tokens issued by the old release must validate on the
//! new one (both read the key Secrets Ratchet made once). Needs root (the
//! process kubelet).

mod common;

use std::time::{Duration, SystemTime};

use anyhow::{Result, ensure};
use common::Harness;
use common::real::{
    STEADY_WINDOW, clean_upgrade, install, latency_figures, no_failed_request, prepare_images,
    rows, secret, stop_load, upgrade,
};
use ratchet_operator::service::OpenStackService;
use ratchet_services::keystone::v1alpha1::Keystone;
use ratchet_testenv::backing;
use ratchet_testenv::load::keystone::{self, KeystoneLoadOptions};

const NAME: &str = "keystone";
const ADMIN_PASSWORD: &str = "ratchet-admin-test";
/// Cold: the first db sync, bootstrap and every uWSGI start on two cores.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(900);

#[tokio::test]
async fn a_real_keystone_upgrades_under_load_with_no_failed_request_and_every_token_valid()
-> Result<()> {
    prepare_images(&[
        "ratchet.test/keystone:2026.1",
        "ratchet.test/keystone:2026.2",
    ])
    .await?;
    let h = Harness::start_real("keystone-real").await?;
    let db = backing::mariadb(&h.client, h.name(), "mariadb", &["keystone"]).await?;
    secret(&h, "keystone-db", "connection", db.mysql_url("keystone")).await?;
    secret(&h, "keystone-admin", "password", ADMIN_PASSWORD.into()).await?;

    let example = Keystone::example(NAME, "2026.1", "ratchet.test/keystone", 2);
    let keystone: Keystone = serde_json::from_value(example.manifest)?;
    install(&h, &keystone, NAME, "2026.1", INSTALL_TIMEOUT).await?;

    let netns = h.env.client_netns()?;
    let options = KeystoneLoadOptions {
        admin_password: ADMIN_PASSWORD.into(),
        pause: keystone::DEFAULT_PAUSE,
    };
    let load = keystone::start(&h.client, &netns, h.name(), NAME, options).await?;
    let steady_from = SystemTime::now();
    tokio::time::sleep(STEADY_WINDOW).await;
    let upgrade_from = SystemTime::now();
    let witness = upgrade::<Keystone>(&h, NAME, "2026.2", UPGRADE_TIMEOUT).await?;
    let upgrade_to = SystemTime::now();

    let (outcome, tally) = stop_load(load, Duration::from_secs(60)).await?;
    let before_upgrade = outcome
        .issued
        .iter()
        .filter(|t| t.at < upgrade_from)
        .count();
    eprintln!(
        "FIGURES requests={} failed={} {} tokens issued={} (before the upgrade \
         {before_upgrade}) projects created={}",
        tally.requests(),
        tally.failures().len(),
        latency_figures(&tally, steady_from, (upgrade_from, upgrade_to)),
        outcome.issued.len(),
        outcome.created_projects.len(),
    );
    no_failed_request(&tally, 100)?;
    ensure!(before_upgrade > 0, "no token issued before the upgrade");
    ensure!(
        outcome.invalid_after.is_empty(),
        "tokens that no longer validate on 2026.2: {:#?}",
        outcome.invalid_after
    );
    let lost: Vec<_> = outcome
        .created_projects
        .difference(&outcome.listed_projects)
        .collect();
    ensure!(
        !outcome.created_projects.is_empty() && lost.is_empty(),
        "projects acknowledged but not listed afterwards: {lost:?} (created {})",
        outcome.created_projects.len()
    );
    clean_upgrade::<Keystone>(&h, &witness, NAME).await?;

    // The schema is at 30.0.0's heads, as its contract Job's check said: one
    // alembic head per branch (expand and contract), each stamped once.
    let heads = rows(
        &netns,
        &db,
        "keystone",
        "SELECT version_num FROM alembic_version ORDER BY version_num",
    )
    .await?;
    ensure!(
        heads.len() == 2,
        "alembic heads after the upgrade: {heads:?}"
    );
    h.finish().await;
    Ok(())
}
