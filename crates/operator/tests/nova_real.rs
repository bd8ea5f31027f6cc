//! Nova for real, in the cloud it needs: nova 33.0.2 (2026.1) upgraded to
//! 34.0.0 (2026.2) with every Job, conductor, scheduler, API pod and fake
//! compute a real process on the process kubelet, beside a Keystone every
//! request authenticates through, a Glance the servers boot from, a
//! Placement the scheduler claims on (upgraded first, as a cloud's order
//! asks) and a Neutron a server's delete asks about its ports; one MariaDB
//! (cell0 and cell1 with databases of their own) and one RabbitMQ.
//!
//! A client logged in as a project member boots, lists, reads back and
//! deletes servers (the fake driver, no network) before the upgrade and
//! after it; through the upgrade it lists and reads back its servers and the
//! flavors (boots and deletes across Nova's restarts wait for the drain,
//! issue 40). No request may fail, and every server must end as asked
//! (ACTIVE or gone), none stuck in BUILD or ERROR. Neutron, its peer, tells
//! Nova of a port unplugged from a server (`[nova]` rendered because this
//! Nova shares its Keystone), and Nova takes the event for that server. The `compute = auto` pin is seen in the
//! conductors' logs at the installed release's service version during the
//! roll and at the target's after the second roll; every service row ends at
//! the target's version; each cell's online data migrations report. Needs
//! root (the process kubelet).

mod common;

use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, ensure};
use common::Harness;
use common::real::{
    claim, clean_upgrade, installed, keystone_beside, latency_figures, log_lines_naming,
    no_failed_request, prepare_images, registered, rows, secret, stop_load, until_logged,
    until_requests, until_sql, upgrade,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use ratchet_operator::service::OpenStackService;
use ratchet_phase_machine::vocabulary::event;
use ratchet_services::glance::resource::EXAMPLE_CLAIM;
use ratchet_services::glance::v1alpha1::Glance;
use ratchet_services::keystone::resource::authenticating;
use ratchet_services::keystone::v1alpha1::Keystone;
use ratchet_services::neutron::v1alpha1::Neutron;
use ratchet_services::nova::model::API_PORT;
use ratchet_services::nova::v1alpha1::Nova;
use ratchet_services::placement::v1alpha1::Placement;
use ratchet_testenv::ClientNetns;
use ratchet_testenv::backing::{self, Backing};
use ratchet_testenv::load::auth::admin_credentials;
use ratchet_testenv::load::neutron;
use ratchet_testenv::load::nova::{self, NovaLoadOptions};
use ratchet_testenv::load::{self, Outcome, cluster_address};
use ratchet_testenv::wait::until_deleted;

const NAME: &str = "nova";
const KEYSTONE: &str = "keystone";
const ADMIN_PASSWORD: &str = "ratchet-admin-test";
/// Cold: every service's first schema sync and start on two cores.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(1200);
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(1200);
/// nova's service versions: 33.0.2 (2026.1) and 34.0.0 (2026.2).
const INSTALLED_SERVICE_VERSION: &str = "72";
const TARGET_SERVICE_VERSION: &str = "74";
/// What a Nova process logs when `compute = auto` picks its pin.
const PIN_LOG: &str = "Automatically selected compute RPC version";
/// Requests of the client before and after the upgrade: some servers
/// booted, read back and deleted (about 20 s on a quiet machine).
const LIFECYCLE_REQUESTS: usize = 40;
const LOAD_TIMEOUT: Duration = Duration::from_secs(600);
/// The compute scaled away before the upgrade.
const STALE_COMPUTE: &str = "nova-cell1-compute-2";

/// `manifest` authenticating through the test's Keystone with the password
/// in Secret `<service>-keystone`.
async fn authenticated(
    h: &Harness,
    service: &str,
    manifest: serde_json::Value,
    cache: &Backing,
) -> Result<serde_json::Value> {
    let password = format!("{service}-keystone");
    secret(h, &password, "password", format!("ratchet-{service}-test")).await?;
    Ok(authenticating(
        manifest,
        KEYSTONE,
        &password,
        &cache.memcached_server(),
    ))
}

/// Creates `S`'s real example (one replica of each workload unless
/// `sized` changes it), authenticating.
async fn create<S: OpenStackService>(
    h: &Harness,
    cache: &Backing,
    sized: impl FnOnce(&mut serde_json::Value),
) -> Result<()> {
    let service = S::SERVICE;
    let example = S::real_example(service, "2026.1", &format!("ratchet.test/{service}"))
        .with_context(|| format!("{service} has a real example"))?;
    let mut manifest = authenticated(h, service, example.manifest, cache).await?;
    sized(&mut manifest["spec"]);
    let object: S = serde_json::from_value(manifest)?;
    h.api::<S>().create(&PostParams::default(), &object).await?;
    Ok(())
}

/// The rows of `binary` in `database`'s services table, not deleted: (host,
/// version).
async fn service_rows(
    netns: &ClientNetns,
    db: &Backing,
    database: &str,
) -> Result<Vec<Vec<String>>> {
    rows(
        netns,
        db,
        database,
        "SELECT `binary`, host, version FROM services WHERE deleted = 0 ORDER BY `binary`, host",
    )
    .await
}

/// Stops `load` once its servers settled: no request failed, every server as
/// asked.
async fn settled_load(load: nova::NovaLoad, when: &str) -> Result<nova::NovaLoadOutcome> {
    let started = SystemTime::now();
    let (outcome, tally) = stop_load(load, Duration::from_secs(120)).await?;
    eprintln!(
        "FIGURES nova lifecycle {when}: requests={} failed={} {}",
        tally.requests(),
        tally.failures().len(),
        latency_figures(&tally, SystemTime::UNIX_EPOCH, (started, started)),
    );
    no_failed_request(&tally, 10).with_context(|| format!("the load {when}"))?;
    ensure!(
        outcome.lost_after.is_empty(),
        "servers not as asked {when}: {:#?}",
        outcome.lost_after
    );
    Ok(outcome)
}

#[tokio::test]
async fn a_real_nova_upgrades_under_load_with_every_server_as_asked() -> Result<()> {
    prepare_images(&[
        "ratchet.test/keystone:2026.1",
        "ratchet.test/glance:2026.1",
        "ratchet.test/placement:2026.1",
        "ratchet.test/placement:2026.2",
        "ratchet.test/neutron:2026.1",
        "ratchet.test/nova:2026.1",
        "ratchet.test/nova:2026.2",
    ])
    .await?;
    let h = Harness::start_real("nova-real").await?;
    let databases = [
        KEYSTONE,
        "glance",
        "placement",
        "neutron",
        "nova_api",
        "nova_cell0",
        "nova_cell1",
    ];
    let db = backing::mariadb(&h.client, h.name(), "mariadb", &databases).await?;
    let mq = backing::rabbitmq(&h.client, h.name(), "rabbitmq").await?;
    // cell1's bus of its own: its conductors and the super-conductor serve
    // one topic.
    let cell1_mq = backing::rabbitmq(&h.client, h.name(), "rabbitmq-cell1").await?;
    secret(&h, "nova-cell1-mq", "transport_url", cell1_mq.amqp_url()).await?;
    for (secret_name, database) in [
        ("glance-db", "glance"),
        ("placement-db", "placement"),
        ("neutron-db", "neutron"),
        ("nova-api-db", "nova_api"),
        ("nova-cell0-db", "nova_cell0"),
        ("nova-cell1-db", "nova_cell1"),
    ] {
        secret(&h, secret_name, "connection", db.mysql_url(database)).await?;
    }
    for bus in ["neutron-mq", "nova-mq"] {
        secret(&h, bus, "transport_url", mq.amqp_url()).await?;
    }
    claim(&h, EXAMPLE_CLAIM).await?;

    // The cloud at once: every registration is retried until Keystone serves.
    let cache = keystone_beside(&h, KEYSTONE, &db, ADMIN_PASSWORD).await?;
    create::<Glance>(&h, &cache, |spec| spec["api"]["replicas"] = 1.into()).await?;
    create::<Placement>(&h, &cache, |spec| spec["api"]["replicas"] = 1.into()).await?;
    create::<Neutron>(&h, &cache, |spec| {
        for workload in ["api", "rpcServer", "periodicWorkers"] {
            spec[workload]["replicas"] = 1.into();
        }
        spec["agents"] = serde_json::json!({});
    })
    .await?;
    create::<Nova>(&h, &cache, |spec| {
        spec["conductor"]["replicas"] = 1.into();
        spec["cells"][0]["computes"]["replicas"] = 3.into();
    })
    .await?;
    installed::<Keystone>(&h, KEYSTONE, "2026.1", INSTALL_TIMEOUT).await?;
    installed::<Glance>(&h, "glance", "2026.1", INSTALL_TIMEOUT).await?;
    installed::<Placement>(&h, "placement", "2026.1", INSTALL_TIMEOUT).await?;
    installed::<Neutron>(&h, "neutron", "2026.1", INSTALL_TIMEOUT).await?;
    installed::<Nova>(&h, NAME, "2026.1", INSTALL_TIMEOUT).await?;

    let netns = h.env.client_netns()?;
    let keystone_addr = cluster_address(&h.client, h.name(), KEYSTONE, "api").await?;
    let url = format!("http://{NAME}.{}.svc:{API_PORT}/v2.1", h.name());
    registered(&netns, keystone_addr, ADMIN_PASSWORD, &[("compute", url)]).await?;
    let nova_addr = cluster_address(&h.client, h.name(), NAME, "api").await?;
    let (status, _) = netns.http_get(nova_addr, "/v2.1/flavors").await??;
    ensure!(status == 401, "a request without a token got {status}");

    // Servers are scheduled only to computes mapped to their cell, which the
    // scheduler does for new ones on its own (discover_hosts_in_cells_interval).
    until_sql(
        &netns,
        &db,
        "nova_api",
        "SELECT COUNT(*) FROM host_mappings",
        "3",
        Duration::from_secs(300),
    )
    .await?;
    // A compute goes away for good (before any server lands on it: its
    // servers would go with it): its service row stays behind, at the
    // installed release's version, which would hold every pin there.
    let mut scaled = h.api::<Nova>().get(NAME).await?;
    scaled.spec.cells[0].computes.replicas = Some(2);
    h.api::<Nova>()
        .replace(NAME, &PostParams::default(), &scaled)
        .await?;
    until_deleted(&h.api::<Pod>(), STALE_COMPUTE, Duration::from_secs(300)).await?;
    // The scheduler places servers only on computes it deems up: one silent
    // for [DEFAULT] service_down_time (60 s) is down.
    until_sql(
        &netns,
        &db,
        "nova_cell1",
        &format!(
            "SELECT updated_at < UTC_TIMESTAMP() - INTERVAL 70 SECOND FROM services WHERE host = '{STALE_COMPUTE}'"
        ),
        "1",
        Duration::from_secs(300),
    )
    .await?;
    let admin = admin_credentials(keystone_addr, ADMIN_PASSWORD);
    let glance_addr = cluster_address(&h.client, h.name(), "glance", "api").await?;
    let source = nova::boot_source(&netns, glance_addr, nova_addr, &admin).await?;
    let login = load::login_for(NAME, &netns, keystone_addr, ADMIN_PASSWORD)
        .await?
        .context("Nova's client logs in")?;
    let options = NovaLoadOptions {
        login: Some(login),
        admin: Some(admin),
        image: source.image,
        flavor: source.flavor,
        ..NovaLoadOptions::default()
    };
    // Before: servers booted and deleted on the installed release.
    let load = nova::start(&h.client, &netns, h.name(), NAME, options.clone()).await?;
    until_requests(&load.tally(), LIFECYCLE_REQUESTS, LOAD_TIMEOUT).await?;
    let before = settled_load(load, "before the upgrade").await?;

    // During: the servers listed and read back, the flavors listed, through
    // every roll. Boots and deletes wait for the drain (issue 40): a 2026.1
    // scheduler or conductor takes RPC calls after SIGTERM and exits without
    // answering them (docs/nova.md, "Known limits").
    let reads = NovaLoadOptions {
        lifecycle: false,
        resume: Some(before.clone()),
        ..options.clone()
    };
    let load = nova::start(&h.client, &netns, h.name(), NAME, reads).await?;
    // Placement first, as a cloud's order asks; then Nova.
    upgrade::<Placement>(&h, "placement", "2026.2", UPGRADE_TIMEOUT).await?;
    let upgrade_from = SystemTime::now();
    let witness = upgrade::<Nova>(&h, NAME, "2026.2", UPGRADE_TIMEOUT).await?;
    let upgrade_to = SystemTime::now();
    let (during, tally) = stop_load(load, Duration::from_secs(120)).await?;
    eprintln!(
        "FIGURES nova reads during the upgrade: requests={} failed={} {} servers: {}; nova upgrade took {:.0}s",
        tally.requests(),
        tally.failures().len(),
        latency_figures(&tally, upgrade_from, (upgrade_from, upgrade_to)),
        during.made().summary,
        upgrade_to
            .duration_since(upgrade_from)
            .unwrap_or_default()
            .as_secs_f64(),
    );
    no_failed_request(&tally, 50)?;
    ensure!(
        during.lost_after.is_empty(),
        "servers not as they were: {:#?}",
        during.lost_after
    );

    // After: the same servers, and boots and deletes on the upgraded cloud.
    let lifecycle = NovaLoadOptions {
        resume: Some(during),
        ..options
    };
    let load = nova::start(&h.client, &netns, h.name(), NAME, lifecycle).await?;
    until_requests(&load.tally(), LIFECYCLE_REQUESTS, LOAD_TIMEOUT).await?;
    let after = settled_load(load, "after the upgrade").await?;
    eprintln!(
        "FIGURES nova before: {}; after: {}",
        before.made().summary,
        after.made().summary
    );
    clean_upgrade::<Nova>(&h, &witness, NAME).await?;

    // Neutron tells Nova of its ports: this Nova registers in Neutron's
    // Keystone, so Neutron's notifications are on and its `[nova]` login
    // finds Nova's API in the catalogue; a port unplugged from a server
    // reaches Nova as an event for that server (Neutron's user holds `admin`
    // in the service project, without which Nova cannot see the server).
    let (server, _) = (after.kept.iter())
        .find(|(_, kept)| kept.seen.status == "ACTIVE")
        .context("an ACTIVE server after the upgrade")?;
    let neutron_addr = cluster_address(&h.client, h.name(), "neutron", "api").await?;
    let admin = admin_credentials(keystone_addr, ADMIN_PASSWORD);
    let port = neutron::plug_and_unplug(&netns, neutron_addr, &admin, server).await?;
    let told = until_logged(
        &h,
        &[
            &format!("Creating event network-vif-deleted:{port}"),
            server,
        ],
        Duration::from_secs(120),
    )
    .await?;
    eprintln!("Nova told of the unplugged port: {told:?}");

    // The stale compute was named and forced down before the roll.
    let migrated: Vec<String> = h
        .events_for(NAME)
        .await?
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("MigrateComplete"))
        .filter_map(|e| e.note)
        .collect();
    ensure!(
        migrated.iter().any(|n| n.contains(&format!(
            "nova-compute on {STALE_COMPUTE} (version {INSTALLED_SERVICE_VERSION}): forced down"
        ))),
        "MigrateComplete does not name the stale compute: {migrated:?}"
    );
    // And the status keeps saying so after the upgrade (an advisory condition).
    let nova = h.api::<Nova>().get(NAME).await?;
    let rows_current = nova
        .status
        .as_ref()
        .and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == "ServiceRowsCurrent")
        })
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()));
    ensure!(
        rows_current
            .as_ref()
            .is_some_and(|(status, reason, message)| status == "False"
                && reason == "StaleServicesFound"
                && message.contains(&format!("nova-compute on {STALE_COMPUTE}"))),
        "ServiceRowsCurrent does not name the stale compute: {rows_current:?}"
    );
    ensure!(
        h.event_types(NAME, "StaleServicesFound").await? == ["Warning"],
        "one Warning event names the stale rows"
    );
    // Every other service row at the target's version, none left behind by a
    // roll; the stale one forced down at the installed release's.
    for database in ["nova_cell0", "nova_cell1"] {
        let found = service_rows(&netns, &db, database).await?;
        let live: Vec<&Vec<String>> = found.iter().filter(|r| r[1] != STALE_COMPUTE).collect();
        ensure!(
            !live.is_empty()
                && live
                    .iter()
                    .all(|r| r.get(2).map(String::as_str) == Some(TARGET_SERVICE_VERSION)),
            "{database}'s services after the upgrade: {found:?}"
        );
    }
    let forced = rows(
        &netns,
        &db,
        "nova_cell1",
        &format!("SELECT forced_down, version FROM services WHERE host = '{STALE_COMPUTE}' AND deleted = 0"),
    )
    .await?;
    ensure!(
        forced == [vec!["1".to_string(), INSTALLED_SERVICE_VERSION.to_string()]],
        "the stale compute's row: {forced:?}"
    );
    // The pin: picked from the installed release's computes during the roll,
    // from the target's after the second roll.
    let pins = log_lines_naming(&h, &[PIN_LOG]);
    for version in [INSTALLED_SERVICE_VERSION, TARGET_SERVICE_VERSION] {
        ensure!(
            pins.iter()
                .any(|l| l.contains(&format!("minimum service version {version}"))),
            "no pin from service version {version} in {pins:#?}"
        );
    }
    // Each cell's online data migrations said what they did.
    let complete: Vec<String> = h
        .events_for(NAME)
        .await?
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(event::UPGRADE_COMPLETE))
        .filter_map(|e| e.note)
        .collect();
    for cell in ["cell0", "cell1"] {
        ensure!(
            complete.iter().any(|n| n.contains(&format!(
                "nova-online-migrations-{cell}: online_data_migrations exit 0"
            ))),
            "UpgradeComplete does not report {cell}'s migrations: {complete:?}"
        );
    }
    h.finish().await;
    Ok(())
}
