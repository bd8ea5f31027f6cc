//! Cinder in steady state on a real control plane: fresh install, patch bumps,
//! the lockstep guard, failures and recovery, back-end removal, deletion and the
//! CRD's own validation (contract rows C1, C11, C12, C17–C20).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use common::{Harness, TIMEOUT, Workload, WorkloadChange, cinder_manifest, condition};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_testenv::wait::{until, until_deleted, until_every};
use ratchet_testenv::{Behaviour, PodSelector};
use serde_json::json;

fn image_of(w: &Workload) -> String {
    w.image()
}

fn job_image(j: &Job) -> String {
    j.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

const REPO: &str = "registry.invalid/openstack/cinder";

#[tokio::test]
async fn fresh_install_syncs_the_database_then_ensures_workloads_in_order() -> Result<()> {
    let h = Harness::start("install").await?;
    // Record the order in which workloads appear: the watches must be running
    // (initial lists done) before the Cinder exists.
    let mut events = h.watch_workloads();
    let mut listed = 0;
    while listed < 2 {
        let event = tokio::time::timeout(TIMEOUT, events.next())
            .await?
            .context("watch ended")??;
        if matches!(event, WorkloadChange::Listed) {
            listed += 1;
        }
    }
    // The LVM back end opts in to the privilege rootwrap needs; nfs does not.
    let mut manifest = cinder_manifest("c", "2026.1", "2026.1", &["lvm", "nfs"]);
    manifest["spec"]["volumeBackends"][0]["privileged"] = json!(true);
    h.create_cinder(manifest).await?;
    let ready = h.wait_ready("c").await?;
    let status = ready.status.context("status")?;
    ensure!(status.installed_release == "2026.1");
    ensure!(status.target_release.is_empty());
    for kind in ["DatabaseReady", "DeploymentsReady", "Ready"] {
        let c = status
            .conditions
            .iter()
            .find(|c| c.type_ == kind)
            .context(kind)?;
        ensure!(
            c.status == "True" && c.observed_generation == ready.metadata.generation,
            "{c:?}"
        );
    }

    // One watch per kind: the order within a kind is the order of creation; across
    // the two kinds, creation timestamps (whole seconds) say the API came last.
    let mut order = Vec::new();
    let mut created_at = BTreeMap::new();
    while order.len() < 5 {
        let event = tokio::time::timeout(TIMEOUT, events.next())
            .await?
            .context("watch ended")??;
        if let WorkloadChange::Applied(w) = event
            && !order.contains(&w.name)
        {
            created_at.insert(w.name.clone(), w.metadata.creation_timestamp.clone());
            order.push(w.name.clone());
        }
    }
    let sets: Vec<&String> = order.iter().filter(|n| *n != "c").collect();
    ensure!(
        sets == ["c-scheduler", "c-volume-lvm", "c-volume-nfs", "c-backup"],
        "creation order {order:?}"
    );
    ensure!(
        created_at.get("c") >= created_at.get("c-backup"),
        "the API was created before the backup service: {created_at:?}"
    );

    // One db-sync Job on the spec image, the seed's command, backoffLimit 4.
    // (Complete, with its completionTime, may trail the verdict the operator acts on.)
    let job = until(
        &h.api::<Job>(),
        "c-db-sync",
        TIMEOUT,
        "db-sync Complete",
        |j: &Job| {
            j.status
                .as_ref()
                .and_then(|s| s.completion_time.as_ref())
                .is_some()
        },
    )
    .await?;
    let spec = job.spec.as_ref().context("job spec")?;
    ensure!(spec.backoff_limit == Some(4));
    let container = spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.containers.first())
        .context("container")?;
    ensure!(container.image.as_deref() == Some(&*format!("{REPO}:2026.1")));
    let job_security = spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.security_context.clone())
        .context("the Job's pod security context")?;
    ensure!(
        job_security.run_as_user == Some(42407)
            && job_security.run_as_group == Some(42407)
            && job_security.run_as_non_root == Some(true),
        "{job_security:?}"
    );
    ensure!(
        container.command.clone().unwrap_or_default()
            == [
                "cinder-manage",
                "--config-dir",
                "/etc/cinder/cinder.conf.d",
                "db",
                "sync"
            ]
    );
    let jobs = h.api::<Job>().list(&Default::default()).await?;
    ensure!(
        jobs.items.len() == 1,
        "only the db-sync Job on a fresh install"
    );
    let completed = job
        .status
        .as_ref()
        .and_then(|s| s.completion_time.clone())
        .context("completion")?;
    for d in h.workloads().await?.into_values() {
        let created_at = d.metadata.creation_timestamp.clone().context("creation")?;
        ensure!(
            created_at.0
                >= completed
                    .0
                    .round(k8s_openapi::jiff::Unit::Second)
                    .unwrap_or(completed.0)
                    - k8s_openapi::jiff::SignedDuration::from_secs(1),
            "workload created before the database was ready"
        );
        ensure!(image_of(&d) == format!("{REPO}:2026.1"));
    }

    // The config: cinder.conf mounted whole at the config dir, no secrets in it.
    let cm = h.api::<ConfigMap>().get("c-config").await?;
    let conf = cm
        .data
        .as_ref()
        .and_then(|d| d.get("cinder.conf"))
        .context("cinder.conf key")?;
    ensure!(conf.contains("[lvm]") && conf.contains("[nfs]"));
    ensure!(
        !conf.contains("placeholder@"),
        "a secret value leaked into the ConfigMap"
    );

    // Volume Deployments serve their own back end; API probes; restricted
    // security everywhere but the privileged back end.
    let lvm = h.workload("c-volume-lvm").await?;
    let pod = lvm.pod_spec();
    let privileged = pod.containers[0]
        .security_context
        .clone()
        .context("security context")?;
    let pod_security = pod.security_context.clone().context("pod security")?;
    ensure!(
        privileged.privileged == Some(true)
            && privileged.allow_privilege_escalation == Some(true)
            && pod_security.run_as_user == Some(0)
            && pod_security.run_as_non_root == Some(false),
        "the LVM back end runs as root with privilege: {privileged:?} {pod_security:?}"
    );
    for d in h.workloads().await?.into_values() {
        let name = d.name.clone();
        if name == "c-volume-lvm" {
            continue;
        }
        let pod = d.pod_spec();
        let security = pod.security_context.clone().unwrap_or_default();
        let container = pod.containers[0]
            .security_context
            .clone()
            .unwrap_or_default();
        ensure!(
            security.run_as_user == Some(42407)
                && security.fs_group == Some(42407)
                && security.run_as_non_root == Some(true)
                && container.privileged.is_none()
                && container.allow_privilege_escalation == Some(false)
                && container
                    .capabilities
                    .and_then(|c| c.drop)
                    .is_some_and(|d| d == ["ALL"]),
            "{name} is not restricted: {security:?} {:?}",
            pod.containers[0].security_context
        );
    }
    let env = pod.containers[0].env.clone().unwrap_or_default();
    ensure!(
        env.iter()
            .any(|e| e.name == "OS_DEFAULT__ENABLED_BACKENDS" && e.value.as_deref() == Some("lvm"))
    );
    ensure!(env.iter().any(|e| e.name == "OS_DATABASE__CONNECTION"
        && e.value.is_none()
        && e.value_from.is_some()));
    let mounts = pod.containers[0].volume_mounts.clone().unwrap_or_default();
    ensure!(
        mounts
            .iter()
            .any(|m| m.mount_path == "/etc/cinder/cinder.conf.d")
    );
    let release_annotation =
        |w: &Workload| w.template_annotation("cinder.c5c3.io/installed-release");
    ensure!(release_annotation(&lvm).as_deref() == Some("2026.1"));
    let api = h.workload("c").await?;
    ensure!(
        release_annotation(&api).is_none(),
        "the API carries no installed-release annotation"
    );
    let api_container = &api.pod_spec().containers[0];
    ensure!(api_container.readiness_probe.is_some() && api_container.liveness_probe.is_some());
    h.api::<Service>().get("c").await?;

    h.wait_event("c", "DatabaseSynced").await?;
    let reasons = h.event_reasons("c").await?;
    ensure!(
        reasons.iter().filter(|r| *r == "DatabaseSynced").count() == 1,
        "events {reasons:?}"
    );
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn patch_bump_reruns_db_sync_on_the_new_image_before_rolling() -> Result<()> {
    let h = Harness::start("patch").await?;
    h.create_cinder(cinder_manifest("c", "2026.1", "2026.1", &["lvm"]))
        .await?;
    h.wait_ready("c").await?;
    let first_uid = h.api::<Job>().get("c-db-sync").await?.metadata.uid;

    // The new db-sync takes a moment, so the old workloads are seen waiting for it.
    h.env.scenarios().add(
        PodSelector::workload(h.name(), "c-db-sync").with_image_containing("2026.1-p1"),
        Behaviour::default().with_run_time(Duration::from_secs(2)),
    );
    h.patch_cinder(
        "c",
        json!({ "spec": { "image": { "reference": { "tag": "2026.1-p1" } } } }),
    )
    .await?;
    let jobs: Api<Job> = h.api();
    until(&jobs, "c-db-sync", TIMEOUT, "new db-sync running", |j| {
        j.metadata.uid != first_uid && j.status.as_ref().and_then(|s| s.active) == Some(1)
    })
    .await?;
    let scheduler = h.workload("c-scheduler").await?;
    ensure!(
        image_of(&scheduler) == format!("{REPO}:2026.1"),
        "rolled before the db-sync finished"
    );

    let ready = h.wait_ready("c").await?;
    ensure!(ready.status.as_ref().map(|s| s.installed_release.as_str()) == Some("2026.1"));
    ensure!(job_image(&jobs.get("c-db-sync").await?) == format!("{REPO}:2026.1-p1"));
    for d in h.workloads().await?.into_values() {
        ensure!(
            image_of(&d) == format!("{REPO}:2026.1-p1"),
            "{:?} not rolled",
            d.metadata.name
        );
    }
    let phase = ready.status.map(|s| s.upgrade_phase);
    ensure!(
        phase == Some(Default::default()),
        "a patch bump enters no phase"
    );
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn lockstep_mismatch_blocks_until_the_image_is_fixed() -> Result<()> {
    let h = Harness::start("lockstep").await?;
    h.create_cinder(cinder_manifest("c", "2026.2", "2026.1-p1", &[]))
        .await?;
    let blocked = h
        .wait_condition("c", "DatabaseReady", "False", "ImageReleaseMismatch")
        .await?;
    ensure!(condition(&blocked, "Ready").is_some_and(|(s, _)| s == "False"));
    ensure!(
        h.api::<Job>()
            .list(&Default::default())
            .await?
            .items
            .is_empty(),
        "nothing advances"
    );
    ensure!(
        h.api::<Deployment>()
            .list(&Default::default())
            .await?
            .items
            .is_empty()
    );

    h.patch_cinder(
        "c",
        json!({ "spec": { "image": { "reference": { "tag": "2026.2" } } } }),
    )
    .await?;
    h.wait_ready("c").await?;
    let reasons = h.event_reasons("c").await?;
    ensure!(
        reasons
            .iter()
            .filter(|r| *r == "ImageReleaseMismatch")
            .count()
            == 1,
        "events {reasons:?}"
    );

    // A digest is trusted whatever the release.
    let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let mut manifest = cinder_manifest("d", "2026.2", "x", &[]);
    manifest["spec"]["image"] = json!({ "repository": REPO, "reference": { "digest": digest } });
    h.create_cinder(manifest).await?;
    h.wait_ready("d").await?;
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn failing_db_sync_reports_and_recovers_after_a_spec_change() -> Result<()> {
    let h = Harness::start("dbfail").await?;
    let rule = h.env.scenarios().add(
        PodSelector::workload(h.name(), "c-db-sync"),
        Behaviour::always_exit(1, "OperationalError: unable to open database"),
    );
    h.create_cinder(cinder_manifest("c", "2026.1", "2026.1", &[]))
        .await?;
    let failed = h
        .wait_condition("c", "DatabaseReady", "False", "DBSyncFailed")
        .await?;
    let message = failed
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "DatabaseReady"))
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(
        message.contains("BackoffLimitExceeded") && message.contains("fix the cause"),
        "{message}"
    );
    // The operator reacts to the Job controller's verdict (FailureTarget), which
    // may come before the last failure is counted: wait for the count.
    let jobs: Api<Job> = h.api();
    until(
        &jobs,
        "c-db-sync",
        TIMEOUT,
        "five failed pods counted",
        |j: &Job| j.status.as_ref().and_then(|s| s.failed) == Some(5),
    )
    .await?;
    ensure!(failed.status.as_ref().map(|s| s.installed_release.as_str()) == Some(""));

    h.env.scenarios().remove(rule);
    h.patch_cinder(
        "c",
        json!({ "spec": { "image": { "reference": { "tag": "2026.1-p1" } } } }),
    )
    .await?;
    h.wait_ready("c").await?;
    let reasons = h.event_reasons("c").await?;
    ensure!(
        reasons.iter().filter(|r| *r == "DBSyncFailed").count() == 1,
        "events {reasons:?}"
    );
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn missing_secret_blocks_until_it_exists() -> Result<()> {
    let h = Harness::start("secret").await?;
    let mut manifest = cinder_manifest("c", "2026.1", "2026.1", &[]);
    manifest["spec"]["database"]["secretName"] = json!("late-db");
    h.create_cinder(manifest).await?;
    h.wait_condition("c", "DatabaseReady", "False", "SecretMissing")
        .await?;
    ensure!(
        h.api::<Job>()
            .list(&Default::default())
            .await?
            .items
            .is_empty()
    );
    let secret: Secret = serde_json::from_value(json!({
        "metadata": { "name": "late-db" },
        "stringData": { "connection": "mysql+pymysql://x:y@db/cinder" },
    }))?;
    h.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await?;
    h.wait_ready("c").await?;
    h.finish().await;
    Ok(())
}

/// Waits until at least `count` passes failed with SecretMissing, as the
/// operator's metrics count them (metrics have no watch: read each 200 ms).
async fn secret_missing_failures(h: &Harness, count: u64) -> Result<()> {
    let wanted = "ratchet_reconcile_errors_total{service=\"cinder\",reason=\"SecretMissing\"} ";
    let mut every = tokio::time::interval(Duration::from_millis(200));
    let mut seen = 0;
    let counted = tokio::time::timeout(TIMEOUT, async {
        while seen < count {
            every.tick().await;
            let metrics = h.scrape().await?;
            let line = metrics.lines().find_map(|l| l.strip_prefix(wanted));
            seen = line.and_then(|n| n.trim().parse().ok()).unwrap_or(0);
        }
        Ok::<_, anyhow::Error>(())
    })
    .await;
    counted.with_context(|| format!("{seen} of {count} SecretMissing failures"))?
}

fn late_secrets() -> Result<[Secret; 2]> {
    Ok([
        serde_json::from_value(json!({
            "metadata": { "name": "late-db" },
            "stringData": { "connection": "mysql+pymysql://x:y@db/cinder" },
        }))?,
        serde_json::from_value(json!({
            "metadata": { "name": "late-mq" },
            "stringData": { "transport_url": "rabbit://x:y@mq:5672/" },
        }))?,
    ])
}

/// GitOps tools apply in any order: seven Cinders created before their two
/// Secrets are all Ready seconds after the Secrets arrive, not when their
/// failure back-off (grown to 16 s and more here) runs out.
#[tokio::test]
async fn resources_created_before_their_secrets_are_ready_as_soon_as_they_exist() -> Result<()> {
    let h = Harness::start("late-secrets").await?;
    let names: Vec<String> = (0..7).map(|i| format!("c{i}")).collect();
    for name in &names {
        let mut manifest = cinder_manifest(name, "2026.1", "2026.1", &[]);
        manifest["spec"]["database"]["secretName"] = json!("late-db");
        manifest["spec"]["transport"]["secretName"] = json!("late-mq");
        h.create_cinder(manifest).await?;
    }
    for name in &names {
        h.wait_condition(name, "DatabaseReady", "False", "SecretMissing")
            .await?;
    }
    // Five failures each: the next try of each is 16 s or more away.
    secret_missing_failures(&h, 5 * names.len() as u64).await?;
    for secret in late_secrets()? {
        h.api::<Secret>()
            .create(&PostParams::default(), &secret)
            .await?;
    }
    until_every(
        &h.api::<Cinder>(),
        names.len(),
        Duration::from_secs(8),
        "every Cinder Ready soon after its Secrets",
        |c: &Cinder| condition(c, "Ready").is_some_and(|(s, _)| s == "True"),
    )
    .await?;
    h.finish().await;
    Ok(())
}

/// A Secret deleted during an upgrade holds it (SecretMissing) at once, though
/// nothing else changes while its Job runs; created again, the upgrade goes on
/// at once and completes.
#[tokio::test]
async fn a_secret_deleted_and_created_again_during_an_upgrade_is_seen_at_once() -> Result<()> {
    let h = Harness::start("secret-upgrade").await?;
    for secret in late_secrets()? {
        h.api::<Secret>()
            .create(&PostParams::default(), &secret)
            .await?;
    }
    let mut manifest = cinder_manifest("c", "2026.1", "2026.1", &[]);
    manifest["spec"]["database"]["secretName"] = json!("late-db");
    manifest["spec"]["transport"]["secretName"] = json!("late-mq");
    h.create_cinder(manifest).await?;
    h.wait_ready("c").await?;
    let hang = h.env.scenarios().add(
        PodSelector::workload(h.name(), "c-db-expand"),
        Behaviour::hang(),
    );
    h.bump("c", "2026.2").await?;
    h.wait_condition("c", "DatabaseReady", "False", "ExpandInProgress")
        .await?;
    h.api::<Secret>()
        .delete("late-db", &DeleteParams::default())
        .await?;
    let soon = Duration::from_secs(8);
    let missing = |c: &Cinder| {
        condition(c, "DatabaseReady").is_some_and(|(s, r)| s == "False" && r == "SecretMissing")
    };
    until(
        &h.api::<Cinder>(),
        "c",
        soon,
        "SecretMissing soon after the delete",
        missing,
    )
    .await?;
    secret_missing_failures(&h, 5).await?;
    let [db, _] = late_secrets()?;
    h.api::<Secret>()
        .create(&PostParams::default(), &db)
        .await?;
    until(
        &h.api::<Cinder>(),
        "c",
        soon,
        "expanding again soon after the Secret",
        |c: &Cinder| condition(c, "DatabaseReady").is_some_and(|(_, r)| r == "ExpandInProgress"),
    )
    .await?;
    h.env.scenarios().remove(hang);
    h.api::<Job>()
        .delete("c-db-expand", &DeleteParams::background())
        .await?;
    h.wait_installed("c", "2026.2").await?;
    h.finish().await;
    Ok(())
}

/// An option set from a Secret: held under SecretMissing until its Secret
/// exists, then in every pod as the variable oslo.config reads, from a
/// secretKeyRef, never in the ConfigMap; the uid follows spec.securityContext.
#[tokio::test]
async fn a_secret_option_reaches_the_pods_from_its_secret_once_it_exists() -> Result<()> {
    let h = Harness::start("secretopt").await?;
    let mut manifest = cinder_manifest("c", "2026.1", "2026.1", &["lvm"]);
    manifest["spec"]["secretOptions"] = json!([{
        "section": "keystone_authtoken", "option": "password",
        "secretName": "cinder-keystone", "key": "password",
    }]);
    manifest["spec"]["securityContext"] = json!({ "runAsUser": 1000, "fsGroup": 2000 });
    h.create_cinder(manifest).await?;
    let blocked = h
        .wait_condition("c", "DatabaseReady", "False", "SecretMissing")
        .await?;
    let message = blocked
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "DatabaseReady"))
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(
        message.contains("cinder-keystone"),
        "the message names the Secret: {message}"
    );
    let secret: Secret = serde_json::from_value(json!({
        "metadata": { "name": "cinder-keystone" },
        "stringData": { "password": "s3cr3t-keystone" },
    }))?;
    h.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await?;
    h.wait_ready("c").await?;

    let jobs = h.api::<Job>().list(&Default::default()).await?.items;
    let deployments = h.workloads().await?.into_values();
    let pods = jobs
        .iter()
        .filter_map(|j| j.spec.as_ref()?.template.spec.clone())
        .chain(deployments.map(|w| w.pod_spec()))
        .collect::<Vec<_>>();
    ensure!(
        pods.len() == 5,
        "a Job and four Deployments: {}",
        pods.len()
    );
    for pod in &pods {
        let env = pod.containers[0].env.clone().unwrap_or_default();
        let from = env
            .iter()
            .find(|e| e.name == "OS_KEYSTONE_AUTHTOKEN__PASSWORD")
            .and_then(|e| e.value_from.as_ref())
            .and_then(|v| v.secret_key_ref.as_ref())
            .map(|r| (r.name.as_str(), r.key.as_str()));
        ensure!(from == Some(("cinder-keystone", "password")), "{env:?}");
        let security = pod.security_context.clone().unwrap_or_default();
        ensure!(
            (
                security.run_as_user,
                security.run_as_group,
                security.fs_group
            ) == (Some(1000), Some(1000), Some(2000)),
            "{security:?}"
        );
    }
    let conf = h
        .api::<ConfigMap>()
        .get("c-config")
        .await?
        .data
        .and_then(|d| d.get("cinder.conf").cloned())
        .unwrap_or_default();
    ensure!(
        !conf.contains("s3cr3t") && !conf.contains("password"),
        "{conf}"
    );

    // extraConfig may not set it too: admission names both fields.
    let err = h
        .patch_cinder(
            "c",
            json!({ "spec": { "extraConfig": { "keystone_authtoken": { "password": "plain" } } } }),
        )
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    ensure!(
        err.contains("admission webhook")
            && err.contains("spec.extraConfig.keystone_authtoken.password: set by spec.secretOptions[\"keystone_authtoken\"][\"password\"]"),
        "{err}"
    );
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn removing_a_back_end_removes_its_deployment_and_deleting_removes_all() -> Result<()> {
    let h = Harness::start("remove").await?;
    h.create_cinder(cinder_manifest("c", "2026.1", "2026.1", &["lvm", "nfs"]))
        .await?;
    h.wait_ready("c").await?;
    // A merge patch replaces the whole list; server-side apply would merge by name.
    h.patch_cinder(
        "c",
        json!({ "spec": { "volumeBackends": [{ "name": "lvm", "options": { "volume_driver": "cinder.volume.drivers.lvm.LVMVolumeDriver" } }] } }),
    )
        .await?;
    let sets: Api<StatefulSet> = h.api();
    until_deleted(&sets, "c-volume-nfs", TIMEOUT).await?;
    // Its headless Service goes with it.
    until_deleted(&h.api::<Service>(), "c-volume-nfs", TIMEOUT).await?;
    let config = h.api::<ConfigMap>().get("c-config").await?;
    let conf = config
        .data
        .and_then(|d| d.get("cinder.conf").cloned())
        .unwrap_or_default();
    ensure!(
        !conf.contains("[nfs]"),
        "the removed back end is still configured"
    );
    h.wait_ready("c").await?;

    h.api::<Cinder>()
        .delete("c", &DeleteParams::background())
        .await?;
    for name in ["c-scheduler", "c-volume-lvm", "c-backup"] {
        until_deleted(&sets, name, TIMEOUT).await?;
    }
    until_deleted(&h.api::<Deployment>(), "c", TIMEOUT).await?;
    until_deleted(&h.api::<Job>(), "c-db-sync", TIMEOUT).await?;
    until_deleted(&h.api::<ConfigMap>(), "c-config", TIMEOUT).await?;
    until_deleted(&h.api::<Service>(), "c", TIMEOUT).await?;
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn the_crd_rejects_bad_releases_and_image_pins() -> Result<()> {
    let h = Harness::start("crd").await?;
    let reject = |manifest: serde_json::Value, expected: &'static str| {
        let h = &h;
        async move {
            let err = h
                .create_cinder(manifest)
                .await
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            ensure!(
                err.contains(expected),
                "expected rejection mentioning {expected:?}, got {err:?}"
            );
            Ok::<_, anyhow::Error>(())
        }
    };
    reject(
        cinder_manifest("a", "2025.9", "2025.9", &[]),
        "spec.openStackRelease",
    )
    .await?;
    reject(
        cinder_manifest("b", "2026.1 ", "2026.1", &[]),
        "spec.openStackRelease",
    )
    .await?;
    let mut both = cinder_manifest("c", "2026.1", "2026.1", &[]);
    both["spec"]["image"]["reference"]["digest"] =
        json!("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    reject(
        both,
        "set exactly one of spec.image.reference.tag and spec.image.reference.digest",
    )
    .await?;
    let mut neither = cinder_manifest("d", "2026.1", "2026.1", &[]);
    neither["spec"]["image"] = json!({ "repository": REPO, "reference": {} });
    reject(
        neither,
        "set exactly one of spec.image.reference.tag and spec.image.reference.digest",
    )
    .await?;
    reject(
        cinder_manifest("e", "2026.1", "2026.1", &["Bad_Name"]),
        "spec.volumeBackends[0].name",
    )
    .await?;
    reject(
        cinder_manifest("f", "2026.1", "2026.1", &["lvm", "lvm"]),
        "Duplicate value",
    )
    .await?;
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn the_admission_webhook_refuses_a_downgrade_of_an_installed_release() -> Result<()> {
    let h = Harness::start("downgrade").await?;
    h.create_cinder(cinder_manifest("c", "2026.2", "2026.2", &[]))
        .await?;
    h.wait_ready("c").await?;
    let err = h
        .patch_cinder(
            "c",
            json!({ "spec": { "openStackRelease": "2026.1", "image": { "reference": { "tag": "2026.1" } } } }),
        )
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    ensure!(
        err.contains("admission webhook")
            && err.contains("older than the installed release 2026.2"),
        "{err}"
    );
    let still = h.api::<Cinder>().get("c").await?;
    ensure!(still.spec.open_stack_release == "2026.2");
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_worker_an_older_ratchet_made_as_a_deployment_is_replaced_by_its_stateful_set()
-> Result<()> {
    let h = Harness::start("kind").await?;
    h.create_cinder(cinder_manifest("c", "2026.1", "2026.1", &["lvm"]))
        .await?;
    let cinder = h.wait_ready("c").await?;
    // What an older Ratchet left: the scheduler as a Deployment, owned and
    // labelled like Ratchet's own children.
    let owner = json!({
        "apiVersion": "cinder.openstack.c5c3.io/v1beta1", "kind": "Cinder", "name": "c",
        "uid": cinder.metadata.uid, "controller": true, "blockOwnerDeletion": true,
    });
    let labels = json!({
        "app.kubernetes.io/name": "cinder", "app.kubernetes.io/instance": "c",
        "app.kubernetes.io/component": "scheduler", "app.kubernetes.io/managed-by": "ratchet",
    });
    let old: Deployment = serde_json::from_value(json!({
        "metadata": { "name": "c-scheduler", "labels": labels, "ownerReferences": [owner] },
        "spec": {
            "replicas": 1,
            "selector": { "matchLabels": { "old": "scheduler" } },
            "template": {
                "metadata": { "labels": { "old": "scheduler" } },
                "spec": { "containers": [{ "name": "scheduler", "image": format!("{REPO}:2026.1") }] },
            },
        },
    }))?;
    h.api::<Deployment>()
        .create(&PostParams::default(), &old)
        .await?;
    until_deleted(&h.api::<Deployment>(), "c-scheduler", TIMEOUT).await?;
    let set = h.api::<StatefulSet>().get("c-scheduler").await?;
    ensure!(
        set.metadata.deletion_timestamp.is_none(),
        "the StatefulSet stays"
    );
    h.wait_ready("c").await?;
    h.finish().await;
    Ok(())
}

/// What a crash between a transition's status write and its events leaves:
/// the events pending in the status. The next pass publishes them under the
/// names recorded and empties the list; left due again (a second crash), they
/// are not published twice.
#[tokio::test]
async fn events_a_crash_left_pending_are_published_once_then_cleared() -> Result<()> {
    let h = Harness::start("pending-events").await?;
    h.create_cinder(cinder_manifest("c", "2026.1", "2026.1", &[]))
        .await?;
    h.wait_ready("c").await?;
    let left_due = json!({ "status": { "pendingEvents": [{
        "name": "c.left-due-by-a-crash",
        "type": "Normal",
        "reason": "UpgradeComplete",
        "message": "2026.1 is installed (left due)",
    }] } });
    for crash in 1..=2 {
        h.api::<Cinder>()
            .patch_status("c", &PatchParams::default(), &Patch::Merge(&left_due))
            .await?;
        until(
            &h.api::<Cinder>(),
            "c",
            TIMEOUT,
            &format!("pending events published and cleared (crash {crash})"),
            |c: &Cinder| {
                c.status
                    .as_ref()
                    .is_some_and(|s| s.pending_events.is_empty())
            },
        )
        .await?;
        let event = h.api::<Event>().get("c.left-due-by-a-crash").await?;
        ensure!(event.reason.as_deref() == Some("UpgradeComplete"));
        ensure!(event.note.as_deref() == Some("2026.1 is installed (left due)"));
        ensure!(event.reporting_controller.as_deref() == Some("ratchet"));
        let types = h.event_types("c", "UpgradeComplete").await?;
        ensure!(types == ["Normal"], "published once: {types:?}");
    }
    h.finish().await;
    Ok(())
}
