//! A resource owns only its own children: deleted and created again under the
//! same name (as `kubectl replace --force` and GitOps tools do), it never reads,
//! reports or changes what its predecessor left for the garbage collector;
//! orphans are adopted by the rule of `docs/upgrades.md` ("Whose children").

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use common::{Harness, TIMEOUT, cinder_manifest, condition};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{DeleteParams, PostParams};
use ratchet_services::cinder::v1beta1::{Cinder, CinderUpgradePhase};
use ratchet_testenv::wait::{until, until_deleted};
use ratchet_testenv::{Behaviour, PodSelector};
use serde_json::json;

const CHECK_OK: &str = "cinder-status upgrade check exit 0";
/// Events that only an upgrade of the resource they regard may publish.
const UPGRADE_EVENTS: [&str; 5] = [
    "ExpandComplete",
    "MigrateComplete",
    "UpgradeCheckCompleted",
    "UpgradeCheckWarnings",
    "UpgradeComplete",
];

/// Creates Cinder `c` at 2026.1, retrying while the deleted one of that name
/// is still being removed; returns the new one's UID.
async fn create(h: &Harness) -> Result<String> {
    let api = h.api::<Cinder>();
    let manifest: Cinder = serde_json::from_value(cinder_manifest("c", "2026.1", "2026.1", &[]))?;
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        match api.create(&PostParams::default(), &manifest).await {
            Ok(created) => return created.uid().context("a uid"),
            Err(kube::Error::Api(s)) if s.code == 409 && tokio::time::Instant::now() < deadline => {
                until_deleted(&api, "c", TIMEOUT).await?;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// The events about the incarnation with `uid`, by reason.
async fn reasons_about(h: &Harness, uid: &str) -> Result<Vec<String>> {
    Ok(h.api::<Event>()
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.uid.as_deref()) == Some(uid))
        .filter_map(|e| e.reason)
        .collect())
}

fn controller_uid(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<String> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
}

fn database_message(c: &Cinder) -> String {
    c.status
        .iter()
        .flat_map(|s| &s.conditions)
        .find(|c| c.type_ == "DatabaseReady")
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

/// A small random source for the points at which a resource is replaced;
/// its seed is printed, so a failing run can be repeated (RATCHET_TEST_SEED).
struct Points(u64);

impl Points {
    fn new() -> Points {
        let seed = std::env::var("RATCHET_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
        eprintln!("replacement points: RATCHET_TEST_SEED={seed}");
        Points(seed | 1)
    }

    /// A delay below `max` (xorshift).
    fn below(&mut self, max: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        max.mul_f64((self.0 % 1000) as f64 / 1000.0)
    }
}

/// Twenty times, a Cinder in the middle of its fresh install or of an upgrade
/// is deleted and created again at once. Each new one is a fresh install: it
/// must publish no upgrade event (its predecessor's succeeded check Job once
/// made it report an upgrade check that never ran), run its own db-sync, and
/// the last one must then upgrade through every phase with one check report.
#[tokio::test]
async fn a_resource_created_again_at_once_reads_only_its_own_children() -> Result<()> {
    let h = Harness::start("recreate").await?;
    h.env.scenarios().add(
        PodSelector::workload(h.name(), "c-db-migrate"),
        Behaviour::succeed_with_message(CHECK_OK),
    );
    let mut points = Points::new();
    let api = h.api::<Cinder>();
    // The incarnations that never saw an upgrade of their own.
    let mut fresh = Vec::new();
    let mut uid = create(&h).await?;
    for round in 0..20 {
        let upgrading = round % 2 == 1;
        if !upgrading {
            fresh.push(uid.clone());
        }
        if upgrading {
            // Replaced during an upgrade, at a random point of it.
            h.wait_ready("c").await?;
            h.bump("c", "2026.2").await?;
            tokio::time::sleep(points.below(Duration::from_secs(4))).await;
        } else {
            // Replaced during its fresh install.
            tokio::time::sleep(points.below(Duration::from_millis(1500))).await;
        }
        api.delete("c", &DeleteParams::background()).await?;
        uid = create(&h).await?;
    }
    fresh.push(uid.clone());
    let ready = h.wait_installed("c", "2026.1").await?;
    ensure!(ready.uid().as_deref() == Some(uid.as_str()));
    let sync = h.api::<Job>().get("c-db-sync").await?;
    ensure!(
        controller_uid(&sync.metadata).as_deref() == Some(uid.as_str()),
        "db-sync is not the last one's own: {:?}",
        sync.metadata.owner_references
    );
    for (round, incarnation) in fresh.iter().enumerate() {
        let reasons = reasons_about(&h, incarnation).await?;
        let upgrade: Vec<&String> = reasons
            .iter()
            .filter(|r| UPGRADE_EVENTS.contains(&r.as_str()))
            .collect();
        ensure!(
            upgrade.is_empty(),
            "fresh incarnation {round} published {upgrade:?} (all: {reasons:?})"
        );
    }

    h.upgrade_through_every_phase("c", "2026.2").await?;
    h.wait_event("c", "UpgradeCheckCompleted").await?;
    let reports = reasons_about(&h, &uid)
        .await?
        .into_iter()
        .filter(|r| r.starts_with("UpgradeCheck"))
        .count();
    ensure!(reports == 1, "{reports} check reports for one upgrade");
    h.finish().await;
    Ok(())
}

/// A child of another owner is never touched: the resource waits, naming it,
/// until it is gone. Here the owner is a ConfigMap that stays, so the wait
/// holds until the test deletes the Job itself.
#[tokio::test]
async fn a_child_of_another_owner_holds_the_resource_until_it_is_gone() -> Result<()> {
    let h = Harness::start("foreign").await?;
    let owner: ConfigMap = h
        .api::<ConfigMap>()
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": "someone-else" } }))?,
        )
        .await?;
    let foreign: Job = serde_json::from_value(json!({
        "metadata": {
            "name": "c-db-sync",
            "labels": {
                "app.kubernetes.io/name": "cinder",
                "app.kubernetes.io/instance": "c",
                "app.kubernetes.io/component": "db-sync",
                "app.kubernetes.io/managed-by": "ratchet",
            },
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": "someone-else",
                "uid": owner.uid(), "controller": true,
            }],
        },
        "spec": { "template": { "spec": {
            "restartPolicy": "Never",
            "containers": [{ "name": "x", "image": "registry.invalid/x:1" }],
        } } },
    }))?;
    let jobs = h.api::<Job>();
    let foreign = jobs.create(&PostParams::default(), &foreign).await?;
    h.create_cinder(cinder_manifest("c", "2026.1", "2026.1", &[]))
        .await?;
    let held = h
        .wait_condition("c", "DatabaseReady", "False", "ChildrenNotOwned")
        .await?;
    let message = database_message(&held);
    ensure!(
        message.contains("Job c-db-sync") && message.contains(&owner.uid().unwrap_or_default()),
        "{message}"
    );
    ensure!(
        h.event_types("c", "ChildrenNotOwned").await?.is_empty(),
        "a wait is not a warning"
    );
    ensure!(
        jobs.get("c-db-sync").await?.uid() == foreign.uid(),
        "the foreign Job was replaced"
    );
    jobs.delete("c-db-sync", &DeleteParams::background())
        .await?;
    let ready = h.wait_ready("c").await?;
    ensure!(condition(&ready, "DatabaseReady").is_some_and(|(s, _)| s == "True"));
    let own = jobs.get("c-db-sync").await?;
    ensure!(controller_uid(&own.metadata) == ready.uid());
    h.finish().await;
    Ok(())
}

/// `kubectl delete --cascade=orphan` in the middle of an upgrade, then the
/// resource created again: its workloads are adopted (the same objects, pods
/// left running), a running orphaned Job holds it until it is gone, finished
/// orphaned Jobs are deleted unread, and the new resource's own upgrade runs
/// Expanding with its own Job although the predecessor's db-expand succeeded.
#[tokio::test]
async fn orphans_are_adopted_but_an_orphaned_job_never_counts() -> Result<()> {
    let h = Harness::start("orphans").await?;
    h.create_cinder(cinder_manifest("c", "2026.1", "2026.1", &["lvm"]))
        .await?;
    h.wait_ready("c").await?;
    let hang = h.env.scenarios().add(
        PodSelector::workload(h.name(), "c-db-migrate"),
        Behaviour::hang(),
    );
    h.bump("c", "2026.2").await?;
    h.wait_phase("c", CinderUpgradePhase::Migrating).await?;
    let jobs = h.api::<Job>();
    // The machine moves on at the Job's SuccessCriteriaMet; its succeeded
    // count may follow a moment later.
    let expand = until(
        &jobs,
        "c-db-expand",
        TIMEOUT,
        "db-expand counted as succeeded",
        |job: &Job| job.status.as_ref().and_then(|s| s.succeeded) == Some(1),
    )
    .await?;
    let sets = h.api::<StatefulSet>();
    let uids_before: BTreeMap<String, Option<String>> = sets
        .list(&Default::default())
        .await?
        .items
        .iter()
        .map(|s| (s.name_any(), s.uid()))
        .collect();

    let cinders = h.api::<Cinder>();
    cinders
        .delete(
            "c",
            &DeleteParams {
                propagation_policy: Some(kube::api::PropagationPolicy::Orphan),
                ..DeleteParams::default()
            },
        )
        .await?;
    until_deleted(&cinders, "c", TIMEOUT).await?;
    let uid = create(&h).await?;
    let held = h
        .wait_condition("c", "DatabaseReady", "False", "ChildrenNotOwned")
        .await?;
    let message = database_message(&held);
    ensure!(
        message.contains("Job c-db-migrate (orphaned, still running)"),
        "{message}"
    );
    // The finished orphaned Job is deleted unread; the running one stays
    // until someone ends it.
    until_deleted(&jobs, "c-db-expand", TIMEOUT).await?;
    h.env.scenarios().remove(hang);
    jobs.delete("c-db-migrate", &DeleteParams::background())
        .await?;
    h.wait_installed("c", "2026.1").await?;

    for set in sets.list(&Default::default()).await?.items {
        let name = set.name_any();
        ensure!(
            uids_before.get(&name) == Some(&set.uid()),
            "{name} was replaced, not adopted"
        );
        ensure!(
            controller_uid(&set.metadata).as_deref() == Some(uid.as_str()),
            "{name} not adopted: {:?}",
            set.metadata.owner_references
        );
    }

    h.env.scenarios().add(
        PodSelector::workload(h.name(), "c-db-migrate"),
        Behaviour::succeed_with_message(CHECK_OK),
    );
    h.upgrade_through_every_phase("c", "2026.2").await?;
    let reasons = reasons_about(&h, &uid).await?;
    ensure!(
        reasons.iter().filter(|r| *r == "ExpandComplete").count() == 1,
        "{reasons:?}"
    );
    if let Some(own) = jobs.get_opt("c-db-expand").await? {
        ensure!(own.uid() != expand.uid() && controller_uid(&own.metadata) == Some(uid));
    }
    h.finish().await;
    Ok(())
}
