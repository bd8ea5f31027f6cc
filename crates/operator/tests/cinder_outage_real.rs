//! A real Cinder upgrade meets a stopped database: the real `cinder-manage db
//! sync` of the expand Job fails every attempt, Ratchet reports `ExpandFailed`
//! (condition and one Warning) and moves nothing; once the database is back,
//! the recovery docs/upgrades.md gives (delete the failed Job) completes the
//! upgrade, and every volume made before is still there. Needs root (the
//! process kubelet).

mod common;

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use common::real::{install, log_lines_naming, prepare_images, rows, stop_load, until_requests};
use common::real_cinder::{self, IMAGES, NAME, manifest};
use common::{Harness, condition};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{DeleteParams, Patch, PatchParams};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::plan::start_patch;
use ratchet_operator::testing::witness::settled;
use ratchet_services::cinder::resource::FAKE_DRIVER;
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_testenv::load::cinder::{self, CinderLoadOptions};
use ratchet_testenv::wait::until;
use serde_json::json;

const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
/// Five attempts of the expand Job and the Job controller's back-off between
/// them (10, 20, 40 and 80 s).
const FAIL_TIMEOUT: Duration = Duration::from_secs(600);
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(900);

/// The volumes the database holds: (id, status), by id.
async fn volumes(h: &Harness, db: &ratchet_testenv::backing::Backing) -> Result<Vec<Vec<String>>> {
    let netns = h.env.client_netns()?;
    rows(
        &netns,
        db,
        "cinder",
        "SELECT id, status FROM volumes WHERE deleted = 0 ORDER BY id",
    )
    .await
}

#[tokio::test]
async fn a_stopped_database_fails_the_expand_job_and_the_documented_recovery_completes_the_upgrade()
-> Result<()> {
    prepare_images(&IMAGES).await?;
    let h = Harness::start_real("cinder-outage").await?;
    // A smaller Cinder than the load test's; oslo.db gives up on an absent
    // database after one attempt and a second (its default is ten attempts
    // ten seconds apart, which would make each Job attempt last 100 s).
    let mut cinder = manifest("2026.1")?;
    cinder["spec"]["api"] = json!({ "replicas": 1 });
    cinder["spec"]["scheduler"] = json!({ "replicas": 1 });
    cinder["spec"]["volumeBackends"] = json!([
        { "name": "fake-a", "options": { "volume_driver": FAKE_DRIVER } },
    ]);
    let db = real_cinder::backing(&h, &cinder).await?;
    cinder["spec"]["extraConfig"]["database"] =
        json!({ "max_retries": "1", "retry_interval": "1" });
    let cinder: Cinder = serde_json::from_value(cinder)?;
    install(&h, &cinder, NAME, "2026.1", INSTALL_TIMEOUT).await?;

    // Volumes made through the API before the outage.
    let netns = h.env.client_netns()?;
    let load = cinder::start(
        &h.client,
        &netns,
        h.name(),
        NAME,
        CinderLoadOptions {
            backup_every: None,
            ..CinderLoadOptions::default()
        },
    )
    .await?;
    let cinders = h.api::<Cinder>();
    // A round creates a volume and lists them: some dozens of requests make
    // a handful of volumes, kept or deleted in turn.
    until_requests(&load.tally(), 40, Duration::from_secs(120)).await?;
    let (outcome, tally) = stop_load(load, Duration::from_secs(60)).await?;
    ensure!(
        tally.failures().is_empty() && !outcome.kept.is_empty(),
        "before the outage: {:?} failed, kept {:?}",
        tally.failures(),
        outcome.kept
    );
    let before = volumes(&h, &db).await?;

    db.pause(&h.client, &h.env.pods_dir(h.name())?).await?;
    let installed = cinders.get(NAME).await?;
    let patch = start_patch(&installed.spec_view(), "2026.2");
    cinders
        .patch(NAME, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let failed = until(
        &cinders,
        NAME,
        FAIL_TIMEOUT,
        "DatabaseReady ExpandFailed",
        |c| condition(c, "DatabaseReady").is_some_and(|(s, r)| s == "False" && r == "ExpandFailed"),
    )
    .await
    .context("the expand Job against a stopped database")?;
    let status = failed.status.clone().unwrap_or_default();
    ensure!(
        status.installed_release == "2026.1"
            && status.target_release == "2026.2"
            && serde_json::to_value(status.upgrade_phase)? == "Expanding",
        "the upgrade stays in Expanding at 2026.1: {status:?}"
    );
    h.wait_event(NAME, "ExpandFailed").await?;
    // Ratchet acts on the Job controller's verdict (FailureTarget), which can
    // come before the last failed pod is counted: wait for the count.
    let job = until(
        &h.api::<Job>(),
        "cinder-db-expand",
        Duration::from_secs(60),
        "five failed attempts counted (backoffLimit 4)",
        |j: &Job| j.status.as_ref().and_then(|s| s.failed) == Some(5),
    )
    .await?;
    let job_status = job.status.unwrap_or_default();
    ensure!(
        job_status.succeeded.unwrap_or(0) == 0,
        "no attempt succeeded: {job_status:?}"
    );
    // It failed because the database was away, as its pods' logs say.
    let said = log_lines_naming(&h, &["Can't connect to MySQL server"]);
    ensure!(
        said.iter().any(|l| l.starts_with("cinder-db-expand-")),
        "the expand pods name the unreachable database: {said:#?}"
    );
    let api = h.workload(NAME).await?;
    ensure!(
        api.image().ends_with(":2026.1"),
        "no workload moves before the schema: {}",
        api.image()
    );

    // The recovery docs/upgrades.md gives: fix the cause, delete the failed Job.
    db.resume(&h.client, &h.env.pods_dir(h.name())?).await?;
    h.api::<Job>()
        .delete("cinder-db-expand", &DeleteParams::background())
        .await?;
    until(
        &cinders,
        NAME,
        UPGRADE_TIMEOUT,
        "upgraded to 2026.2 and rolled out",
        settled::<Cinder>("2026.2"),
    )
    .await
    .context("the upgrade after the recovery")?;

    let reasons = h.event_reasons(NAME).await?;
    for (reason, times) in [
        ("ExpandFailed", 1),
        ("ExpandComplete", 1),
        ("MigrateComplete", 1),
        ("UpgradeComplete", 1),
        ("UpgradeAborted", 0),
    ] {
        let seen = reasons.iter().filter(|r| *r == reason).count();
        ensure!(
            seen == times,
            "{reason} {seen} times, not {times}: {reasons:?}"
        );
    }
    let after = volumes(&h, &db).await?;
    ensure!(
        after == before,
        "the volumes made before the outage are as they were: before {before:?}, after {after:?}"
    );
    h.finish().await;
    Ok(())
}
