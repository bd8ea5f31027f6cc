//! Glance for real: glance 32.0.0 (2026.1) upgraded to 33.0.0 (2026.2) with
//! every Job and API pod a real process on the process kubelet, against a
//! real MariaDB, images on a claim, while a client keeps uploading, listing
//! and downloading small images, and a slow uploader streams one large
//! image after another, each for seconds. Every image uploaded, before or during the
//! upgrade, must read back byte for byte afterwards. A slow upload runs
//! whenever an old API pod is told to stop; when it is that pod's (about
//! every other stop), the pod must finish it after its SIGTERM (uWSGI lets a
//! stopping worker finish the request it holds), which Glance's own log line
//! in that pod shows. Needs root (the process kubelet).

mod common;

use std::time::{Duration, SystemTime};

use anyhow::{Result, ensure};
use common::Harness;
use common::real::{
    STEADY_WINDOW, claim, clean_upgrade, install, latency_figures, log_lines_naming,
    no_failed_request, prepare_images, query, secret, stop_load, upgrade,
};
use k8s_openapi::api::events::v1::Event;
use kube::api::ListParams;
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::API_DRAIN_SECONDS;
use ratchet_services::glance::resource::EXAMPLE_CLAIM;
use ratchet_services::glance::v1alpha1::Glance;
use ratchet_testenv::backing;
use ratchet_testenv::load::glance::{self, GlanceLoadOptions, SlowUploads, UploadedImage};

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
    let options = GlanceLoadOptions {
        slow_uploads: Some(SlowUploads::default()),
        ..GlanceLoadOptions::default()
    };
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
    let stops = api_pod_stops(&h).await?;
    let slow = SlowUploads::default();
    let in_flight = stops
        .iter()
        .filter(|(_, deleted)| {
            outcome
                .uploaded
                .values()
                .any(|image| image.size == slow.size && ran_across(image, *deleted))
        })
        .count();
    let finished_after_sigterm = finished_after_sigterm(&h, &stops, slow.size);
    let slow_logged = log_lines_naming(&h, &[&stored_line(slow.size)]).len();
    eprintln!(
        "FIGURES requests={} failed={} {} images uploaded={} (before the upgrade \
         {before_upgrade}) api pods stopped={} stops with a slow upload in flight={} \
         slow uploads stored={} of which a stopping pod finished after its SIGTERM={}",
        tally.requests(),
        tally.failures().len(),
        latency_figures(&tally, steady_from, (upgrade_from, upgrade_to)),
        outcome.uploaded.len(),
        stops.len(),
        in_flight,
        slow_logged,
        finished_after_sigterm.len(),
    );
    for line in &finished_after_sigterm {
        eprintln!("finished after SIGTERM: {line}");
    }
    no_failed_request(&tally, 100)?;
    ensure!(before_upgrade > 0, "no image uploaded before the upgrade");
    ensure!(
        stops.len() >= 2,
        "the roll stopped {} API pods",
        stops.len()
    );
    ensure!(
        in_flight > 0,
        "no slow upload was running when an API pod was told to stop ({stops:?})"
    );
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

/// Each old Glance API pod its ReplicaSet deleted, and when (the
/// controller's `SuccessfulDelete` events, "Deleted pod: <name>").
async fn api_pod_stops(h: &Harness) -> Result<Vec<(String, SystemTime)>> {
    let events = h.api::<Event>().list(&ListParams::default()).await?.items;
    Ok(events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("SuccessfulDelete"))
        .filter_map(|e| {
            let pod = e.note.as_deref()?.strip_prefix("Deleted pod: ")?;
            let at = e
                .event_time
                .as_ref()
                .map(|t| t.0)
                .or(e.deprecated_first_timestamp.as_ref().map(|t| t.0))
                .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0))?;
            pod.starts_with(&format!("{NAME}-"))
                .then(|| (pod.to_string(), SystemTime::from(at)))
        })
        .collect())
}

/// When the pod deleted at `deleted` got SIGTERM: after its endpoint drain,
/// plus one second for the event's whole-second time.
fn sigterm(deleted: SystemTime) -> SystemTime {
    deleted + Duration::from_secs(API_DRAIN_SECONDS as u64 + 1)
}

/// The upload began before a pod was told to stop and ended after that
/// pod's SIGTERM.
fn ran_across(image: &UploadedImage, deleted: SystemTime) -> bool {
    image.started < deleted && image.at > sigterm(deleted)
}

/// Glance's line for each upload of `size` bytes a stopped pod finished
/// after its SIGTERM (`Image format matched and virtual size computed:
/// <size>`, logged once the data is stored; a raw image's virtual size is
/// its size, and the rounds' small images are far smaller).
fn finished_after_sigterm(h: &Harness, stops: &[(String, SystemTime)], size: usize) -> Vec<String> {
    let needle = stored_line(size);
    stops
        .iter()
        .flat_map(|(pod, deleted)| {
            log_lines_naming(h, &[&needle])
                .into_iter()
                .filter(move |line| {
                    line.strip_prefix(&format!("{pod}: "))
                        .and_then(logged_at)
                        .is_some_and(|at| at > sigterm(*deleted))
                })
        })
        .collect()
}

fn stored_line(size: usize) -> String {
    format!("virtual size computed: {size}")
}

/// An oslo.log line's time (`2026-12-07 11:20:01.123 …`, the pod's clock, UTC).
fn logged_at(line: &str) -> Option<SystemTime> {
    let civil: jiff::civil::DateTime = line.get(..23)?.parse().ok()?;
    let zoned = civil.to_zoned(jiff::tz::TimeZone::UTC).ok()?;
    Some(SystemTime::from(zoned.timestamp()))
}
