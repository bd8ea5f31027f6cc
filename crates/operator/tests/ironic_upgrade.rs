//! Ironic rolling upgrades on a real control plane with the real Job,
//! Deployment and StatefulSet controllers: the pinned roll (conductors, then
//! APIs), the unpin in the same order, the online data migrations, their exit
//! codes, the abort window and the replica warning.

mod common;

use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use common::{Harness, Log, TIMEOUT};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use ratchet_services::ironic::v1alpha1::{Ironic, IronicUpgradePhase};
use ratchet_testenv::wait::until;
use ratchet_testenv::{Behaviour, PodSelector};
use serde_json::json;

const REPO: &str = "registry.invalid/openstack/ironic";
const PIN_ENV: &str = "OS_DEFAULT__PIN_RELEASE_VERSION";
const PIN_ANNOTATION: &str = "ratchet.c5c3.io/pin-release";

async fn create(h: &Harness, release: &str, replicas: i32) -> Result<()> {
    let manifest =
        ratchet_services::ironic::example_manifest("i", release, REPO, release, replicas);
    let ironic: Ironic = serde_json::from_value(manifest)?;
    h.api::<Ironic>()
        .create(&PostParams::default(), &ironic)
        .await?;
    Ok(())
}

async fn set_release(h: &Harness, release: &str) -> Result<()> {
    let patch = json!({ "spec": { "openStackRelease": release, "image": { "tag": release } } });
    h.api::<Ironic>()
        .patch("i", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

fn condition(i: &Ironic, kind: &str) -> Option<(String, String)> {
    i.status
        .as_ref()?
        .upgrade
        .conditions
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

/// Installed at `release`, Ready, with nothing left to do.
fn settled_at(release: &str) -> impl Fn(&Ironic) -> bool + '_ {
    move |i: &Ironic| {
        i.status.as_ref().is_some_and(|s| {
            s.upgrade.installed_release == release
                && s.upgrade.upgrade_phase == IronicUpgradePhase::None
                && s.upgrade.observed_generation == i.metadata.generation
        }) && condition(i, "Ready").is_some_and(|(s, _)| s == "True")
    }
}

async fn wait_settled(h: &Harness, release: &str) -> Result<Ironic> {
    Ok(until(
        &h.api::<Ironic>(),
        "i",
        Duration::from_secs(120),
        &format!("installed {release} and Ready"),
        settled_at(release),
    )
    .await?)
}

async fn wait_database(h: &Harness, reason: &str) -> Result<Ironic> {
    Ok(until(
        &h.api::<Ironic>(),
        "i",
        TIMEOUT,
        &format!("DatabaseReady reason {reason}"),
        |i: &Ironic| condition(i, "DatabaseReady").is_some_and(|(_, r)| r == reason),
    )
    .await?)
}

async fn wait_phase(h: &Harness, phase: IronicUpgradePhase) -> Result<Ironic> {
    Ok(until(
        &h.api::<Ironic>(),
        "i",
        TIMEOUT,
        &format!("phase {phase:?}"),
        |i: &Ironic| {
            i.status
                .as_ref()
                .is_some_and(|s| s.upgrade.upgrade_phase == phase)
        },
    )
    .await?)
}

/// Installed at 2026.1 with two of each, then upgrading to 2026.2 with the new
/// pods of `workload` never getting ready: the pinned roll waits on it.
async fn held_in_the_pinned_roll(h: &Harness, workload: &str) -> Result<Ironic> {
    create(h, "2026.1", 2).await?;
    wait_settled(h, "2026.1").await?;
    h.env.scenarios().add(
        PodSelector::workload(h.name(), workload).with_image_containing(":2026.2"),
        Behaviour::hang(),
    );
    set_release(h, "2026.2").await?;
    Ok(until(
        &h.api::<Ironic>(),
        "i",
        TIMEOUT,
        &format!("the pinned roll waiting on {workload}"),
        |i: &Ironic| {
            i.status.as_ref().is_some_and(|s| {
                s.upgrade.upgrade_phase == IronicUpgradePhase::PinnedRoll
                    && s.upgrade.rolling_workload == workload
                    && s.pinned_release == "2026.1"
            })
        },
    )
    .await?)
}

fn env_of(template: Option<&PodTemplateSpec>, name: &str) -> Option<String> {
    template?
        .spec
        .as_ref()?
        .containers
        .first()?
        .env
        .as_ref()?
        .iter()
        .find(|e| e.name == name)
        .and_then(|e| e.value.clone())
}

/// One pod's life as seen by a watch, in the watch's (etcd's) order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum PodEvent {
    Created {
        uid: String,
        component: String,
        image: String,
        /// The pin in the pod's configuration (its environment).
        pin: Option<String>,
        /// The pin annotation the controller reads back.
        pin_annotation: Option<String>,
    },
    Ready {
        uid: String,
    },
}

struct PodRecorder {
    events: Log<PodEvent>,
    task: tokio::task::JoinHandle<()>,
}

impl PodRecorder {
    async fn start(api: Api<Pod>) -> Result<PodRecorder> {
        let mut stream = watcher::watcher(api, watcher::Config::default()).boxed();
        // Pods that exist before the recording are not recorded later.
        let mut seen = std::collections::BTreeSet::new();
        loop {
            match tokio::time::timeout(TIMEOUT, stream.next()).await? {
                Some(Ok(watcher::Event::InitApply(pod))) => {
                    seen.insert(pod.metadata.uid.clone().unwrap_or_default());
                }
                Some(Ok(watcher::Event::InitDone)) => break,
                Some(_) => continue,
                None => anyhow::bail!("watch ended"),
            }
        }
        let events: Log<PodEvent> = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = events.clone();
        let task = tokio::spawn(async move {
            let mut ready = seen.clone();
            while let Some(event) = stream.next().await {
                let Ok(watcher::Event::Apply(pod)) = event else {
                    continue;
                };
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                let mut log = sink.lock().unwrap_or_else(|p| p.into_inner());
                if seen.insert(uid.clone()) {
                    let template = PodTemplateSpec {
                        metadata: Some(pod.metadata.clone()),
                        spec: pod.spec.clone(),
                    };
                    let label = |key: &str| {
                        pod.metadata
                            .labels
                            .as_ref()
                            .and_then(|l| l.get(key).cloned())
                            .unwrap_or_default()
                    };
                    log.push(PodEvent::Created {
                        uid: uid.clone(),
                        component: label("app.kubernetes.io/component"),
                        image: pod
                            .spec
                            .as_ref()
                            .and_then(|s| s.containers.first())
                            .and_then(|c| c.image.clone())
                            .unwrap_or_default(),
                        pin: env_of(Some(&template), PIN_ENV),
                        pin_annotation: pod
                            .metadata
                            .annotations
                            .as_ref()
                            .and_then(|a| a.get(PIN_ANNOTATION).cloned()),
                    });
                }
                let is_ready = pod
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
                if is_ready && ready.insert(uid.clone()) {
                    log.push(PodEvent::Ready { uid });
                }
            }
        });
        Ok(PodRecorder { events, task })
    }

    fn events(&self) -> Vec<PodEvent> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for PodRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Pods of one roll: created with this image and pin, by component.
struct Roll {
    /// (uid, index of creation, index of readiness)
    pods: Vec<(String, usize, Option<usize>)>,
}

fn roll(events: &[PodEvent], component: &str, image: &str, pin: Option<&str>) -> Roll {
    let mut pods = Vec::new();
    for (index, event) in events.iter().enumerate() {
        if let PodEvent::Created {
            uid,
            component: c,
            image: i,
            pin: p,
            ..
        } = event
            && c == component
            && i == image
            && p.as_deref() == pin
        {
            let ready = events
                .iter()
                .position(|e| matches!(e, PodEvent::Ready { uid: u } if u == uid));
            pods.push((uid.clone(), index, ready));
        }
    }
    Roll { pods }
}

impl Roll {
    fn first_created(&self) -> Option<usize> {
        self.pods.iter().map(|(_, c, _)| *c).min()
    }

    fn last_ready(&self) -> Option<usize> {
        self.pods.iter().map(|(_, _, r)| *r).max().flatten()
    }

    /// Each pod was created only after the previous one was ready.
    fn one_at_a_time(&self) -> bool {
        self.pods
            .windows(2)
            .all(|w| w[0].2.is_some_and(|ready| ready < w[1].1))
    }
}

fn pinned_template(template: Option<&PodTemplateSpec>) -> Option<String> {
    env_of(template, PIN_ENV)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_upgrade_pins_conductors_then_apis_unpins_in_the_same_order_and_migrates() -> Result<()>
{
    let h = Harness::start("ironic-upgrade").await?;
    create(&h, "2026.1", 2).await?;
    let installed = wait_settled(&h, "2026.1").await?;
    ensure!(
        condition(&installed, "HighlyAvailable") == Some(("True".into(), "EnoughReplicas".into()))
    );
    let conductors: StatefulSet = h.api::<StatefulSet>().get("i-conductor").await?;
    ensure!(
        pinned_template(conductors.spec.as_ref().map(|s| &s.template)).is_none(),
        "a fresh install runs unpinned"
    );
    // Online migrations report "more to do" twice, then finish; the upgrade
    // check warns (exit 1), which the wrapper lets pass.
    h.env.scenarios().add(
        PodSelector::workload(h.name(), "i-online-migrations"),
        Behaviour::fail_times(2, 1, "migrated a batch; more to do"),
    );
    h.env.scenarios().add(
        PodSelector::workload(h.name(), "i-upgrade-check"),
        Behaviour::succeed_with_message("ironic-status upgrade check exit 1"),
    );
    let pods = PodRecorder::start(h.api::<Pod>()).await?;
    let pinned_seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let pinned_task = {
        let sink = pinned_seen.clone();
        let mut stream = watcher::watcher(h.api::<Ironic>(), watcher::Config::default()).boxed();
        tokio::spawn(async move {
            while let Some(event) = stream.next().await {
                let Ok(watcher::Event::Apply(i) | watcher::Event::InitApply(i)) = event else {
                    continue;
                };
                if let Some(s) = i.status {
                    let entry = (s.upgrade.upgrade_phase, s.pinned_release);
                    let mut seen = sink.lock().unwrap_or_else(|p| p.into_inner());
                    if seen.last() != Some(&entry) {
                        seen.push(entry);
                    }
                    // Done once the upgrade's end is recorded: promotion and
                    // Ready can arrive in one write, so the test's own wait may
                    // return before this watch has delivered it.
                    let ended = seen.len() > 1
                        && seen
                            .last()
                            .is_some_and(|(p, _)| *p == IronicUpgradePhase::None);
                    if ended {
                        return;
                    }
                }
            }
        })
    };

    set_release(&h, "2026.2").await?;
    let done = wait_settled(&h, "2026.2").await?;
    tokio::time::timeout(TIMEOUT, pinned_task)
        .await
        .context("the status watch never saw the upgrade end")??;

    let image = format!("{REPO}:2026.2");
    let events = pods.events();
    let pinned_conductors = roll(&events, "conductor", &image, Some("2026.1"));
    let pinned_apis = roll(&events, "api", &image, Some("2026.1"));
    let conductors = roll(&events, "conductor", &image, None);
    let apis = roll(&events, "api", &image, None);
    for (what, r) in [
        ("pinned conductors", &pinned_conductors),
        ("pinned APIs", &pinned_apis),
        ("unpinned conductors", &conductors),
        ("unpinned APIs", &apis),
    ] {
        ensure!(
            r.pods.len() == 2,
            "{what}: {} pods in {events:?}",
            r.pods.len()
        );
    }
    // Every new pod's configuration carries the pin exactly when its annotation does.
    for event in &events {
        if let PodEvent::Created {
            pin,
            pin_annotation,
            ..
        } = event
        {
            ensure!(pin == pin_annotation, "{event:?}");
        }
    }
    // Conductors before APIs, in both rolls; conductors one at a time.
    let before = |a: Option<usize>, b: Option<usize>| a.zip(b).is_some_and(|(a, b)| a < b);
    ensure!(
        before(pinned_conductors.last_ready(), pinned_apis.first_created()),
        "pinned APIs started before every pinned conductor was ready: {events:?}"
    );
    ensure!(
        before(pinned_apis.last_ready(), conductors.first_created()),
        "unpinning started before the pinned roll finished: {events:?}"
    );
    ensure!(
        before(conductors.last_ready(), apis.first_created()),
        "unpinned APIs started before every unpinned conductor was ready: {events:?}"
    );
    ensure!(pinned_conductors.one_at_a_time() && conductors.one_at_a_time());
    ensure!(
        pinned_apis.one_at_a_time() && apis.one_at_a_time(),
        "APIs one at a time too: {events:?}"
    );

    // The pin was in force during the pinned roll only.
    let seen = pinned_seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    ensure!(
        seen.iter()
            .any(|(p, pin)| *p == IronicUpgradePhase::PinnedRoll && pin == "2026.1"),
        "{seen:?}"
    );
    ensure!(
        seen.iter()
            .all(|(p, pin)| pin.is_empty() || *p == IronicUpgradePhase::PinnedRoll),
        "{seen:?}"
    );
    let phases: Vec<IronicUpgradePhase> =
        seen.iter().map(|(p, _)| *p).fold(Vec::new(), |mut v, p| {
            if v.last() != Some(&p) {
                v.push(p);
            }
            v
        });
    ensure!(
        phases
            == [
                IronicUpgradePhase::None,
                IronicUpgradePhase::DatabaseUpgrade,
                IronicUpgradePhase::UpgradeCheck,
                IronicUpgradePhase::PinnedRoll,
                IronicUpgradePhase::Unpinning,
                IronicUpgradePhase::OnlineMigrations,
                IronicUpgradePhase::None,
            ],
        "{phases:?}"
    );
    ensure!(
        done.status
            .as_ref()
            .is_some_and(|s| s.pinned_release.is_empty())
    );

    // Online migrations ran three times: exit 1 twice, then 0.
    let migrations = until(
        &h.api::<Job>(),
        "i-online-migrations",
        TIMEOUT,
        "final counts",
        |j: &Job| j.status.as_ref().is_some_and(|s| s.succeeded == Some(1)),
    )
    .await?;
    let status = migrations.status.context("job status")?;
    ensure!(status.failed == Some(2), "{status:?}");

    // Nothing runs pinned afterwards.
    let conductors: StatefulSet = h.api::<StatefulSet>().get("i-conductor").await?;
    let api: Deployment = h.api::<Deployment>().get("i-api").await?;
    ensure!(pinned_template(conductors.spec.as_ref().map(|s| &s.template)).is_none());
    ensure!(pinned_template(api.spec.as_ref().map(|s| &s.template)).is_none());
    h.wait_event("i", "UpgradeComplete").await?;
    let reasons = h.event_reasons("i").await?;
    let position = |r: &str| reasons.iter().position(|x| x == r);
    ensure!(
        position("UpgradeInitiated") < position("DBUpgradeComplete")
            && position("DBUpgradeComplete") < position("UpgradeCheckComplete")
            && position("UpgradeCheckComplete") < position("PinnedRollComplete")
            && position("PinnedRollComplete") < position("UnpinComplete")
            && position("UnpinComplete") < position("UpgradeComplete")
            && position("UpgradeInitiated").is_some(),
        "{reasons:?}"
    );
    // The shared metrics, labelled with the service.
    let metrics = h.scrape().await?;
    // The check's warning, reported once, as a Warning.
    let events = h.events_for("i").await?;
    let reports: Vec<(Option<&str>, Option<&str>)> = events
        .iter()
        .filter(|e| {
            e.reason
                .as_deref()
                .is_some_and(|r| r.starts_with("UpgradeCheck") && r != "UpgradeCheckComplete")
        })
        .map(|e| (e.reason.as_deref(), e.type_.as_deref()))
        .collect();
    ensure!(
        reports == [(Some("UpgradeCheckWarnings"), Some("Warning"))],
        "{reports:?}"
    );
    for phase in [
        "DatabaseUpgrade",
        "UpgradeCheck",
        "PinnedRoll",
        "Unpinning",
        "OnlineMigrations",
    ] {
        ensure!(
            metrics.contains(&format!(
                "ratchet_upgrade_phase_duration_seconds_count{{service=\"ironic\",phase=\"{phase}\"}} 1"
            )),
            "{phase} duration missing: {metrics}"
        );
    }
    h.finish().await;
    Ok(())
}

/// Installed at 2026.1, then upgraded to 2026.2 while `workload`'s pods behave
/// as `behaviour`, until DatabaseReady says `reason`.
async fn upgrade_failing(
    prefix: &str,
    workload: &str,
    behaviour: Behaviour,
    reason: &str,
) -> Result<(Harness, Ironic)> {
    let h = Harness::start(prefix).await?;
    create(&h, "2026.1", 2).await?;
    wait_settled(&h, "2026.1").await?;
    h.env
        .scenarios()
        .add(PodSelector::workload(h.name(), workload), behaviour);
    set_release(&h, "2026.2").await?;
    let failed = wait_database(&h, reason).await?;
    Ok((h, failed))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn online_migrations_exit_2_fails_because_the_database_is_not_compatible() -> Result<()> {
    let (h, failed) = upgrade_failing(
        "ironic-olm-2",
        "i-online-migrations",
        Behaviour::always_exit(2, "database not compatible"),
        "DatabaseNotCompatible",
    )
    .await?;
    let status = failed.status.context("status")?;
    ensure!(status.upgrade.upgrade_phase == IronicUpgradePhase::OnlineMigrations);
    ensure!(status.upgrade.installed_release == "2026.1", "not promoted");
    h.wait_event("i", "DatabaseNotCompatible").await?;
    // Exit 2 is final: one pod, no retries. The Job controller gives its
    // verdict (FailureTarget, which Ratchet acts on) before it counts the pod.
    let job = until(
        &h.api::<Job>(),
        "i-online-migrations",
        TIMEOUT,
        "its failed pod counted",
        |job: &Job| job.status.as_ref().and_then(|s| s.failed).is_some(),
    )
    .await?;
    ensure!(job.status.and_then(|s| s.failed) == Some(1));
    h.finish().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_check_that_errors_fails_the_phase_before_any_pin() -> Result<()> {
    let (h, failed) = upgrade_failing(
        "ironic-check-255",
        "i-upgrade-check",
        Behaviour::always_exit(255, "ironic-status upgrade check exit 255"),
        "UpgradeCheckFailed",
    )
    .await?;
    let status = failed.status.context("status")?;
    ensure!(status.upgrade.upgrade_phase == IronicUpgradePhase::UpgradeCheck);
    ensure!(status.upgrade.installed_release == "2026.1" && status.pinned_release.is_empty());
    // Events leave after the status write: wait for it before counting.
    h.wait_event("i", "UpgradeCheckFailed").await?;
    let failures: Vec<Option<String>> = h
        .events_for("i")
        .await?
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("UpgradeCheckFailed"))
        .map(|e| e.type_)
        .collect();
    ensure!(failures == [Some("Warning".to_string())], "{failures:?}");
    // Nothing rolled: the conductors still run the installed release, unpinned.
    let conductors: StatefulSet = h.api::<StatefulSet>().get("i-conductor").await?;
    let template = conductors.spec.as_ref().map(|s| &s.template);
    ensure!(pinned_template(template).is_none());
    let image = template
        .and_then(|t| t.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone());
    ensure!(
        image.as_deref() == Some(&format!("{REPO}:2026.1")[..]),
        "{image:?}"
    );
    h.finish().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_check_stops_the_upgrade_before_any_pin_naming_the_check() -> Result<()> {
    // What the shared wrapper writes when a check's result is Failure (the
    // wrapper itself runs for real in the phase machine's unit tests).
    let said = "ironic-status upgrade check exit 2; failed: Hardware Types and Interfaces";
    let (h, failed) = upgrade_failing(
        "ironic-check-2",
        "i-upgrade-check",
        Behaviour::always_exit(2, said),
        "UpgradeCheckFailed",
    )
    .await?;
    let status = failed.status.context("status")?;
    ensure!(status.upgrade.upgrade_phase == IronicUpgradePhase::UpgradeCheck);
    ensure!(status.upgrade.installed_release == "2026.1" && status.pinned_release.is_empty());
    let message = status
        .upgrade
        .conditions
        .iter()
        .find(|c| c.type_ == "DatabaseReady")
        .map(|c| c.message.clone())
        .context("DatabaseReady")?;
    ensure!(
        message.contains("failed: Hardware Types and Interfaces"),
        "{message}"
    );
    // A failed check fails again until its cause is fixed: one pod, no retries.
    // The operator reads the pod's end before the Job controller counts it.
    let job = until(
        &h.api::<Job>(),
        "i-upgrade-check",
        TIMEOUT,
        "the check Job counting its failed pod",
        |job: &Job| job.status.as_ref().and_then(|s| s.failed).is_some(),
    )
    .await?;
    ensure!(job.status.and_then(|s| s.failed) == Some(1));
    let conductors: StatefulSet = h.api::<StatefulSet>().get("i-conductor").await?;
    ensure!(pinned_template(conductors.spec.as_ref().map(|s| &s.template)).is_none());
    h.finish().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_upgrade_exit_2_names_the_incomplete_online_migrations() -> Result<()> {
    let (h, failed) = upgrade_failing(
        "ironic-dbup-2",
        "i-db-upgrade",
        Behaviour::always_exit(2, "online migrations incomplete"),
        "OnlineMigrationsIncomplete",
    )
    .await?;
    let (_, message) = failed
        .status
        .as_ref()
        .and_then(|s| {
            s.upgrade
                .conditions
                .iter()
                .find(|c| c.type_ == "DatabaseReady")
        })
        .map(|c| (c.reason.clone(), c.message.clone()))
        .context("DatabaseReady")?;
    ensure!(
        message.contains("previous release's online data migrations were never completed"),
        "{message}"
    );
    ensure!(
        failed
            .status
            .is_some_and(|s| s.upgrade.upgrade_phase == IronicUpgradePhase::DatabaseUpgrade)
    );
    // No workload moved.
    let api: Deployment = h.api::<Deployment>().get("i-api").await?;
    let image = api
        .spec
        .and_then(|s| s.template.spec)
        .and_then(|p| p.containers.first().and_then(|c| c.image.clone()));
    ensure!(image.as_deref() == Some(&format!("{REPO}:2026.1")[..]));
    h.finish().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_during_the_pinned_roll_restores_the_installed_release_unpinned() -> Result<()> {
    let h = Harness::start("ironic-abort").await?;
    // New API pods never become ready: the pinned roll stops at the API.
    held_in_the_pinned_roll(&h, "i-api").await?;
    set_release(&h, "2026.1").await?;
    let aborted = wait_settled(&h, "2026.1").await?;
    ensure!(
        aborted
            .status
            .is_some_and(|s| s.pinned_release.is_empty() && s.upgrade.target_release.is_empty())
    );
    h.wait_event("i", "UpgradeAborted").await?;
    let conductors: StatefulSet = until(
        &h.api::<StatefulSet>(),
        "i-conductor",
        TIMEOUT,
        "conductors back on 2026.1",
        |s: &StatefulSet| {
            let t = s.spec.as_ref().map(|s| &s.template);
            t.and_then(|t| t.spec.as_ref())
                .and_then(|p| p.containers.first())
                .and_then(|c| c.image.as_deref())
                == Some(&format!("{REPO}:2026.1")[..])
        },
    )
    .await?;
    ensure!(
        pinned_template(conductors.spec.as_ref().map(|s| &s.template)).is_none(),
        "the installed release runs unpinned"
    );
    let api: Deployment = h.api::<Deployment>().get("i-api").await?;
    ensure!(pinned_template(api.spec.as_ref().map(|s| &s.template)).is_none());
    for job in ["i-db-upgrade", "i-upgrade-check"] {
        ratchet_testenv::wait::until_deleted(&h.api::<Job>(), job, TIMEOUT).await?;
    }
    h.finish().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_during_unpinning_is_refused_naming_the_state() -> Result<()> {
    let h = Harness::start("ironic-late-revert").await?;
    create(&h, "2026.1", 2).await?;
    wait_settled(&h, "2026.1").await?;
    // Unpinned new conductors never become ready: unpinning stops there.
    h.env.scenarios().add(
        PodSelector::workload(h.name(), "i-conductor")
            .with_image_containing(":2026.2")
            .with_annotation(PIN_ANNOTATION, None),
        Behaviour::hang(),
    );
    set_release(&h, "2026.2").await?;
    wait_phase(&h, IronicUpgradePhase::Unpinning).await?;
    set_release(&h, "2026.1").await?;
    let refused = wait_database(&h, "AbortNotSafe").await?;
    let status = refused.status.context("status")?;
    ensure!(status.upgrade.upgrade_phase == IronicUpgradePhase::Unpinning);
    ensure!(
        status.upgrade.installed_release == "2026.1" && status.upgrade.target_release == "2026.2"
    );
    let message = status
        .upgrade
        .conditions
        .iter()
        .find(|c| c.type_ == "DatabaseReady")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(message.contains("cannot abort in Unpinning"), "{message}");
    h.wait_event("i", "AbortNotSafe").await?;
    h.finish().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fewer_than_two_replicas_is_a_warning_not_a_refusal() -> Result<()> {
    let h = Harness::start("ironic-replicas").await?;
    create(&h, "2026.1", 1).await?;
    let installed = wait_settled(&h, "2026.1").await?;
    ensure!(
        condition(&installed, "HighlyAvailable") == Some(("False".into(), "TooFewReplicas".into()))
    );
    h.wait_event("i", "TooFewReplicas").await?;
    // Scaling up clears it.
    h.api::<Ironic>()
        .patch(
            "i",
            &PatchParams::default(),
            &Patch::Merge(
                &json!({ "spec": { "api": { "replicas": 2 }, "conductor": { "replicas": 2 } } }),
            ),
        )
        .await?;
    until(
        &h.api::<Ironic>(),
        "i",
        TIMEOUT,
        "HighlyAvailable",
        |i: &Ironic| condition(i, "HighlyAvailable").is_some_and(|(s, _)| s == "True"),
    )
    .await?;
    let warnings = h
        .event_reasons("i")
        .await?
        .into_iter()
        .filter(|r| r == "TooFewReplicas")
        .count();
    ensure!(warnings == 1, "announced once: {warnings}");
    h.finish().await;
    Ok(())
}

/// Reverting the template does not make a StatefulSet replace a pod that never
/// got ready (Kubernetes' "forced rollback"): Ratchet replaces it, so an abort
/// during a stuck conductor roll comes back without anyone deleting pods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_during_a_stuck_conductor_roll_replaces_the_stuck_pod() -> Result<()> {
    let h = Harness::start("ironic-stuck").await?;
    held_in_the_pinned_roll(&h, "i-conductor").await?;
    // The new conductor pod exists and hangs.
    until(
        &h.api::<Pod>(),
        "i-conductor-1",
        TIMEOUT,
        "a conductor pod on the target image",
        |p: &Pod| {
            p.spec
                .as_ref()
                .and_then(|s| s.containers.first())
                .and_then(|c| c.image.as_deref())
                .is_some_and(|i| i.ends_with(":2026.2"))
        },
    )
    .await?;

    set_release(&h, "2026.1").await?;
    wait_settled(&h, "2026.1").await?;
    h.wait_event("i", "StuckPodReplaced").await?;
    let conductor: StatefulSet = h.api::<StatefulSet>().get("i-conductor").await?;
    let status = conductor.status.context("conductor status")?;
    ensure!(
        status.ready_replicas == Some(2) && status.current_revision == status.update_revision,
        "{status:?}"
    );
    h.finish().await;
    Ok(())
}

/// A StatefulSet reports no stalls itself: the conductors' roll is judged from
/// their pods against `rolloutDeadlineSeconds`, like the API's Deployment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conductor_roll_without_progress_is_reported_as_stalled_and_resumes() -> Result<()> {
    let h = Harness::start("ironic-stall").await?;
    let mut manifest = ratchet_services::ironic::example_manifest("i", "2026.1", REPO, "2026.1", 2);
    manifest["spec"]["rolloutDeadlineSeconds"] = json!(10);
    h.api::<Ironic>()
        .create(&PostParams::default(), &serde_json::from_value(manifest)?)
        .await?;
    wait_settled(&h, "2026.1").await?;
    let hang = h.env.scenarios().add(
        PodSelector::workload(h.name(), "i-conductor").with_image_containing(":2026.2"),
        Behaviour::hang(),
    );
    set_release(&h, "2026.2").await?;
    let stalled = until(
        &h.api::<Ironic>(),
        "i",
        TIMEOUT,
        "DeploymentsReady False RolloutStalled",
        |i: &Ironic| {
            condition(i, "DeploymentsReady") == Some(("False".into(), "RolloutStalled".into()))
        },
    )
    .await?;
    let status = stalled.status.context("status")?;
    ensure!(status.upgrade.upgrade_phase == IronicUpgradePhase::PinnedRoll);
    ensure!(
        status.upgrade.rolling_workload == "i-conductor",
        "{}",
        status.upgrade.rolling_workload
    );
    h.wait_event("i", "RolloutStalled").await?;
    let api: Deployment = h.api::<Deployment>().get("i-api").await?;
    ensure!(
        env_of(api.spec.as_ref().map(|s| &s.template), PIN_ENV).is_none(),
        "the API waits for the conductors"
    );

    // The cause fixed and the stuck pod replaced, the roll goes on.
    h.env.scenarios().remove(hang);
    let pods: Api<Pod> = h.api();
    pods.delete("i-conductor-1", &Default::default()).await?;
    wait_settled(&h, "2026.2").await?;
    let warnings = h
        .event_reasons("i")
        .await?
        .into_iter()
        .filter(|r| r == "RolloutStalled")
        .count();
    ensure!(warnings == 1, "announced once: {warnings}");
    h.finish().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_and_the_lockstep_guard_hold_for_ironic_and_a_patch_bump_resyncs_first()
-> Result<()> {
    let h = Harness::start("ironic-guards").await?;
    create(&h, "2026.2", 2).await?;
    wait_settled(&h, "2026.2").await?;

    // Every Ironic pod, conductors, API and the sync Job, runs as Ironic's uid.
    let templates = [
        h.api::<StatefulSet>()
            .get("i-conductor")
            .await?
            .spec
            .map(|s| s.template),
        h.api::<Deployment>()
            .get("i-api")
            .await?
            .spec
            .map(|s| s.template),
        h.api::<Job>()
            .get("i-db-sync")
            .await?
            .spec
            .map(|s| s.template),
    ];
    for template in templates {
        let security = template
            .and_then(|t| t.spec)
            .and_then(|p| p.security_context)
            .unwrap_or_default();
        ensure!(
            (
                security.run_as_user,
                security.run_as_group,
                security.fs_group
            ) == (Some(42422), Some(42422), Some(42422))
                && security.run_as_non_root == Some(true),
            "{security:?}"
        );
    }

    // A downgrade is refused at admission, as for Cinder.
    let refused = h
        .api::<Ironic>()
        .patch(
            "i",
            &PatchParams::default(),
            &Patch::Merge(
                &json!({ "spec": { "openStackRelease": "2026.1", "image": { "tag": "2026.1" } } }),
            ),
        )
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    ensure!(
        refused.contains("admission webhook")
            && refused.contains("older than the installed release 2026.2"),
        "{refused}"
    );
    // So is a pin in extraConfig: it would outlive the unpinning.
    let refused = h
        .api::<Ironic>()
        .patch(
            "i",
            &PatchParams::default(),
            &Patch::Merge(
                &json!({ "spec": { "extraConfig": { "DEFAULT": { "pin_release_version": "2026.1" } } } }),
            ),
        )
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    ensure!(
        refused.contains("spec.extraConfig.DEFAULT.pin_release_version: set by Ratchet"),
        "{refused}"
    );

    // An image tag naming another release stalls under ImageReleaseMismatch.
    h.api::<Ironic>()
        .patch(
            "i",
            &PatchParams::default(),
            &Patch::Merge(&json!({ "spec": { "image": { "tag": "2027.1" } } })),
        )
        .await?;
    wait_database(&h, "ImageReleaseMismatch").await?;
    h.wait_event("i", "ImageReleaseMismatch").await?;

    // A patch bump (same release, new image) re-runs the schema sync on the new
    // image before any workload moves, and stays unpinned.
    let sync_done = h.env.scenarios().add(
        PodSelector::workload(h.name(), "i-db-sync").with_image_containing(":2026.2-p1"),
        Behaviour::hang(),
    );
    h.api::<Ironic>()
        .patch(
            "i",
            &PatchParams::default(),
            &Patch::Merge(&json!({ "spec": { "image": { "tag": "2026.2-p1" } } })),
        )
        .await?;
    wait_database(&h, "DBSyncInProgress").await?;
    let api: Deployment = h.api::<Deployment>().get("i-api").await?;
    let image = api
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone());
    ensure!(
        image.as_deref() == Some(&format!("{REPO}:2026.2")[..]),
        "no workload moves before the sync: {image:?}"
    );
    h.env.scenarios().remove(sync_done);
    // The condition can be written before the Job is: wait for the new one,
    // and for the Job controller to count its pod. A Job deleted while its
    // pod's creation is in flight leaves the controller expecting that pod
    // under the Job's name, and a successor of the same name gets no pod for
    // five minutes (kubernetes/kubernetes#131917).
    until(
        &h.api::<Job>(),
        "i-db-sync",
        TIMEOUT,
        "the patch bump's db sync Job, its pod counted",
        |job: &Job| {
            let image = job
                .spec
                .as_ref()
                .and_then(|s| s.template.spec.as_ref())
                .and_then(|p| p.containers.first())
                .and_then(|c| c.image.as_deref());
            let active = job.status.as_ref().and_then(|s| s.active).unwrap_or(0);
            image.is_some_and(|i| i.ends_with(":2026.2-p1")) && active > 0
        },
    )
    .await?;
    // The hanging pod never finishes; replacing the Job lets the new rule apply.
    h.api::<Job>()
        .delete("i-db-sync", &kube::api::DeleteParams::background())
        .await?;
    let bumped = until(
        &h.api::<Deployment>(),
        "i-api",
        // A fresh sync Job first: slow when real clouds share the cores.
        Duration::from_secs(300),
        "API on the patched image",
        |d: &Deployment| {
            d.spec
                .as_ref()
                .and_then(|s| s.template.spec.as_ref())
                .and_then(|p| p.containers.first())
                .and_then(|c| c.image.as_deref())
                == Some(&format!("{REPO}:2026.2-p1")[..])
        },
    )
    .await;
    let bumped = match bumped {
        Ok(bumped) => bumped,
        // Say what held the sync.
        Err(timeout) => {
            let ironic = h.api::<Ironic>().get("i").await?;
            let jobs: Vec<String> = h
                .api::<Job>()
                .list(&Default::default())
                .await?
                .iter()
                .map(|j| {
                    format!(
                        "{:?} {:?} {:?}",
                        j.metadata.name, j.metadata.annotations, j.status
                    )
                })
                .collect();
            bail!(
                "{timeout}\nIronic's status: {:#?}\nJobs: {jobs:#?}",
                ironic.status
            );
        }
    };
    ensure!(pinned_template(bumped.spec.as_ref().map(|s| &s.template)).is_none());
    let done = wait_settled(&h, "2026.2").await?;
    ensure!(
        done.status
            .is_some_and(|s| s.upgrade.upgrade_phase == IronicUpgradePhase::None)
    );
    h.finish().await;
    Ok(())
}
