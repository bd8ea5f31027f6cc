//! Neutron for real: neutron 28.0.2 (2026.1) upgraded to 29.0.0 (2026.2) with
//! every Job, server and agent a real process on the process kubelet, against
//! a real MariaDB and RabbitMQ.
//!
//! - Online: authenticating every request through a real Keystone, while a
//!   client logged in as a project member keeps creating, updating, reading
//!   and deleting networks, subnets, ports and security-group rules. No
//!   request may fail, everything made must read back afterwards, and the
//!   contract must have run online because `has_offline_migrations` said so.
//! - Offline: a database whose contract branch lags one revision (what
//!   `has_offline_migrations` reports as migrations needing every server
//!   stopped; Neutron has added none since Newton, so the branch's last
//!   revision, a no-op today, is made pending again). Without the spec's
//!   consent the upgrade holds with every server serving; an abort from there
//!   goes back to the installed release on the expanded schema; with consent
//!   every server process is stopped before the contract and started after,
//!   and the outage's start and end are events.
//!
//! Needs root (the process kubelet).

mod common;

use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, ensure};
use common::Harness;
use common::real::{
    STEADY_WINDOW, clean_upgrade, installed, keystone_beside, latency_figures, no_failed_request,
    prepare_images, query, registered, rows, secret, stop_load, upgrade,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event as KubeEvent;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::plan::{abort_patch, start_patch};
use ratchet_phase_machine::vocabulary::{event, reason};
use ratchet_services::keystone::resource::authenticating;
use ratchet_services::keystone::v1alpha1::Keystone;
use ratchet_services::neutron::model::API_PORT;
use ratchet_services::neutron::v1alpha1::Neutron;
use ratchet_testenv::ClientNetns;
use ratchet_testenv::backing::{self, Backing};
use ratchet_testenv::load::neutron::{self, NeutronLoadOptions};
use ratchet_testenv::load::{self, cluster_address};
use ratchet_testenv::wait::until;

const NAME: &str = "neutron";
const KEYSTONE: &str = "keystone";
const ADMIN_PASSWORD: &str = "ratchet-admin-test";
const NEUTRON_PASSWORD: &str = "ratchet-neutron-test";
const IMAGES: &[&str] = &["ratchet.test/neutron:2026.1", "ratchet.test/neutron:2026.2"];
/// Cold: the first schema sync (142 migrations), uWSGI and every server's
/// start on two cores.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(900);
/// The heads after the upgrade: 29.0.0's expand head, and the contract head
/// every release since Newton shares.
const EXPAND_HEAD: &str = "c7f8d9e0f1a2";
const CONTRACT_HEAD: &str = "5c85685d616d";
/// The contract head's parent: a database at it has the contract branch's
/// last revision pending.
const CONTRACT_BEFORE_HEAD: &str = "2e0d7a8a1586";
/// The server processes an offline contract stops.
const SERVERS: &[&str] = &[
    "neutron-rpc-server",
    "neutron-periodic-workers",
    "neutron-api",
];

/// One cloud at a time: the two tests' clouds side by side, beside another
/// real binary's, are more than two cores serve in time.
static ONE_CLOUD: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// MariaDB with `databases`, RabbitMQ, and the Neutron Secrets pointing at them.
async fn backing_services(h: &Harness, databases: &[&str]) -> Result<Backing> {
    let db = backing::mariadb(&h.client, h.name(), "mariadb", databases).await?;
    let mq = backing::rabbitmq(&h.client, h.name(), "rabbitmq").await?;
    secret(h, "neutron-db", "connection", db.mysql_url(NAME)).await?;
    secret(h, "neutron-mq", "transport_url", mq.amqp_url()).await?;
    Ok(db)
}

/// The termination message of the last finished pod of Job `job`.
async fn job_message(h: &Harness, job: &str) -> Result<String> {
    let pods = h
        .api::<Pod>()
        .list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}")))
        .await?;
    pods.items
        .iter()
        .filter_map(ratchet_operator::pods::terminated)
        .max_by_key(|t| t.finished_at.as_ref().map(|at| at.0))
        .and_then(|t| t.message.as_deref())
        .map(|m| m.trim().to_string())
        .with_context(|| format!("no finished pod of {job}"))
}

/// The agents that report to the servers: (type, host, alive).
async fn agents(netns: &ClientNetns, db: &Backing) -> Result<Vec<Vec<String>>> {
    rows(
        netns,
        db,
        NAME,
        "SELECT agent_type, host, heartbeat_timestamp > UTC_TIMESTAMP() - INTERVAL 90 SECOND \
         FROM agents ORDER BY agent_type, host",
    )
    .await
}

/// The schema is at 29.0.0's heads: its expand head and the shared contract
/// head.
async fn at_target_heads(netns: &ClientNetns, db: &Backing) -> Result<()> {
    let heads = rows(
        netns,
        db,
        NAME,
        "SELECT version_num FROM alembic_version ORDER BY version_num",
    )
    .await?;
    let expected = [
        vec![CONTRACT_HEAD.to_string()],
        vec![EXPAND_HEAD.to_string()],
    ];
    ensure!(
        heads == expected,
        "alembic heads after the upgrade: {heads:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_real_neutron_upgrades_online_under_load_with_nothing_lost() -> Result<()> {
    let mut images = IMAGES.to_vec();
    images.push("ratchet.test/keystone:2026.1");
    prepare_images(&images).await?;
    let _cloud = ONE_CLOUD.lock().await;
    let h = Harness::start_real("neutron-real").await?;
    let db = backing_services(&h, &[KEYSTONE, NAME]).await?;
    secret(&h, "neutron-keystone", "password", NEUTRON_PASSWORD.into()).await?;

    // Keystone and Neutron at once: Neutron's registration is retried until
    // Keystone serves.
    let cache = keystone_beside(&h, KEYSTONE, &db, ADMIN_PASSWORD).await?;
    let example = Neutron::real_example(NAME, "2026.1", "ratchet.test/neutron")
        .context("Neutron has a real example")?;
    let manifest = authenticating(
        example.manifest,
        KEYSTONE,
        "neutron-keystone",
        &cache.memcached_server(),
    );
    let neutron: Neutron = serde_json::from_value(manifest)?;
    h.api::<Neutron>()
        .create(&PostParams::default(), &neutron)
        .await?;
    installed::<Keystone>(&h, KEYSTONE, "2026.1", INSTALL_TIMEOUT).await?;
    installed::<Neutron>(&h, NAME, "2026.1", INSTALL_TIMEOUT).await?;

    let netns = h.env.client_netns()?;
    let keystone_addr = cluster_address(&h.client, h.name(), KEYSTONE, "api").await?;
    let url = format!("http://{NAME}.{}.svc:{API_PORT}", h.name());
    registered(&netns, keystone_addr, ADMIN_PASSWORD, &[("network", url)]).await?;
    let api = cluster_address(&h.client, h.name(), NAME, "api").await?;
    let (status, _) = netns.http_get(api, "/v2.0/networks").await??;
    ensure!(status == 401, "a request without a token got {status}");
    // The metadata agent on the process node reports through an RPC server.
    let node = h.env.process_node()?.to_string();
    let reporting = agents(&netns, &db).await?;
    ensure!(
        reporting == [vec!["Metadata agent".to_string(), node.clone(), "1".into()]],
        "agents before the upgrade: {reporting:?}"
    );

    let login = load::login_for(NAME, &netns, keystone_addr, ADMIN_PASSWORD)
        .await?
        .context("Neutron's client logs in")?;
    let options = NeutronLoadOptions {
        login: Some(login),
        ..NeutronLoadOptions::default()
    };
    let load = neutron::start(&h.client, &netns, h.name(), NAME, options).await?;
    let steady_from = SystemTime::now();
    tokio::time::sleep(STEADY_WINDOW).await;
    let upgrade_from = SystemTime::now();
    let witness = upgrade::<Neutron>(&h, NAME, "2026.2", UPGRADE_TIMEOUT).await?;
    let upgrade_to = SystemTime::now();

    let (outcome, tally) = stop_load(load, Duration::from_secs(30)).await?;
    eprintln!(
        "FIGURES requests={} failed={} {} made: {} upgrade took {:.0}s",
        tally.requests(),
        tally.failures().len(),
        latency_figures(&tally, steady_from, (upgrade_from, upgrade_to)),
        ratchet_testenv::load::Outcome::made(&outcome).summary,
        upgrade_to
            .duration_since(upgrade_from)
            .unwrap_or_default()
            .as_secs_f64(),
    );
    no_failed_request(&tally, 100)?;
    ensure!(
        outcome.lost_after.is_empty(),
        "objects lost: {:#?}",
        outcome.lost_after
    );
    clean_upgrade::<Neutron>(&h, &witness, NAME).await?;

    // The contract asked first and ran online.
    let said = job_message(&h, "neutron-db-contract").await?;
    ensure!(
        said == "has_offline_migrations exit 0: contract run online",
        "the contract Job said {said:?}"
    );
    ensure!(
        !h.event_reasons(NAME)
            .await?
            .iter()
            .any(|r| r == reason::OUTAGE_STARTED),
        "an online contract stopped the servers"
    );
    at_target_heads(&netns, &db).await?;
    // The upgraded agent reports again, since its new container started.
    let reporting = agents(&netns, &db).await?;
    ensure!(
        reporting == [vec!["Metadata agent".to_string(), node, "1".into()]],
        "agents after the upgrade: {reporting:?}"
    );
    h.finish().await;
    Ok(())
}

/// DatabaseReady's reason, as the resource stores it.
fn database_reason(neutron: &Neutron) -> Option<String> {
    neutron
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "DatabaseReady")
        .map(|c| c.reason.clone())
}

/// Waits until `name`'s DatabaseReady has `reason`.
async fn until_database(h: &Harness, reason: &str, timeout: Duration) -> Result<()> {
    let wanted = reason.to_string();
    until(
        &h.api::<Neutron>(),
        NAME,
        timeout,
        &format!("DatabaseReady {reason}"),
        move |n: &Neutron| database_reason(n).as_deref() == Some(wanted.as_str()),
    )
    .await
    .with_context(|| format!("waiting for DatabaseReady {reason}"))?;
    Ok(())
}

/// Patches `name`'s spec with `patch` (a merge patch).
async fn patch(h: &Harness, patch: serde_json::Value) -> Result<()> {
    h.api::<Neutron>()
        .patch(NAME, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Every server Deployment serves with both its pods.
async fn servers_serve(h: &Harness) -> Result<()> {
    for server in SERVERS {
        let ready = h
            .api::<Deployment>()
            .get(server)
            .await?
            .status
            .and_then(|s| s.ready_replicas)
            .unwrap_or_default();
        ensure!(ready == 2, "{server} has {ready} ready pods");
    }
    Ok(())
}

#[tokio::test]
async fn a_pending_contract_holds_aborts_and_with_consent_stops_every_server() -> Result<()> {
    prepare_images(IMAGES).await?;
    let _cloud = ONE_CLOUD.lock().await;
    let h = Harness::start_real("neutron-offline").await?;
    let db = backing_services(&h, &[NAME]).await?;
    let example = Neutron::real_example(NAME, "2026.1", "ratchet.test/neutron")
        .context("Neutron has a real example")?;
    let neutron: Neutron = serde_json::from_value(example.manifest)?;
    h.api::<Neutron>()
        .create(&PostParams::default(), &neutron)
        .await?;
    installed::<Neutron>(&h, NAME, "2026.1", INSTALL_TIMEOUT).await?;

    let netns = h.env.client_netns()?;
    query(
        &netns,
        &db,
        NAME,
        &format!(
            "UPDATE alembic_version SET version_num = '{CONTRACT_BEFORE_HEAD}' \
             WHERE version_num = '{CONTRACT_HEAD}'"
        ),
    )
    .await?;

    // Without consent the contract holds, every server still serving.
    let installed_view = h.api::<Neutron>().get(NAME).await?.spec_view();
    patch(&h, start_patch(&installed_view, "2026.2")).await?;
    until_database(&h, reason::OUTAGE_NOT_ALLOWED, UPGRADE_TIMEOUT).await?;
    servers_serve(&h).await?;
    let said = job_message(&h, "neutron-db-contract").await?;
    ensure!(
        said.starts_with("has_offline_migrations exit 1"),
        "the online contract Job said {said:?}"
    );

    // An abort from there: the servers go back to the installed release, on
    // the schema the target release expanded.
    let held = h.api::<Neutron>().get(NAME).await?;
    let (revert, _) = abort_patch(&held, true, None)?;
    patch(&h, revert).await?;
    installed::<Neutron>(&h, NAME, "2026.1", UPGRADE_TIMEOUT).await?;
    ensure!(
        h.event_reasons(NAME)
            .await?
            .iter()
            .any(|r| r == event::UPGRADE_ABORTED),
        "no UpgradeAborted event"
    );
    servers_serve(&h).await?;
    // A configuration change then re-runs the installed release's sync,
    // which meets that schema and says so instead of failing; the same
    // patch consents to the outage.
    patch(
        &h,
        serde_json::json!({ "spec": {
            "extraConfig": { "DEFAULT": { "agent_down_time": "76" } },
            "upgrade": { "allowOutage": true },
        } }),
    )
    .await?;
    installed::<Neutron>(&h, NAME, "2026.1", UPGRADE_TIMEOUT).await?;
    let said = job_message(&h, "neutron-db-sync").await?;
    ensure!(
        said.contains("ahead of this release"),
        "the sync after the abort said {said:?}"
    );

    // With consent the same upgrade stops every server for the contract.
    let witness = upgrade::<Neutron>(&h, NAME, "2026.2", UPGRADE_TIMEOUT).await?;
    let phases = witness.seen().phases.get(NAME).cloned().unwrap_or_default();
    ensure!(
        phases
            .iter()
            .filter(|p| p.as_str() == "Contracting")
            .count()
            == 1,
        "phases seen in the second upgrade: {phases:?}"
    );
    let events = h.events_for(NAME).await?;
    let at = |wanted: &str| {
        events
            .iter()
            .filter(|e| e.reason.as_deref() == Some(wanted))
            .map(|e| e.event_time.as_ref().map(|t| t.0))
            .collect::<Vec<_>>()
    };
    let (started, ended) = (at(reason::OUTAGE_STARTED), at(event::OUTAGE_ENDED));
    let ([Some(started)], [Some(ended)]) = (started.as_slice(), ended.as_slice()) else {
        anyhow::bail!("the outage's events, once each: started {started:?}, ended {ended:?}");
    };
    ensure!(
        started < ended,
        "the outage ended at {ended} before it started at {started}"
    );
    eprintln!(
        "FIGURES offline contract outage {:.1}s (from {started} to {ended})",
        ended.duration_since(*started).as_secs_f64()
    );
    at_target_heads(&netns, &db).await?;
    // Every server was stopped for it (the Deployment controller scaled its
    // pods to none), and serves again with its replicas.
    let scaled = h
        .api::<KubeEvent>()
        .list(&ListParams::default())
        .await?
        .items;
    for server in SERVERS {
        let to_none = scaled.iter().any(|e| {
            e.reason.as_deref() == Some("ScalingReplicaSet")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(server)
                && e.note.as_deref().is_some_and(|n| n.ends_with("to 0"))
        });
        ensure!(to_none, "{server} was never scaled to none");
    }
    servers_serve(&h).await?;
    h.finish().await;
    Ok(())
}
