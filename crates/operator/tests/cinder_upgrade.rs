//! Cinder release upgrades on a real control plane with the real Job and
//! Deployment controllers: one test per behaviour of the seed (C2–C16, C21).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use common::{
    EVERY_PHASE, Harness, Log, StatusRecorder, TIMEOUT, Workload, WorkloadChange, cinder_manifest,
};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use ratchet_services::cinder::v1beta1::{Cinder, CinderUpgradePhase};
use ratchet_testenv::wait::{until, until_deleted};
use ratchet_testenv::{Behaviour, PodSelector};
use serde_json::json;

const REPO: &str = "registry.invalid/openstack/cinder";
const CHECK_OK: &str = "cinder-status upgrade check exit 0";

async fn installed(prefix: &str, release: &str, backends: &[&str]) -> Result<Harness> {
    let h = Harness::start(prefix).await?;
    h.create_cinder(cinder_manifest("c", release, release, backends))
        .await?;
    h.wait_ready("c").await?;
    Ok(h)
}

fn container(job: &Job) -> Result<k8s_openapi::api::core::v1::Container> {
    job.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first().cloned())
        .context("job container")
}

/// The second roll finishes after promotion: waits until the backup service,
/// the last workload it restarts, carries 2026.2's annotation, and Ready.
async fn second_roll_done(h: &Harness) -> Result<()> {
    h.wait_workload("c-backup", "second roll of backup", TIMEOUT, |w| {
        w.template_annotation("cinder.c5c3.io/installed-release")
            .as_deref()
            == Some("2026.2")
    })
    .await?;
    h.wait_ready("c").await?;
    Ok(())
}

fn event_index(events: &[Event], reason: &str) -> Option<usize> {
    events
        .iter()
        .position(|e| e.reason.as_deref() == Some(reason))
}

/// Records, from one watch, each time a Deployment's template changes, and
/// whether every other Deployment it follows in roll order was completely
/// rolled out at that moment.
/// (deployment, image, installed-release annotation)
type TemplateChange = (String, String, Option<String>);

struct RollRecorder {
    changes: Log<TemplateChange>,
    violations: Log<String>,
    task: tokio::task::JoinHandle<()>,
}

impl RollRecorder {
    async fn start(h: &Harness, order: Vec<String>) -> Result<RollRecorder> {
        let mut stream = h.watch_workloads();
        let mut live: BTreeMap<String, Workload> = BTreeMap::new();
        let mut listed = 0;
        while listed < 2 {
            match tokio::time::timeout(TIMEOUT, stream.next()).await? {
                Some(Ok(WorkloadChange::Applied(w))) => {
                    live.insert(w.name.clone(), *w);
                }
                Some(Ok(WorkloadChange::Listed)) => listed += 1,
                Some(_) => continue,
                None => anyhow::bail!("watch ended"),
            }
        }
        let changes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let violations = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (c, v) = (changes.clone(), violations.clone());
        let task = tokio::spawn(async move {
            let fingerprint = |w: &Workload| {
                (
                    w.image(),
                    w.template_annotation("cinder.c5c3.io/installed-release"),
                )
            };
            while let Some(event) = stream.next().await {
                let Ok(WorkloadChange::Applied(w)) = event else {
                    continue;
                };
                let name = w.name.clone();
                let new = fingerprint(&w);
                let old = live.get(&name).map(fingerprint);
                if old.as_ref() != Some(&new) {
                    // When a workload's pods change (the image, or the installed
                    // release of the second roll), every workload before it in roll
                    // order must already be fully rolled out on the same.
                    if let Some(pos) = order
                        .iter()
                        .position(|n| *n == name)
                        .filter(|_| old.is_some())
                    {
                        for earlier in &order[..pos] {
                            let ok = live.get(earlier).is_some_and(|e| {
                                let (image, release) = fingerprint(e);
                                image == new.0
                                    && (release.is_none() || new.1.is_none() || release == new.1)
                                    && e.complete
                            });
                            if !ok {
                                v.lock().unwrap_or_else(|p| p.into_inner()).push(format!(
                                    "{name} changed to {:?} before {earlier} was rolled out",
                                    new
                                ));
                            }
                        }
                    }
                    c.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((name.clone(), new.0, new.1));
                }
                live.insert(name, *w);
            }
        });
        Ok(RollRecorder {
            changes,
            violations,
            task,
        })
    }

    fn changes(&self) -> Vec<TemplateChange> {
        self.changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn violations(&self) -> Vec<String> {
        self.violations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for RollRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
async fn full_upgrade_runs_every_phase_rolls_in_order_and_rolls_a_second_time() -> Result<()> {
    let h = installed("full", "2026.1", &["lvm", "nfs"]).await?;
    h.env.scenarios().add(
        PodSelector::workload(h.name(), "c-db-migrate"),
        Behaviour::succeed_with_message(CHECK_OK),
    );
    let order: Vec<String> = [
        "c-scheduler",
        "c-volume-lvm",
        "c-volume-nfs",
        "c-backup",
        "c",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rolls = RollRecorder::start(&h, order.clone()).await?;
    let statuses = StatusRecorder::start(h.api(), "c").await?;
    h.bump("c", "2026.2").await?;
    let done = h.wait_installed("c", "2026.2").await?;
    second_roll_done(&h).await?;

    // Phases in order, installedRelease promoted only at the end.
    let phases = statuses.phases();
    ensure!(phases == EVERY_PHASE, "phases {phases:?}");
    for (phase, installed, target, _) in statuses.statuses() {
        if !phase.is_empty() {
            ensure!(
                installed == "2026.1" && target == "2026.2",
                "{phase}: installed {installed} target {target}"
            );
        }
    }
    ensure!(
        done.status
            .as_ref()
            .is_some_and(|s| s.target_release.is_empty())
    );
    // No "not ready" blip once promoted: the db-sync that follows on the image
    // the contract just ran finds nothing to do, and DatabaseReady says so.
    let after: Vec<String> = statuses
        .statuses()
        .into_iter()
        .skip_while(|(phase, ..)| phase.is_empty())
        .skip_while(|(phase, ..)| !phase.is_empty())
        .map(|s| s.3)
        .collect();
    ensure!(
        !after.is_empty() && after.iter().all(|r| r == "DatabaseSynced"),
        "DatabaseReady after the upgrade: {after:?}"
    );
    let reasons: Vec<String> = statuses.statuses().into_iter().map(|s| s.3).collect();
    for r in [
        "ExpandInProgress",
        "MigrateInProgress",
        "UpgradeRollingUpdate",
        "ContractInProgress",
    ] {
        ensure!(
            reasons.iter().any(|x| x == r),
            "DatabaseReady never said {r}: {reasons:?}"
        );
    }

    // The three phase Jobs: names, target image, commands, backoffLimit 4.
    let jobs: Api<Job> = h.api();
    let target = format!("{REPO}:2026.2");
    for (name, needle) in [
        ("c-db-expand", "db sync"),
        ("c-db-migrate", "upgrade check"),
        ("c-db-contract", "db online_data_migrations"),
    ] {
        let job = jobs.get(name).await?;
        ensure!(
            job.spec.as_ref().and_then(|s| s.backoff_limit) == Some(4),
            "{name} backoffLimit"
        );
        let c = container(&job)?;
        ensure!(
            c.image.as_deref() == Some(target.as_str()),
            "{name} image {:?}",
            c.image
        );
        let command = c.command.unwrap_or_default().join(" ");
        ensure!(
            command.contains(needle) && command.contains("--config-dir /etc/cinder/cinder.conf.d"),
            "{name}: {command}"
        );
    }
    let migrate = container(&jobs.get("c-db-migrate").await?)?
        .command
        .unwrap_or_default()
        .join(" ");
    ensure!(
        migrate.contains("cinder-status upgrade check exit $rc")
            && migrate.contains("case $rc in 0|1|2)")
            && migrate.contains("exit 0 ;;"),
        "{migrate}"
    );

    // Events in order.
    let events = h.events_for("c").await?;
    let sequence = [
        "UpgradeInitiated",
        "ExpandComplete",
        "MigrateComplete",
        "UpgradeCheckCompleted",
        "DeploymentRolloutComplete",
        "UpgradeComplete",
    ];
    let mut last = None;
    for reason in sequence {
        let at = event_index(&events, reason).with_context(|| format!("no {reason} event"))?;
        ensure!(last.is_none_or(|l| at > l), "{reason} out of order");
        ensure!(
            events[at].type_.as_deref() == Some("Normal"),
            "{reason} is Normal"
        );
        last = Some(at);
    }
    let in_progress = events
        .iter()
        .filter(|e| {
            e.reason
                .as_deref()
                .is_some_and(|r| r.ends_with("InProgress"))
        })
        .count();
    ensure!(in_progress == 0, "in-progress states emit no events");

    // Each back end drained before each of its two restarts, and given back:
    // disabled (the other back end takes new volumes), on its own host.
    let drained: Vec<&str> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("HostDrained"))
        .filter_map(|e| e.note.as_deref())
        .collect();
    for backend in ["lvm", "nfs"] {
        let workload = format!("c-volume-{backend}");
        let n = drained
            .iter()
            .filter(|m| m.starts_with(&format!("{workload}: ")))
            .count();
        ensure!(n == 2, "{workload} drained {n} times: {drained:?}");
        let drain = container(&jobs.get(&format!("c-drain-{workload}")).await?)?
            .command
            .unwrap_or_default()
            .join(" ");
        ensure!(
            drain.contains(&format!("drain --api http://c.{}.svc:8776", h.name()))
                && drain.contains(&format!("--host {workload}@{backend}"))
                && drain.ends_with("--quiet 3 --disable"),
            "{drain}"
        );
        let returned = jobs.get(&format!("c-undrain-{workload}")).await?;
        ensure!(
            returned.status.as_ref().and_then(|s| s.succeeded) == Some(1),
            "{workload} given back: {:?}",
            returned.status
        );
    }

    // The roll: target image in order, each after the previous completed.
    let first_target: Vec<String> = {
        let mut seen = Vec::new();
        for (name, image, _) in rolls.changes() {
            if image == target && !seen.contains(&name) {
                seen.push(name);
            }
        }
        seen
    };
    ensure!(first_target == order, "roll order {first_target:?}");
    ensure!(
        rolls.violations().is_empty(),
        "gating violated: {:?}",
        rolls.violations()
    );
    // The second roll: scheduler, volumes and backup change again (annotation), the API does not.
    let changes = rolls.changes();
    for name in ["c-scheduler", "c-volume-lvm", "c-volume-nfs", "c-backup"] {
        let n = changes
            .iter()
            .filter(|(n, image, _)| n == name && *image == target)
            .count();
        ensure!(n == 2, "{name} rolled {n} times on the target image");
    }
    ensure!(
        changes.iter().filter(|(n, ..)| n == "c").count() == 1,
        "the API rolls once"
    );
    h.finish().await;
    Ok(())
}

async fn check_exit(code: i32) -> Result<()> {
    let h = installed(&format!("check{code}"), "2026.1", &[]).await?;
    let message = format!("cinder-status upgrade check exit {code}");
    let behaviour = if code <= 2 {
        Behaviour::succeed_with_message(message)
    } else {
        Behaviour::always_exit(code, message)
    };
    h.env
        .scenarios()
        .add(PodSelector::workload(h.name(), "c-db-migrate"), behaviour);
    h.bump("c", "2026.2").await?;
    if code <= 2 {
        h.wait_installed("c", "2026.2").await?;
        let events = h.events_for("c").await?;
        let expected = if code == 0 {
            "UpgradeCheckCompleted"
        } else {
            "UpgradeCheckWarnings"
        };
        let reports: Vec<&Event> = events
            .iter()
            .filter(|e| {
                e.reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with("UpgradeCheck"))
            })
            .collect();
        ensure!(
            reports.len() == 1 && reports[0].reason.as_deref() == Some(expected),
            "exit {code}: {:?}",
            reports.iter().map(|e| &e.reason).collect::<Vec<_>>()
        );
        let kind = if code == 0 { "Normal" } else { "Warning" };
        ensure!(reports[0].type_.as_deref() == Some(kind));
        let cinder = h.api::<Cinder>().get("c").await?;
        let uid = h.api::<Job>().get("c-db-migrate").await?.metadata.uid;
        ensure!(
            cinder
                .metadata
                .annotations
                .and_then(|a| a.get("cinder.c5c3.io/last-upgrade-check-job-uid").cloned())
                == uid
        );
    } else {
        h.wait_condition("c", "DatabaseReady", "False", "MigrateFailed")
            .await?;
        let c = h.api::<Cinder>().get("c").await?;
        ensure!(c.status.map(|s| s.installed_release) == Some("2026.1".into()));
    }
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn upgrade_check_exit_0_completes() -> Result<()> {
    check_exit(0).await
}

#[tokio::test]
async fn upgrade_check_exit_1_warns() -> Result<()> {
    check_exit(1).await
}

#[tokio::test]
async fn upgrade_check_exit_2_warns_and_does_not_wedge() -> Result<()> {
    check_exit(2).await
}

#[tokio::test]
async fn upgrade_check_exit_3_fails_migrate() -> Result<()> {
    check_exit(3).await
}

async fn phase_job_fails(suffix: &str, reason: &str) -> Result<()> {
    let h = installed(&format!("fail-{suffix}"), "2026.1", &[]).await?;
    let rule = h.env.scenarios().add(
        PodSelector::workload(h.name(), &format!("c-{suffix}")),
        Behaviour::always_exit(2, "errors and no progress"),
    );
    h.bump("c", "2026.2").await?;
    let failed = h
        .wait_condition("c", "DatabaseReady", "False", reason)
        .await?;
    let status = failed.status.context("status")?;
    ensure!(status.installed_release == "2026.1" && status.target_release == "2026.2");
    let message = status
        .conditions
        .iter()
        .find(|c| c.type_ == "DatabaseReady")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(
        message.contains("2026.1 → 2026.2") && message.contains("delete the Job"),
        "{message}"
    );
    // The operator reacts to the Job controller's verdict (FailureTarget), which
    // may come before the last failure is counted: wait for the count.
    let jobs: Api<Job> = h.api();
    until(
        &jobs,
        &format!("c-{suffix}"),
        TIMEOUT,
        "five failed pods counted",
        |j: &Job| j.status.as_ref().and_then(|s| s.failed) == Some(5),
    )
    .await?;
    h.wait_event("c", reason).await?;
    let types = h.event_types("c", reason).await?;
    ensure!(
        types == ["Warning"],
        "one Warning {reason}, not one per retry: {types:?}"
    );

    // Recovery: fix the cause, delete the failed Job; the phase resumes.
    h.env.scenarios().remove(rule);
    let jobs: Api<Job> = h.api();
    jobs.delete(
        &format!("c-{suffix}"),
        &kube::api::DeleteParams::background(),
    )
    .await?;
    h.wait_installed("c", "2026.2").await?;
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn failing_expand_job_fails_the_phase_and_recovers() -> Result<()> {
    phase_job_fails("db-expand", "ExpandFailed").await
}

#[tokio::test]
async fn failing_contract_job_fails_the_phase_and_recovers() -> Result<()> {
    phase_job_fails("db-contract", "ContractFailed").await
}

#[tokio::test]
async fn skip_level_is_refused_with_a_reason() -> Result<()> {
    let h = installed("skip", "2026.1", &[]).await?;
    h.bump("c", "2027.1").await?;
    let c = h
        .wait_condition("c", "DatabaseReady", "False", "UpgradePathInvalid")
        .await?;
    ensure!(
        c.status
            .as_ref()
            .is_some_and(|s| s.upgrade_phase == CinderUpgradePhase::None)
    );
    ensure!(h.api::<Job>().get_opt("c-db-expand").await?.is_none());
    h.wait_event("c", "UpgradePathInvalid").await?;
    let types = h.event_types("c", "UpgradePathInvalid").await?;
    ensure!(types == ["Warning"], "{types:?}");
    h.finish().await;
    Ok(())
}

async fn target_changed_then(revert_to: &str) -> Result<()> {
    let h = installed(
        &format!("target-{}", revert_to.replace('.', "-")),
        "2026.1",
        &[],
    )
    .await?;
    h.env.scenarios().add(
        PodSelector::workload(h.name(), "c-db-expand"),
        Behaviour::default().with_run_time(Duration::from_secs(3)),
    );
    h.bump("c", "2026.2").await?;
    h.wait_phase("c", CinderUpgradePhase::Expanding).await?;
    h.bump("c", "2027.1").await?;
    let held = h
        .wait_condition("c", "DatabaseReady", "False", "UpgradeTargetChanged")
        .await?;
    ensure!(held.status.as_ref().is_some_and(
        |s| s.upgrade_phase == CinderUpgradePhase::Expanding && s.target_release == "2026.2"
    ));
    // The expand Job finishes meanwhile; the upgrade still must not advance.
    let jobs: Api<Job> = h.api();
    until(
        &jobs,
        "c-db-expand",
        TIMEOUT,
        "expand complete",
        |j: &Job| j.status.as_ref().and_then(|s| s.succeeded) == Some(1),
    )
    .await?;
    ensure!(
        jobs.get_opt("c-db-migrate").await?.is_none(),
        "a held upgrade advanced"
    );
    h.bump("c", revert_to).await?;
    if revert_to == "2026.2" {
        h.wait_installed("c", "2026.2").await?;
    } else {
        h.wait_installed("c", "2026.1").await?;
        ensure!(
            h.event_reasons("c")
                .await?
                .iter()
                .any(|r| r == "UpgradeAborted")
        );
    }
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn changed_target_holds_then_continues_when_reverted_to_target() -> Result<()> {
    target_changed_then("2026.2").await
}

#[tokio::test]
async fn changed_target_holds_then_aborts_when_reverted_to_installed() -> Result<()> {
    target_changed_then("2026.1").await
}

async fn abort_in(phase: CinderUpgradePhase) -> Result<()> {
    let h = installed(
        &format!("abort-{phase:?}").to_lowercase(),
        "2026.1",
        &["lvm"],
    )
    .await?;
    let scenarios = h.env.scenarios();
    match phase {
        CinderUpgradePhase::Expanding => scenarios.add(
            PodSelector::workload(h.name(), "c-db-expand"),
            Behaviour::hang(),
        ),
        CinderUpgradePhase::Migrating => scenarios.add(
            PodSelector::workload(h.name(), "c-db-migrate"),
            Behaviour::hang(),
        ),
        _ => scenarios.add(
            PodSelector::workload(h.name(), "c-backup").with_image_containing(":2026.2"),
            Behaviour::hang(),
        ),
    };
    h.bump("c", "2026.2").await?;
    h.wait_phase("c", phase).await?;
    if phase != CinderUpgradePhase::RollingUpdate {
        // The schema phases run while every service stays on the installed release (C4).
        let images = deployment_images(&h).await?;
        ensure!(
            images.iter().all(|(_, i)| *i == format!("{REPO}:2026.1")),
            "a workload moved during {phase:?}: {images:?}"
        );
    }
    if phase == CinderUpgradePhase::RollingUpdate {
        until(
            &h.api::<Cinder>(),
            "c",
            TIMEOUT,
            "rolling backup",
            |c: &Cinder| {
                c.status
                    .as_ref()
                    .is_some_and(|s| s.rolling_workload == "c-backup")
            },
        )
        .await?;
    }
    h.bump("c", "2026.1").await?;
    let jobs: Api<Job> = h.api();
    for name in ["c-db-expand", "c-db-migrate", "c-db-contract"] {
        until_deleted(&jobs, name, TIMEOUT).await?;
    }
    h.wait_installed("c", "2026.1").await?;
    h.wait_event("c", "UpgradeAborted").await?;
    let types = h.event_types("c", "UpgradeAborted").await?;
    ensure!(types == ["Normal"], "{types:?}");
    for (name, image) in deployment_images(&h).await? {
        ensure!(image == format!("{REPO}:2026.1"), "{name} still on {image}");
    }
    h.finish().await;
    Ok(())
}

/// Each workload's name and its pod template's image.
async fn deployment_images(h: &Harness) -> Result<Vec<(String, String)>> {
    Ok(h.workloads()
        .await?
        .into_values()
        .map(|w| (w.name.clone(), w.image()))
        .collect())
}

#[tokio::test]
async fn abort_from_expanding() -> Result<()> {
    abort_in(CinderUpgradePhase::Expanding).await
}

#[tokio::test]
async fn abort_from_migrating() -> Result<()> {
    abort_in(CinderUpgradePhase::Migrating).await
}

#[tokio::test]
async fn abort_from_rolling_update() -> Result<()> {
    abort_in(CinderUpgradePhase::RollingUpdate).await
}

#[tokio::test]
async fn lone_release_bump_with_a_tag_stalls_and_with_a_digest_upgrades() -> Result<()> {
    let h = installed("lone", "2026.1", &[]).await?;
    h.patch_cinder("c", json!({ "spec": { "openStackRelease": "2026.2" } }))
        .await?;
    let c = h
        .wait_condition("c", "DatabaseReady", "False", "ImageReleaseMismatch")
        .await?;
    ensure!(
        c.status
            .is_some_and(|s| s.upgrade_phase == CinderUpgradePhase::None)
    );

    let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let mut manifest = cinder_manifest("d", "2026.1", "x", &[]);
    manifest["spec"]["image"] = json!({ "repository": REPO, "reference": { "digest": digest } });
    h.create_cinder(manifest).await?;
    h.wait_ready("d").await?;
    h.patch_cinder("d", json!({ "spec": { "openStackRelease": "2026.2" } }))
        .await?;
    until(
        &h.api::<Cinder>(),
        "d",
        Duration::from_secs(120),
        "digest upgrade complete",
        |c: &Cinder| {
            c.status.as_ref().is_some_and(|s| {
                s.installed_release == "2026.2" && s.upgrade_phase == CinderUpgradePhase::None
            })
        },
    )
    .await?;
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn year_rollover_upgrade() -> Result<()> {
    let h = installed("rollover", "2026.2", &[]).await?;
    h.bump("c", "2027.1").await?;
    h.wait_installed("c", "2027.1").await?;
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn operator_restarted_at_every_phase_boundary_resumes_without_rerunning_jobs() -> Result<()> {
    let mut h = installed("restart", "2026.1", &["lvm"]).await?;
    // Each phase Job takes a moment, so the restart lands inside the phase.
    for job in ["c-db-expand", "c-db-migrate", "c-db-contract"] {
        h.env.scenarios().add(
            PodSelector::workload(h.name(), job),
            Behaviour::succeed_with_message(CHECK_OK).with_run_time(Duration::from_secs(1)),
        );
    }
    h.env.scenarios().add(
        PodSelector::namespace(h.name()).with_image_containing(":2026.2"),
        Behaviour::default().with_ready_delay(Duration::from_millis(500)),
    );
    h.bump("c", "2026.2").await?;
    let jobs: Api<Job> = h.api();
    let mut uids: BTreeMap<String, Option<String>> = BTreeMap::new();
    for phase in [
        CinderUpgradePhase::Expanding,
        CinderUpgradePhase::Migrating,
        CinderUpgradePhase::RollingUpdate,
        CinderUpgradePhase::Contracting,
    ] {
        h.wait_phase("c", phase).await?;
        h.restart_operator().await?;
        for name in ["c-db-expand", "c-db-migrate", "c-db-contract"] {
            if let Some(job) = jobs.get_opt(name).await? {
                let uid = job.metadata.uid.clone();
                let previous = uids.entry(name.to_string()).or_insert_with(|| uid.clone());
                ensure!(
                    *previous == uid,
                    "{name} was re-created after a restart in {phase:?}"
                );
            }
        }
    }
    h.wait_installed("c", "2026.2").await?;
    let reasons = h.event_reasons("c").await?;
    for once in [
        "UpgradeInitiated",
        "ExpandComplete",
        "MigrateComplete",
        "UpgradeCheckCompleted",
        "UpgradeComplete",
    ] {
        let n = reasons.iter().filter(|r| *r == once).count();
        ensure!(n == 1, "{once} seen {n} times across restarts");
    }
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_rollout_without_progress_is_reported_as_stalled() -> Result<()> {
    let h = Harness::start("stall").await?;
    let mut manifest = cinder_manifest("c", "2026.1", "2026.1", &[]);
    manifest["spec"]["rolloutDeadlineSeconds"] = json!(10);
    h.create_cinder(manifest).await?;
    h.wait_ready("c").await?;
    h.env.scenarios().add(
        PodSelector::workload(h.name(), "c-scheduler").with_image_containing(":2026.2"),
        Behaviour::hang(),
    );
    h.bump("c", "2026.2").await?;
    let stalled = h
        .wait_condition("c", "DeploymentsReady", "False", "RolloutStalled")
        .await?;
    let status = stalled.status.context("status")?;
    ensure!(status.upgrade_phase == CinderUpgradePhase::RollingUpdate);
    ensure!(
        status.rolling_workload == "c-scheduler",
        "rolling {}",
        status.rolling_workload
    );
    h.wait_event("c", "RolloutStalled").await?;
    let events = h.events_for("c").await?;
    let warnings: Vec<&Event> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("RolloutStalled"))
        .collect();
    ensure!(
        warnings.len() == 1 && warnings[0].type_.as_deref() == Some("Warning"),
        "{} stall events",
        warnings.len()
    );
    ensure!(
        h.api::<Job>().get_opt("c-db-contract").await?.is_none(),
        "contract must wait for the roll"
    );
    h.finish().await;
    Ok(())
}

#[tokio::test]
async fn metrics_show_the_phase_and_phase_durations() -> Result<()> {
    let h = installed("metrics", "2026.1", &[]).await?;
    h.env.scenarios().add(
        PodSelector::workload(h.name(), "c-db-expand"),
        Behaviour::hang(),
    );
    h.bump("c", "2026.2").await?;
    h.wait_phase("c", CinderUpgradePhase::Expanding).await?;
    let during = h.scrape().await?;
    let gauge = format!(
        r#"ratchet_upgrade_phase{{service="cinder",namespace="{}",name="c",phase="Expanding"}} 1"#,
        h.name()
    );
    ensure!(
        during.contains("200 OK") && during.contains(&gauge),
        "{during}"
    );
    // Abort: the Expanding phase ends, its duration is recorded, the gauge says none.
    h.bump("c", "2026.1").await?;
    h.wait_installed("c", "2026.1").await?;
    let after = h.scrape().await?;
    let none = format!(
        r#"ratchet_upgrade_phase{{service="cinder",namespace="{}",name="c",phase="none"}} 1"#,
        h.name()
    );
    ensure!(after.contains(&none), "{after}");
    ensure!(
        after.contains(
            r#"ratchet_upgrade_phase_duration_seconds_count{service="cinder",phase="Expanding"}"#
        ),
        "{after}"
    );
    ensure!(after.contains("ratchet_reconciles_total"), "{after}");
    ensure!(
        after.contains("ratchet_webhook_admission_duration_seconds_count"),
        "{after}"
    );
    h.finish().await;
    Ok(())
}

/// Two backup pods: each is drained (disabled under its own name), released
/// and given back before the other, highest ordinal first, in both rolls;
/// the StatefulSet ends with every pod released.
#[tokio::test]
async fn backup_pods_are_drained_one_at_a_time() -> Result<()> {
    let h = Harness::start("backup-pods").await?;
    let mut manifest = cinder_manifest("c", "2026.1", "2026.1", &["lvm"]);
    manifest["spec"]["backup"]["replicas"] = json!(2);
    h.create_cinder(manifest).await?;
    h.wait_ready("c").await?;
    h.env.scenarios().add(
        PodSelector::workload(h.name(), "c-db-migrate"),
        Behaviour::succeed_with_message(CHECK_OK),
    );
    h.bump("c", "2026.2").await?;
    h.wait_installed("c", "2026.2").await?;
    second_roll_done(&h).await?;

    let drained: Vec<String> = h
        .events_for("c")
        .await?
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("HostDrained"))
        .filter_map(|e| e.note)
        .filter(|n| n.starts_with("c-backup"))
        .collect();
    let pods: Vec<&str> = drained.iter().filter_map(|n| n.split(':').next()).collect();
    ensure!(
        pods == ["c-backup-1", "c-backup-0", "c-backup-1", "c-backup-0"],
        "each pod drained once per roll, highest first: {drained:?}"
    );
    let jobs: Api<Job> = h.api();
    for pod in ["c-backup-0", "c-backup-1"] {
        let drain = container(&jobs.get(&format!("c-drain-{pod}")).await?)?
            .command
            .unwrap_or_default()
            .join(" ");
        ensure!(
            drain.contains("--binary cinder-backup")
                && drain.ends_with(&format!("--disable --host {pod}")),
            "{drain}"
        );
        let returned = jobs.get(&format!("c-undrain-{pod}")).await?;
        ensure!(
            returned.status.as_ref().and_then(|s| s.succeeded) == Some(1),
            "{pod} given back: {:?}",
            returned.status
        );
    }
    let sets: Api<k8s_openapi::api::apps::v1::StatefulSet> = h.api();
    let partition = sets
        .get("c-backup")
        .await?
        .spec
        .and_then(|s| s.update_strategy)
        .and_then(|u| u.rolling_update)
        .and_then(|r| r.partition);
    ensure!(partition == Some(0), "every pod released: {partition:?}");
    h.finish().await;
    Ok(())
}

/// `spec.upgrade.maxParallel: 2` over three back ends: two restart side by
/// side while the third and the next role (backup) wait; once they are done
/// the third follows, and the upgrade completes with every back end on the
/// target.
#[tokio::test]
async fn back_ends_roll_up_to_max_parallel_at_once() -> Result<()> {
    let h = Harness::start("max-parallel").await?;
    let backends = ["a", "b", "c"];
    let mut manifest = cinder_manifest("c", "2026.1", "2026.1", &backends);
    manifest["spec"]["upgrade"] = json!({ "maxParallel": 2 });
    h.create_cinder(manifest).await?;
    h.wait_ready("c").await?;
    // New back-end pods never turn Ready: the batch holds where it is.
    let held: Vec<_> = backends
        .iter()
        .map(|b| {
            h.env.scenarios().add(
                PodSelector::workload(h.name(), &format!("c-volume-{b}"))
                    .with_image_containing(":2026.2"),
                Behaviour::hang(),
            )
        })
        .collect();
    h.env.scenarios().add(
        PodSelector::workload(h.name(), "c-db-migrate"),
        Behaviour::succeed_with_message(CHECK_OK),
    );
    h.bump("c", "2026.2").await?;
    let target = format!("{REPO}:2026.2");
    h.wait_workload("c-volume-b", "the batch's second back end", TIMEOUT, |w| {
        w.image() == target
    })
    .await?;
    let images: BTreeMap<String, String> = deployment_images(&h).await?.into_iter().collect();
    ensure!(
        images["c-volume-a"] == target && images["c-volume-b"] == target,
        "two back ends restart side by side: {images:?}"
    );
    ensure!(
        images["c-volume-c"] != target && images["c-backup"] != target,
        "the third back end and the next role wait for the batch: {images:?}"
    );

    // The held pods stay as they are: replaced, they start as any other.
    for rule in held {
        h.env.scenarios().remove(rule);
    }
    // A pod not there yet is created after the rules went, and starts as well.
    let pods: Api<k8s_openapi::api::core::v1::Pod> = h.api();
    for pod in ["c-volume-a-0", "c-volume-b-0"] {
        match pods.delete(pod, &Default::default()).await {
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            other => drop(other?),
        }
    }
    h.wait_installed("c", "2026.2").await?;
    second_roll_done(&h).await?;
    let images: BTreeMap<String, String> = deployment_images(&h).await?.into_iter().collect();
    ensure!(
        backends
            .iter()
            .all(|b| images[&format!("c-volume-{b}")] == target),
        "{images:?}"
    );
    h.finish().await;
    Ok(())
}
