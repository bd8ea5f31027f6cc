//! Ironic for real: ironic 35.1.0 (2026.1) upgraded to 39.0.0 (2026.2) with
//! every Job and workload a real process on the process kubelet, against a real
//! MariaDB and RabbitMQ, while a client keeps using the API. Seed 002's table is
//! checked from what Ironic itself reports: its API's version document and its
//! database. Nodes use the `fake-hardware` type. The upgrade under load runs
//! authenticated through a real Keystone (the client an operator with a
//! system-scoped token, as Ironic's node enrolment asks); the failed-check
//! test runs with `noauth`, chosen explicitly. Needs root (the process kubelet).

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, ensure};
use common::real::{
    STEADY_WINDOW, installed, keystone_beside, log_lines_naming, percentile, prepare_images,
    registered, rows, secret,
};
use common::{Harness, WorkloadChange};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use ratchet_services::ironic::resource::{
    REAL_POWER_INTERFACES, real_example_manifest, real_interfaces,
};
use ratchet_services::ironic::v1alpha1::{Ironic, IronicUpgradePhase};
use ratchet_services::ironic::{CONFIG_DIR, SERVICE, model};
use ratchet_services::keystone::resource::authenticating;
use ratchet_services::keystone::v1alpha1::Keystone;
use ratchet_testenv::ClientNetns;
use ratchet_testenv::backing::{self, Backing};
use ratchet_testenv::load::auth::{Credentials, Scope};
use ratchet_testenv::load::ironic::{self, IronicLoadOptions};
use ratchet_testenv::load::{self, cluster_address};
use ratchet_testenv::wait::until;
use serde_json::json;

const NAME: &str = "ironic";
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(900);
/// The API's highest microversion: 35.1.0's, which 39.0.0 keeps while pinned
/// to 2026.1, and 39.0.0's own (`ironic/common/release_mappings.py`).
const PINNED_MAX: &str = "1.111";
const UNPINNED_MAX: &str = "1.115";
/// `[conductor] heartbeat_timeout`: a conductor whose row is older is dead to Ironic.
const HEARTBEAT_TIMEOUT_SECONDS: u32 = 60;
const PIN_ANNOTATION: &str = "ratchet.c5c3.io/pin-release";
const KEYSTONE: &str = "keystone";
const ADMIN_PASSWORD: &str = "ratchet-admin-test";
const IRONIC_PASSWORD: &str = "ratchet-ironic-test";
/// `[fake] power_delay`: each power switch keeps its conductor busy this long,
/// so one is in a conductor's hands whenever a conductor stops.
const POWER_DELAY_SECONDS: u32 = 8;
/// Nodes whose power the client keeps switching across the rolls.
const POWER_SWITCHED_NODES: usize = 2;

fn manifest(release: &str, apis: i32, conductors: i32) -> serde_json::Value {
    real_example_manifest(NAME, release, "ratchet.test/ironic", apis, conductors)
}

fn ready(i: &Ironic) -> bool {
    i.status.as_ref().is_some_and(|s| {
        s.upgrade
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

/// What a background task saw, with the time it saw it.
type Seen<T> = Arc<Mutex<Vec<(SystemTime, T)>>>;

fn seen<T: Clone>(log: &Seen<T>) -> Vec<(SystemTime, T)> {
    log.lock().map(|l| l.clone()).unwrap_or_default()
}

/// Records every (phase, pinned release) the Ironic passes through.
fn record_status(
    h: &Harness,
) -> (
    Seen<(IronicUpgradePhase, String)>,
    tokio::task::JoinHandle<()>,
) {
    let log: Seen<(IronicUpgradePhase, String)> = Arc::default();
    let (into, api) = (log.clone(), h.api::<Ironic>());
    let task = tokio::spawn(async move {
        let mut stream = watcher::watcher(api, watcher::Config::default()).boxed();
        while let Some(event) = stream.next().await {
            let Ok(watcher::Event::Apply(ironic) | watcher::Event::InitApply(ironic)) = event
            else {
                continue;
            };
            let Some(status) = ironic.status else {
                continue;
            };
            let now = (status.upgrade.upgrade_phase, status.pinned_release);
            if let Ok(mut log) = into.lock()
                && log.last().is_none_or(|(_, last)| *last != now)
            {
                log.push((SystemTime::now(), now));
            }
        }
    });
    (log, task)
}

/// Records every change of a workload's pod template pin: (workload, pin).
fn record_pins(h: &Harness) -> (Seen<(String, Option<String>)>, tokio::task::JoinHandle<()>) {
    let log: Seen<(String, Option<String>)> = Arc::default();
    let into = log.clone();
    let mut stream = h.watch_workloads();
    let task = tokio::spawn(async move {
        let mut last = std::collections::BTreeMap::new();
        while let Some(event) = stream.next().await {
            let Ok(WorkloadChange::Applied(w)) = event else {
                continue;
            };
            let pin = w.template_annotation(PIN_ANNOTATION);
            if last.insert(w.name.clone(), pin.clone()) != Some(pin.clone())
                && let Ok(mut log) = into.lock()
            {
                log.push((SystemTime::now(), (w.name.clone(), pin)));
            }
        }
    });
    (log, task)
}

/// Counts conductors Ironic itself considers alive (online, heartbeat fresh),
/// about once a second, from the client namespace.
fn sample_conductors(
    netns: Arc<ClientNetns>,
    db: Backing,
) -> (Seen<usize>, tokio::task::JoinHandle<()>) {
    let log: Seen<usize> = Arc::default();
    let into = log.clone();
    let task = tokio::spawn(async move {
        let sql = format!(
            "SELECT COUNT(*) FROM conductors WHERE online = 1 AND \
             TIMESTAMPDIFF(SECOND, COALESCE(updated_at, created_at), UTC_TIMESTAMP()) < {HEARTBEAT_TIMEOUT_SECONDS}"
        );
        loop {
            if let Ok(out) = common::real::query(&netns, &db, "ironic", &sql).await
                && let Ok(alive) = out.trim().parse::<usize>()
                && let Ok(mut log) = into.lock()
            {
                log.push((SystemTime::now(), alive));
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    (log, task)
}

/// The `conductors` rows: (hostname, online).
async fn conductor_rows(netns: &ClientNetns, db: &Backing) -> Result<Vec<Vec<String>>> {
    let sql = "SELECT hostname, online FROM conductors ORDER BY hostname";
    rows(netns, db, "ironic", sql).await
}

/// When the first status with `phase` was seen.
fn phase_began(
    statuses: &[(SystemTime, (IronicUpgradePhase, String))],
    phase: IronicUpgradePhase,
) -> Option<SystemTime> {
    statuses
        .iter()
        .find(|(_, (p, _))| *p == phase)
        .map(|(at, _)| *at)
}

/// The two tests share two cores: one at a time, so neither's timing is the other's.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A real cluster with a MariaDB and a RabbitMQ, and the Ironic's Secrets for them.
async fn start(prefix: &str) -> Result<(Harness, Backing)> {
    prepare_images(&["ratchet.test/ironic:2026.1", "ratchet.test/ironic:2026.2"]).await?;
    let h = Harness::start_real(prefix).await?;
    let provisioned = backing::provision(
        &h.client,
        h.name(),
        NAME,
        &manifest("2026.1", 1, 1)["spec"],
        &["keystone"],
    )
    .await?;
    let db = provisioned
        .database
        .context("the Ironic names a database")?;
    Ok((h, db))
}

/// Creates the Ironic and waits until it is installed and Ready.
async fn install(h: &Harness, manifest: serde_json::Value) -> Result<()> {
    let ironic: Ironic = serde_json::from_value(manifest)?;
    h.api::<Ironic>()
        .create(&PostParams::default(), &ironic)
        .await?;
    until(
        &h.api::<Ironic>(),
        NAME,
        INSTALL_TIMEOUT,
        "installed and Ready",
        |i| {
            i.status
                .as_ref()
                .is_some_and(|s| s.upgrade.installed_release == "2026.1")
                && ready(i)
        },
    )
    .await
    .context("install")?;
    Ok(())
}

async fn wait_upgraded(h: &Harness) -> Result<()> {
    until(
        &h.api::<Ironic>(),
        NAME,
        UPGRADE_TIMEOUT,
        "upgraded to 2026.2",
        |i| {
            i.status.as_ref().is_some_and(|s| {
                s.upgrade.installed_release == "2026.2"
                    && s.upgrade.upgrade_phase == IronicUpgradePhase::None
            }) && ready(i)
        },
    )
    .await
    .context("upgrade")?;
    Ok(())
}

/// What Ratchet's registration and Ironic's own authentication show a user:
/// the `baremetal` endpoints by Service name in the catalogue, a request
/// without a token refused, and the conductors finding the API through the
/// catalogue as the service user (`[service_catalog]`). Creates the
/// operator the load logs in as: its credentials.
async fn authenticated_ironic(h: &Harness, netns: &ClientNetns) -> Result<Credentials> {
    let keystone = cluster_address(&h.client, h.name(), KEYSTONE, "api").await?;
    let url = format!("http://{NAME}.{}.svc:{}", h.name(), model::API_PORT);
    registered(
        netns,
        keystone,
        ADMIN_PASSWORD,
        &[("baremetal", url.clone())],
    )
    .await?;
    let api = cluster_address(&h.client, h.name(), NAME, "api").await?;
    let (status, _) = netns.http_get(api, "/v1/nodes").await??;
    ensure!(status == 401, "a request without a token got {status}");
    let found = conductor_run(h, &find_own_api()).await?;
    ensure!(
        found == url,
        "a conductor found its API at {found:?}, not {url}"
    );
    // An operator holding `admin` on the system, which Ironic's node create
    // asks (`role:admin and system_scope:all`).
    let operator = load::login_for(SERVICE, netns, keystone, ADMIN_PASSWORD)
        .await?
        .context("Ironic's client logs in")?;
    ensure!(operator.scope == Scope::System, "{operator:?}");
    Ok(operator)
}

/// Ironic's own lookup of the URL deploy ramdisks call back
/// (`deploy_utils.get_ironic_api_url`: `[service_catalog]`'s login, then
/// the catalogue), written where the kubelet reads a termination message.
fn find_own_api() -> String {
    format!(
        "from ironic.conf import CONF\n\
         CONF(['--config-dir', '{CONFIG_DIR}'], project='ironic')\n\
         from ironic.drivers.modules import deploy_utils\n\
         url = deploy_utils.get_ironic_api_url()\n\
         open('/dev/termination-log', 'w').write(url)\n"
    )
}

/// Runs `script` with python in a Job shaped as a conductor (its image,
/// configuration, Secrets and user): the termination message it left.
async fn conductor_run(h: &Harness, script: &str) -> Result<String> {
    let mut pod = h.workload(&format!("{NAME}-conductor")).await?.pod_spec();
    pod.restart_policy = Some("Never".into());
    let container = pod
        .containers
        .first_mut()
        .context("a conductor has a container")?;
    container.command = Some(vec!["python3".into(), "-c".into(), script.into()]);
    container.args = None;
    container.readiness_probe = None;
    container.liveness_probe = None;
    container.startup_probe = None;
    container.lifecycle = None;
    let name = "ironic-conductor-lookup";
    let job: Job = serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": { "backoffLimit": 0, "template": { "spec": pod } },
    }))?;
    h.api::<Job>().create(&PostParams::default(), &job).await?;
    let done = until(&h.api::<Job>(), name, INSTALL_TIMEOUT, "finished", |j| {
        j.status
            .as_ref()
            .is_some_and(|s| s.succeeded.unwrap_or(0) + s.failed.unwrap_or(0) > 0)
    })
    .await?;
    let pods = h
        .api::<Pod>()
        .list(&ListParams::default().labels(&format!("job-name={name}")))
        .await?;
    let message = pods
        .items
        .iter()
        .flat_map(|p| p.status.iter())
        .flat_map(|s| s.container_statuses.iter().flatten())
        .find_map(|c| c.state.as_ref()?.terminated.as_ref()?.message.clone())
        .unwrap_or_default();
    ensure!(
        done.status.as_ref().and_then(|s| s.succeeded) == Some(1),
        "the conductor's lookup failed: {message}"
    );
    Ok(message.trim().to_string())
}

#[tokio::test]
async fn a_real_ironic_upgrades_pinned_then_unpinned_under_load() -> Result<()> {
    let _alone = ONE_AT_A_TIME.lock().await;
    prepare_images(&["ratchet.test/keystone:2026.1"]).await?;
    let (h, db) = start("ironic-real").await?;
    let ironics = h.api::<Ironic>();
    let netns = Arc::new(h.env.client_netns()?);
    // Ironic is created at once beside its Keystone: its registration is
    // retried until Keystone serves, and its API waits for it.
    let cache = keystone_beside(&h, KEYSTONE, &db, ADMIN_PASSWORD).await?;
    secret(&h, "ironic-keystone", "password", IRONIC_PASSWORD.into()).await?;
    // Three conductors: a stopping conductor waits for the other services' hash
    // rings to drop it before it stops consuming only while more than one other
    // conductor is online (docs/ironic.md, "Proven with real processes").
    let mut switching = manifest("2026.1", 2, 3);
    switching["spec"]["extraConfig"]["fake"] =
        json!({ "power_delay": POWER_DELAY_SECONDS.to_string() });
    let manifest = authenticating(
        switching,
        KEYSTONE,
        "ironic-keystone",
        &cache.memcached_server(),
    );
    install(&h, manifest).await?;
    installed::<Keystone>(&h, KEYSTONE, "2026.1", INSTALL_TIMEOUT).await?;
    let operator = authenticated_ironic(&h, &netns).await?;
    let installed = conductor_rows(&netns, &db).await?;
    ensure!(
        installed
            == (0..3)
                .map(|i| vec![format!("ironic-conductor-{i}"), "1".into()])
                .collect::<Vec<_>>(),
        "every conductor registers under its pod name: {installed:?}"
    );

    let options = IronicLoadOptions {
        login: Some(operator),
        power_switched_nodes: POWER_SWITCHED_NODES,
        ..IronicLoadOptions::default()
    };
    let load = ironic::start(&h.client, &netns, h.name(), NAME, options).await?;
    let (statuses, status_task) = record_status(&h);
    let (pins, pin_task) = record_pins(&h);
    let (alive, alive_task) = sample_conductors(netns.clone(), db.clone());
    let steady_from = SystemTime::now();
    tokio::time::sleep(STEADY_WINDOW).await;
    let upgrade_from = SystemTime::now();
    ironics
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "spec": { "openStackRelease": "2026.2", "image": { "tag": "2026.2" } } }),
            ),
        )
        .await?;
    wait_upgraded(&h).await?;
    let upgrade_to = SystemTime::now();
    // A few rounds against the finished upgrade: the unpinned maximum is served.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let tally = load.tally();
    let outcome = load.stop(Duration::ZERO).await?;
    for task in [status_task, pin_task, alive_task] {
        task.abort();
    }
    let tally = tally
        .lock()
        .map_err(|_| anyhow::anyhow!("tally poisoned"))?
        .clone();
    let alive = seen(&alive);
    let during: Vec<&(SystemTime, usize)> = alive
        .iter()
        .filter(|(at, _)| *at >= upgrade_from && *at <= upgrade_to)
        .collect();
    let fewer_than_two = during.iter().filter(|(_, n)| *n < 2).count();
    let finished_while_stopping = switches_finished_while_stopping(&h);
    let steady = tally.latencies_ms(steady_from, upgrade_from);
    let upgrade = tally.latencies_ms(upgrade_from, upgrade_to);
    eprintln!(
        "FIGURES requests={} failed={} steady p50={:.1}ms p99={:.1}ms upgrade p50={:.1}ms p99={:.1}ms \
         conductor samples={} with fewer than two alive={} fewest alive={:?} upgrade took {:.0}s \
         power switches={} finished by a stopping conductor={}",
        tally.requests(),
        tally.failures().len(),
        percentile(steady.clone(), 0.5),
        percentile(steady, 0.99),
        percentile(upgrade.clone(), 0.5),
        percentile(upgrade, 0.99),
        during.len(),
        fewer_than_two,
        during.iter().map(|(_, n)| *n).min(),
        upgrade_to
            .duration_since(upgrade_from)
            .unwrap_or_default()
            .as_secs_f64(),
        outcome.power_switches.len(),
        finished_while_stopping.len(),
    );
    for line in &finished_while_stopping {
        eprintln!("finished by a stopping conductor: {line}");
    }

    // Zero failed requests: a stopping conductor keeps serving RPC until every
    // API's hash ring has dropped it (the APIs refresh theirs three times as often).
    let failures = tally.failures();
    ensure!(
        failures.is_empty(),
        "{} of {} requests failed, first: {:?}",
        failures.len(),
        tally.requests(),
        failures.iter().take(5).collect::<Vec<_>>()
    );
    ensure!(
        tally.requests() > 100,
        "the load made only {} requests",
        tally.requests()
    );

    // Every power switch asked for was done: none lost to a conductor that
    // stopped while holding it. Across six conductor stops, with two of three
    // conductors holding a switched node, one finishes a switch while stopping
    // in all but about 1 run in 100 (the log shows which).
    let lost: Vec<_> = outcome
        .power_switches
        .iter()
        .filter(|s| s.failure.is_some())
        .collect();
    ensure!(lost.is_empty(), "power switches lost: {lost:#?}");
    ensure!(
        outcome.power_switches.len() > POWER_SWITCHED_NODES * 4,
        "only {} power switches",
        outcome.power_switches.len()
    );
    ensure!(
        !finished_while_stopping.is_empty(),
        "no stopping conductor held a power switch"
    );

    // Seed 002, steps 4.1–6.4: at least one conductor alive at every moment.
    ensure!(
        during.len() > 10 && during.iter().all(|(_, n)| *n >= 1),
        "a moment without a live conductor: {during:?}"
    );

    // The pin: phases in the spec's order, with 2026.1 pinned through the pinned roll.
    let statuses = seen(&statuses);
    let phases: Vec<IronicUpgradePhase> = statuses.iter().map(|(_, (p, _))| *p).collect();
    let order = [
        IronicUpgradePhase::DatabaseUpgrade,
        IronicUpgradePhase::UpgradeCheck,
        IronicUpgradePhase::PinnedRoll,
        IronicUpgradePhase::Unpinning,
        IronicUpgradePhase::OnlineMigrations,
    ];
    let mut in_order: Vec<IronicUpgradePhase> = phases
        .iter()
        .copied()
        .filter(|p| order.contains(p))
        .collect();
    in_order.dedup();
    ensure!(in_order == order, "phases {phases:?}");
    ensure!(
        statuses
            .iter()
            .any(|(_, (p, pin))| *p == IronicUpgradePhase::PinnedRoll && pin == "2026.1"),
        "the pinned roll shows its pin: {statuses:?}"
    );

    // The API offers 2026.2's microversions only once unpinning began, and
    // 2026.1's before; after the upgrade, every pod offers 2026.2's.
    let unpinning =
        phase_began(&statuses, IronicUpgradePhase::Unpinning).context("no Unpinning phase seen")?;
    for sample in &outcome.versions {
        let expected_before = sample.at < unpinning;
        ensure!(
            sample.max_microversion == PINNED_MAX
                || (!expected_before && sample.max_microversion == UNPINNED_MAX),
            "an API pod offered {} at {:?} (unpinning began {:?})",
            sample.max_microversion,
            sample.at,
            unpinning
        );
    }
    let after: Vec<&str> = outcome
        .versions
        .iter()
        .filter(|s| s.at > upgrade_to)
        .map(|s| s.max_microversion.as_str())
        .collect();
    ensure!(
        !after.is_empty() && after.iter().all(|v| *v == UNPINNED_MAX),
        "after the upgrade the API offers {after:?}"
    );

    // Conductors move before APIs in both rolls: pinned, then unpinned.
    let pins = seen(&pins);
    let pinned_at = |workload: &str| {
        pins.iter()
            .position(|(_, (w, pin))| w == workload && pin.is_some())
    };
    let conductor = format!("{NAME}-conductor");
    let api = format!("{NAME}-api");
    let pinned = (pinned_at(&conductor), pinned_at(&api));
    ensure!(
        matches!(pinned, (Some(c), Some(a)) if c < a),
        "the pinned roll takes conductors first: {pins:?}"
    );
    let unpinned_at = |workload: &str| {
        let pinned_at = pins
            .iter()
            .position(|(_, (w, pin))| w == workload && pin.is_some())?;
        pins.iter()
            .skip(pinned_at)
            .position(|(_, (w, pin))| w == workload && pin.is_none())
            .map(|p| p + pinned_at)
    };
    ensure!(
        matches!((unpinned_at(&conductor), unpinned_at(&api)), (Some(c), Some(a)) if c < a),
        "unpinning takes conductors first: {pins:?}"
    );

    // Nodes hold exactly what the client wrote, and their rows are at the
    // object version both releases write (Node 1.44 in 35.1.0 and 39.0.0).
    for (uuid, expected) in &outcome.expected_extra {
        let node = outcome
            .nodes
            .get(uuid)
            .with_context(|| format!("node {uuid} not read back"))?;
        let load = node["extra"]["load"].as_str();
        let wanted = (*expected > 0).then(|| expected.to_string());
        ensure!(
            load == wanted.as_deref() && node["driver"] == "fake-hardware",
            "node {uuid}: {node}"
        );
    }
    let versions = rows(&netns, &db, "ironic", "SELECT DISTINCT version FROM nodes").await?;
    ensure!(
        versions == [vec!["1.44".to_string()]],
        "node rows at {versions:?}"
    );
    let conductors = conductor_rows(&netns, &db).await?;
    ensure!(
        conductors == installed,
        "conductors after the upgrade: {conductors:?}"
    );
    h.finish().await;
    Ok(())
}

/// Each power switch a conductor finished after it began to stop: in its
/// pod's log (every incarnation appends to it), a "Successfully set node …
/// power state" line after "Successfully stopped conductor" and before the
/// next incarnation's "Starting workers pool".
fn switches_finished_while_stopping(h: &Harness) -> Vec<String> {
    const STOPPED: &str = "Successfully stopped conductor";
    const STARTING: &str = "Starting workers pool";
    const SWITCHED: &str = "Successfully set node";
    let mut stopping = std::collections::BTreeSet::new();
    let mut finished = Vec::new();
    for line in log_lines_naming(h, &[STOPPED, STARTING, SWITCHED]) {
        let Some((pod, _)) = line.split_once(": ") else {
            continue;
        };
        let pod = pod.to_string();
        if line.contains(STOPPED) {
            stopping.insert(pod);
        } else if line.contains(STARTING) {
            stopping.remove(&pod);
        } else if stopping.contains(&pod) && line.contains("power state") {
            finished.push(line);
        }
    }
    finished
}

/// Rows an older release wrote: nodes at Node 1.43 (2025.1's), in maintenance
/// so that no conductor works on them; 39.0.0's online migrations move them to 1.44.
const OLD_NODES: u32 = 4000;
/// How many of them (the highest ids) a slow writer holds while the migrations run.
const LOCKED_NODES: u32 = 1500;

fn database_ready(i: &Ironic) -> Option<(String, String)> {
    i.status
        .as_ref()?
        .upgrade
        .conditions
        .iter()
        .find(|c| c.type_ == "DatabaseReady")
        .map(|c| (c.reason.clone(), c.message.clone()))
}

#[tokio::test]
async fn a_real_failed_check_stops_before_the_pin_and_interrupted_migrations_resume() -> Result<()>
{
    let _alone = ONE_AT_A_TIME.lock().await;
    let (h, db) = start("ironic-real-fail").await?;
    install(&h, manifest("2026.1", 1, 1)).await?;
    let netns = h.env.client_netns()?;
    let sql = format!(
        "INSERT INTO nodes (uuid, driver, version, provision_state, maintenance, created_at) \
         SELECT UUID(), 'fake-hardware', '1.43', 'enroll', 1, UTC_TIMESTAMP() FROM seq_1_to_{OLD_NODES}"
    );
    common::real::query(&netns, &db, "ironic", &sql).await?;
    let conductor = format!("{NAME}-conductor");
    let installed = h.workload(&conductor).await?;
    let ironics = h.api::<Ironic>();

    // An interface no Ironic has: the real `ironic-status upgrade check` fails
    // its hardware check, and the upgrade stops before any pin or roll.
    ironics
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": {
                "openStackRelease": "2026.2",
                "image": { "tag": "2026.2" },
                "extraConfig": { "DEFAULT": real_interfaces("ipmitool,fake,no-such-power") },
            } })),
        )
        .await?;
    let failed = until(
        &ironics,
        NAME,
        UPGRADE_TIMEOUT,
        "the upgrade check failed",
        |i| database_ready(i).is_some_and(|(reason, _)| reason == "UpgradeCheckFailed"),
    )
    .await
    .context("upgrade check")?;
    let (_, message) = database_ready(&failed).context("DatabaseReady")?;
    ensure!(
        message.contains("failed: Hardware Types and Interfaces"),
        "the reason names the failed check: {message}"
    );
    let status = failed.status.context("status")?;
    ensure!(
        status.upgrade.upgrade_phase == IronicUpgradePhase::UpgradeCheck
            && status.pinned_release.is_empty()
            && status.upgrade.installed_release == "2026.1",
        "{status:?}"
    );
    h.wait_event(NAME, "UpgradeCheckFailed").await?;
    let held = h.workload(&conductor).await?;
    ensure!(
        held.template == installed.template && held.complete,
        "the conductors did not move: {:?}",
        held.template
    );

    // The documented recovery: fix the cause, then delete the failed Job. The
    // same upgrade then goes ahead. As the online migrations begin, a slow
    // writer holds locks on the newest old rows: the migrations move every
    // other row, then wait on those.
    ironics
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "spec": { "extraConfig": { "DEFAULT": real_interfaces(REAL_POWER_INTERFACES) } } }),
            ),
        )
        .await?;
    until(
        &h.api::<ConfigMap>(),
        &format!("{NAME}-config"),
        UPGRADE_TIMEOUT,
        "the fixed configuration rendered",
        |c| {
            c.data
                .as_ref()
                .is_some_and(|d| d.values().all(|v| !v.contains("no-such-power")))
        },
    )
    .await?;
    h.api::<Job>()
        .delete(
            &format!("{NAME}-upgrade-check"),
            &DeleteParams::background(),
        )
        .await?;
    // Taken as the phase begins, before its Job's process has started (Python's
    // imports alone take seconds); not earlier, since a conductor starting
    // during a roll would wait on the same rows.
    until(&ironics, NAME, UPGRADE_TIMEOUT, "online migrations", |i| {
        i.status
            .as_ref()
            .is_some_and(|s| s.upgrade.upgrade_phase == IronicUpgradePhase::OnlineMigrations)
    })
    .await
    .context("online migrations")?;
    let locks = common::real::RowLocks::take(
        &netns,
        &db,
        "ironic",
        &format!(
            "SELECT COUNT(*) FROM nodes WHERE id > (SELECT MAX(id) - {LOCKED_NODES} FROM nodes) FOR UPDATE"
        ),
    )
    .await?;
    ensure!(
        locks.selected == LOCKED_NODES.to_string(),
        "locked {}",
        locks.selected
    );
    let old_rows = "SELECT COUNT(*) FROM nodes WHERE version = '1.43'";
    common::real::until_sql(
        &netns,
        &db,
        "ironic",
        old_rows,
        &LOCKED_NODES.to_string(),
        UPGRADE_TIMEOUT,
    )
    .await
    .context("the online migrations reach the locked rows")?;

    // Interrupted there: the Job's pod is killed; the Job runs another, which
    // finishes once the writer lets go.
    let job = format!("{NAME}-online-migrations");
    let pods = h.api::<Pod>();
    let running = pods
        .list(&ListParams::default().labels(&format!("job-name={job}")))
        .await?
        .items;
    ensure!(running.len() == 1, "one migration pod: {}", running.len());
    let killed = running[0].metadata.name.clone().unwrap_or_default();
    pods.delete(&killed, &DeleteParams::default().grace_period(0))
        .await?;
    locks.release().await?;
    wait_upgraded(&h).await?;
    let left = common::real::query(
        &netns,
        &db,
        "ironic",
        "SELECT COUNT(*) FROM nodes WHERE version <> '1.44'",
    )
    .await?;
    ensure!(left.trim() == "0", "{} rows not migrated", left.trim());
    let job: Job = h.api::<Job>().get(&job).await?;
    let counts = job.status.as_ref().map(|s| (s.failed, s.succeeded));
    ensure!(
        counts == Some((Some(1), Some(1))),
        "the Job counts the killed pod as failed and the re-run as succeeded: {counts:?}"
    );
    h.finish().await;
    Ok(())
}
