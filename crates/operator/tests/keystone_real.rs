//! Keystone for real: keystone 29.1.0 (2026.1) upgraded to 30.0.0 (2026.2)
//! with every Job and API pod a real process on the process kubelet, against a
//! real MariaDB, while a client keeps issuing and validating tokens and
//! creating projects. Tokens issued by the old release must validate on the
//! new one (both read the key Secrets Ratchet made once). Needs root (the
//! process kubelet).

mod common;

use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, ensure};
use common::Harness;
use common::real::{STEADY_WINDOW, percentile, prepare_images, rows, secret};
use kube::api::{Patch, PatchParams, PostParams};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::plan::start_patch;
use ratchet_operator::testing::witness::{
    Witness, event_counts, expected_upgrade, settled, violations,
};
use ratchet_services::keystone::v1alpha1::Keystone;
use ratchet_testenv::backing;
use ratchet_testenv::load::keystone::{self, KeystoneLoadOptions};
use ratchet_testenv::wait::until;

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
    let keystones = h.api::<Keystone>();
    keystones.create(&PostParams::default(), &keystone).await?;
    until(
        &keystones,
        NAME,
        INSTALL_TIMEOUT,
        "installed at 2026.1",
        settled::<Keystone>("2026.1"),
    )
    .await
    .context("install")?;

    let netns = h.env.client_netns()?;
    let options = KeystoneLoadOptions {
        admin_password: ADMIN_PASSWORD.into(),
        pause: Duration::from_millis(200),
    };
    let load = keystone::start(&h.client, &netns, h.name(), NAME, options).await?;
    let steady_from = SystemTime::now();
    tokio::time::sleep(STEADY_WINDOW).await;
    let upgrade_from = SystemTime::now();

    let witness = Witness::start::<Keystone>(&h.client, h.name());
    let installed = keystones.get(NAME).await?;
    let patch = start_patch(&installed.spec_view(), "2026.2");
    keystones
        .patch(NAME, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    until(
        &keystones,
        NAME,
        UPGRADE_TIMEOUT,
        "upgraded to 2026.2 and rolled out",
        settled::<Keystone>("2026.2"),
    )
    .await
    .context("upgrade")?;
    let upgrade_to = SystemTime::now();

    let tally = load.tally();
    let outcome = load.stop(Duration::from_secs(60)).await?;
    let tally = tally
        .lock()
        .map_err(|_| anyhow::anyhow!("tally poisoned"))?
        .clone();
    let steady = tally.latencies_ms(steady_from, upgrade_from);
    let during = tally.latencies_ms(upgrade_from, upgrade_to);
    let before_upgrade = outcome
        .issued
        .iter()
        .filter(|t| t.at < upgrade_from)
        .count();
    eprintln!(
        "FIGURES requests={} failed={} steady p50={:.1}ms p99={:.1}ms upgrade p50={:.1}ms \
         p99={:.1}ms tokens issued={} (before the upgrade {before_upgrade}) projects created={}",
        tally.requests(),
        tally.failures().len(),
        percentile(steady.clone(), 0.5),
        percentile(steady, 0.99),
        percentile(during.clone(), 0.5),
        percentile(during, 0.99),
        outcome.issued.len(),
        outcome.created_projects.len(),
    );
    let failures = tally.failures();
    ensure!(
        failures.is_empty(),
        "{} of {} requests failed: {:#?}",
        failures.len(),
        tally.requests(),
        failures.iter().take(20).collect::<Vec<_>>(),
    );
    ensure!(
        tally.requests() > 100 && before_upgrade > 0,
        "the load made only {} requests ({before_upgrade} tokens before the upgrade)",
        tally.requests()
    );
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

    let counts = event_counts(&h.client, h.name(), NAME).await?;
    let broken = violations(
        &witness.seen(),
        NAME,
        &expected_upgrade(&Keystone::profile()),
        &counts,
    );
    ensure!(broken.is_empty(), "the upgrade broke the rules: {broken:?}");

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
