//! Keystone for real, at the centre of a cloud: keystone 29.1.0 (2026.1)
//! upgraded to 30.0.0 (2026.2) with every Job and API pod a real process on
//! the process kubelet, against a real MariaDB, while a client keeps issuing
//! and validating tokens and creating projects, and a Glance that
//! authenticates every request through this Keystone (`spec.identity`,
//! found by its Service name) serves a second client logged in as a project
//! user. Tokens issued by the old release must validate on the new one (both
//! read the key Secrets Ratchet made once), and Glance's token checks must not
//! fail while Keystone rolls. Then Glance itself goes to 33.0.0 (2026.2), still
//! authenticating, under both clients. Needs root (the process kubelet).

mod common;

use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, ensure};
use common::Harness;
use common::real::{
    STEADY_WINDOW, claim, clean_upgrade, clean_upgrade_tolerating, installed, latency_figures,
    log_lines_naming, no_failed_request, prepare_images, registered, rows, secret, stop_load,
    upgrade,
};
use common::real_cinder;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use ratchet_operator::service::OpenStackService;
use ratchet_phase_machine::vocabulary::{condition, reason};
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_services::glance::resource::EXAMPLE_CLAIM;
use ratchet_services::glance::v1alpha1::Glance;
use ratchet_services::keystone::resource::authenticating;
use ratchet_services::keystone::v1alpha1::Keystone;
use ratchet_testenv::ClientNetns;
use ratchet_testenv::backing;
use ratchet_testenv::load::auth::{self, Scope, UserGrant};
use ratchet_testenv::load::cinder::{self, CinderLoadOptions};
use ratchet_testenv::load::glance::{self, GlanceLoadOptions};
use ratchet_testenv::load::keystone::{self, KeystoneLoadOptions};
use ratchet_testenv::load::{self, Outcome, Tally, cluster_address, percentile};
use ratchet_testenv::wait::until;
use serde_json::json;

const NAME: &str = "keystone";
const ADMIN_PASSWORD: &str = "ratchet-admin-test";
const GLANCE: &str = "glance";
const GLANCE_PASSWORD: &str = "ratchet-glance-test";
const CINDER: &str = "cinder";
const CINDER_PASSWORD: &str = "ratchet-cinder-test";
/// Cold: the first db sync, bootstrap and every uWSGI start on two cores.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(900);

#[tokio::test]
async fn a_real_keystone_upgrades_under_load_with_no_failed_request_and_every_token_valid()
-> Result<()> {
    prepare_images(&[
        "ratchet.test/keystone:2026.1",
        "ratchet.test/keystone:2026.2",
        "ratchet.test/glance:2026.1",
        "ratchet.test/glance:2026.2",
        "ratchet.test/cinder:2026.1",
        "ratchet.test/cinder:2026.2",
    ])
    .await?;
    let h = Harness::start_real("keystone-real").await?;
    let db = backing::mariadb(
        &h.client,
        h.name(),
        "mariadb",
        &["keystone", GLANCE, CINDER],
    )
    .await?;
    secret(&h, "keystone-db", "connection", db.mysql_url("keystone")).await?;
    secret(&h, "keystone-admin", "password", ADMIN_PASSWORD.into()).await?;

    let example = Keystone::example(NAME, "2026.1", "ratchet.test/keystone", 2);
    let keystone: Keystone = serde_json::from_value(example.manifest)?;
    h.api::<Keystone>()
        .create(&PostParams::default(), &keystone)
        .await?;
    // Glance at once, before Keystone serves: its registration (service user,
    // catalogue entry, endpoints) fails, is reported and retried, and its API
    // waits for it.
    let cache = backing::memcached(&h.client, h.name(), "memcached").await?;
    create_glance(&h, &db, &cache).await?;
    create_cinder(&h, &db, &cache).await?;
    installed::<Keystone>(&h, NAME, "2026.1", INSTALL_TIMEOUT).await?;
    installed::<Glance>(&h, GLANCE, "2026.1", INSTALL_TIMEOUT).await?;
    installed::<Cinder>(&h, CINDER, "2026.1", INSTALL_TIMEOUT).await?;
    let retried = h.event_types(GLANCE, reason::REGISTRATION_RETRYING).await?;
    ensure!(
        !retried.is_empty() && retried.iter().all(|t| t == "Warning"),
        "the registration's failed attempts were not reported: {retried:?}"
    );
    ensure!(h.event_types(GLANCE, reason::REGISTERED).await? == ["Normal"]);
    let glance_api = cluster_address(&h.client, h.name(), GLANCE, "api").await?;

    let netns = h.env.client_netns()?;
    let keystone_addr = cluster_address(&h.client, h.name(), NAME, "api").await?;
    let expected = [
        ("image", format!("http://{GLANCE}.{}.svc:9292", h.name())),
        (
            "block-storage",
            format!("http://{CINDER}.{}.svc:8776/v3/%(project_id)s", h.name()),
        ),
    ];
    registered(&netns, keystone_addr, ADMIN_PASSWORD, &expected).await?;
    a_refused_password_is_reported_and_retried_on_a_new_secret(&h, &netns, keystone_addr).await?;

    // The project member Glance's and Cinder's clients log in as.
    let user = load::login_for(GLANCE, &netns, keystone_addr, ADMIN_PASSWORD)
        .await?
        .context("Glance's client logs in")?;
    // No token, no image: Glance asks Keystone about every request.
    let (status, _) = netns.http_get(glance_api, "/v2/images").await??;
    ensure!(status == 401, "an unauthenticated request got {status}");

    let options = KeystoneLoadOptions {
        admin_password: ADMIN_PASSWORD.into(),
        pause: keystone::DEFAULT_PAUSE,
    };
    let load = keystone::start(&h.client, &netns, h.name(), NAME, options).await?;
    let glance_options = GlanceLoadOptions {
        login: Some(user.clone()),
        ..GlanceLoadOptions::default()
    };
    let glance_load = glance::start(&h.client, &netns, h.name(), GLANCE, glance_options).await?;
    // Volumes only: backups lost to cinder-backup's restarts are issue 40's.
    let cinder_options = CinderLoadOptions {
        backup_every: None,
        login: Some(user),
        admin: Some(auth::admin_credentials(keystone_addr, ADMIN_PASSWORD)),
        ..CinderLoadOptions::default()
    };
    let cinder_load = cinder::start(&h.client, &netns, h.name(), CINDER, cinder_options).await?;
    let steady_from = SystemTime::now();
    tokio::time::sleep(STEADY_WINDOW).await;
    let upgrade_from = SystemTime::now();
    let witness = upgrade::<Keystone>(&h, NAME, "2026.2", UPGRADE_TIMEOUT).await?;
    let upgrade_to = SystemTime::now();
    // Then Glance itself, still authenticating every request, under both clients.
    let glance_witness = upgrade::<Glance>(&h, GLANCE, "2026.2", UPGRADE_TIMEOUT).await?;
    let glance_upgraded = SystemTime::now();
    // Then Cinder, under all three clients.
    let cinder_witness = upgrade::<Cinder>(&h, CINDER, "2026.2", UPGRADE_TIMEOUT).await?;
    let cinder_upgraded = SystemTime::now();

    let (outcome, tally) = stop_load(load, Duration::from_secs(60)).await?;
    let (images, glance_tally) = stop_load(glance_load, Duration::from_secs(60)).await?;
    let (volumes, cinder_tally) = stop_load(cinder_load, Duration::from_secs(120)).await?;
    eprintln!(
        "FIGURES cinder (authenticated) requests={} failed={} keystone's upgrade: {} cinder's upgrade: {} {}",
        cinder_tally.requests(),
        cinder_tally.failures().len(),
        latency_figures(&cinder_tally, steady_from, (upgrade_from, upgrade_to)),
        span_figures(&cinder_tally, glance_upgraded, cinder_upgraded),
        volumes.made().summary,
    );
    no_failed_request(&cinder_tally, 50)?;
    // A request a stopping Cinder service took and dropped is issue 40's, and
    // accepted only where Cinder's own rows or logs prove it (as in cinder_real).
    let (unexplained, lost_casts) =
        real_cinder::unexplained_volumes(&h, &netns, &db, &volumes).await?;
    eprintln!("LOST CASTS (accepted by the API, never taken by a service): {lost_casts:?}");
    if !unexplained.is_empty() {
        let ids: Vec<&str> = unexplained.iter().map(String::as_str).collect();
        anyhow::bail!(
            "volumes lost: {:?}; unexplained by a lost cast: {unexplained:?}; Cinder says: {:#?}; \
             the logs say: {:#?}",
            volumes.made().lost,
            volumes.errors,
            log_lines_naming(&h, &ids),
        );
    }
    // Each back end was disabled through the API as Cinder's service user
    // (admin in the service project) before its restart; no drain failed.
    let drains: Vec<(String, String)> = h
        .events_for(CINDER)
        .await?
        .into_iter()
        .filter_map(|e| Some((e.reason?, e.note.unwrap_or_default())))
        .filter(|(reason, _)| reason == "HostDrained" || reason == "DrainFailed")
        .collect();
    for backend in ["files-a", "files-b"] {
        let disabled = format!(
            "cinder-volume-{backend}: cinder-volume cinder-volume-{backend}@{backend} disabled, drained in "
        );
        ensure!(
            drains.iter().any(|(_, note)| note.starts_with(&disabled)),
            "{backend} drained as Cinder's service user: {drains:#?}"
        );
    }
    ensure!(
        drains.iter().all(|(reason, _)| reason == "HostDrained"),
        "a drain failed: {drains:#?}"
    );
    eprintln!(
        "FIGURES glance (authenticated) requests={} failed={} keystone's upgrade: {} glance's upgrade: {} images uploaded={}",
        glance_tally.requests(),
        glance_tally.failures().len(),
        latency_figures(&glance_tally, steady_from, (upgrade_from, upgrade_to)),
        span_figures(&glance_tally, upgrade_to, glance_upgraded),
        images.uploaded.len(),
    );
    no_failed_request(&glance_tally, 50)?;
    // keystonemiddleware kept the validated tokens in memcached and found
    // them there again.
    let stats = memcached_stats(&netns, &cache).await?;
    let stat = |name: &str| -> u64 {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&format!("STAT {name} ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    ensure!(
        stat("curr_items") > 0 && stat("get_hits") > 0,
        "the token cache was not used: {stats}"
    );
    ensure!(
        images.damaged_after.is_empty(),
        "images not intact after Keystone's upgrade: {:#?}",
        images.damaged_after
    );
    let before_upgrade = outcome
        .issued
        .iter()
        .filter(|t| t.at < upgrade_from)
        .count();
    eprintln!(
        "FIGURES requests={} failed={} {} tokens issued={} (before the upgrade \
         {before_upgrade}) projects created={}",
        tally.requests(),
        tally.failures().len(),
        latency_figures(&tally, steady_from, (upgrade_from, upgrade_to)),
        outcome.issued.len(),
        outcome.created_projects.len(),
    );
    no_failed_request(&tally, 100)?;
    ensure!(before_upgrade > 0, "no token issued before the upgrade");
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
    clean_upgrade::<Keystone>(&h, &witness, NAME).await?;
    clean_upgrade::<Glance>(&h, &glance_witness, GLANCE).await?;
    // A volume the client was still creating when Cinder's check ran has no
    // service yet: its Service UUIDs check may fail (exit 2, tolerated).
    clean_upgrade_tolerating::<Cinder>(&h, &cinder_witness, CINDER, Some("failed: Service UUIDs"))
        .await?;

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

/// Creates Glance at 2026.1 with two APIs, authenticating through the
/// Keystone `NAME` as its service user, which Ratchet registers.
async fn create_glance(h: &Harness, db: &backing::Backing, cache: &backing::Backing) -> Result<()> {
    secret(h, "glance-db", "connection", db.mysql_url(GLANCE)).await?;
    secret(h, "glance-keystone", "password", GLANCE_PASSWORD.into()).await?;
    claim(h, EXAMPLE_CLAIM).await?;
    let manifest = authenticating(
        Glance::example(GLANCE, "2026.1", "ratchet.test/glance", 2).manifest,
        NAME,
        "glance-keystone",
        &cache.memcached_server(),
    );
    let glance: Glance = serde_json::from_value(manifest)?;
    h.api::<Glance>()
        .create(&PostParams::default(), &glance)
        .await?;
    Ok(())
}

/// A second Glance whose service user already exists in Keystone with
/// another password than its Secret's: Ratchet does not reset a user it did
/// not create, says so naming the Secret, starts no API, and registers once
/// the Secret holds the user's password. Then it is deleted.
async fn a_refused_password_is_reported_and_retried_on_a_new_secret(
    h: &Harness,
    netns: &ClientNetns,
    keystone: std::net::SocketAddr,
) -> Result<()> {
    const REFUSED: &str = "glance-refused";
    const LEGACY_USER: &str = "legacy-glance";
    const LEGACY_PASSWORD: &str = "ratchet-legacy-test";
    auth::create_users(
        netns,
        keystone,
        ADMIN_PASSWORD,
        &[UserGrant {
            user: LEGACY_USER.into(),
            password: LEGACY_PASSWORD.into(),
            scope: Scope::Project("service".into()),
            role: "service".into(),
        }],
    )
    .await?;
    let secret_name = "glance-refused-keystone";
    secret(h, secret_name, "password", "not-the-users-password".into()).await?;
    let mut manifest = Glance::example(REFUSED, "2026.1", "ratchet.test/glance", 1).manifest;
    manifest["spec"]["identity"] = json!({
        "keystone": NAME,
        "username": LEGACY_USER,
        "password": { "secretName": secret_name, "key": "password" },
    });
    let glance: Glance = serde_json::from_value(manifest)?;
    let api = h.api::<Glance>();
    api.create(&PostParams::default(), &glance).await?;
    let registration = |g: &Glance| {
        g.status
            .as_ref()
            .and_then(|s| {
                s.conditions
                    .iter()
                    .find(|c| c.type_ == condition::KEYSTONE_REGISTERED)
            })
            .map(|c| (c.reason.clone(), c.message.clone()))
    };
    let refused = until(
        &api,
        REFUSED,
        INSTALL_TIMEOUT,
        "the password refused",
        |g| registration(g).is_some_and(|(r, _)| r == reason::SERVICE_PASSWORD_REFUSED),
    )
    .await?;
    let message = registration(&refused).map(|(_, m)| m).unwrap_or_default();
    ensure!(
        message.contains(secret_name) && message.contains(LEGACY_USER),
        "the condition does not name the user and the Secret: {message}"
    );
    h.wait_event(REFUSED, reason::SERVICE_PASSWORD_REFUSED)
        .await?;
    let deployments: Api<Deployment> = h.api();
    ensure!(
        deployments
            .get_opt(&format!("{REFUSED}-api"))
            .await?
            .is_none(),
        "an API started without its registration"
    );
    secret(h, secret_name, "password", LEGACY_PASSWORD.into()).await?;
    until(&api, REFUSED, INSTALL_TIMEOUT, "registered", |g| {
        registration(g).is_some_and(|(r, _)| r == reason::REGISTERED)
    })
    .await?;
    api.delete(REFUSED, &DeleteParams::default()).await?;
    Ok(())
}

/// Creates Cinder at 2026.1 (the real example: two APIs, two schedulers,
/// two file back ends, backups), authenticating through the Keystone `NAME`
/// instead of the example's noauth.
async fn create_cinder(h: &Harness, db: &backing::Backing, cache: &backing::Backing) -> Result<()> {
    let mq = backing::rabbitmq(&h.client, h.name(), "rabbitmq").await?;
    secret(h, "cinder-db", "connection", db.mysql_url(CINDER)).await?;
    secret(h, "cinder-mq", "url", mq.amqp_url()).await?;
    secret(h, "cinder-keystone", "password", CINDER_PASSWORD.into()).await?;
    for name in ["cinder-files-a", "cinder-files-b", "cinder-backups"] {
        claim(h, name).await?;
    }
    let manifest = authenticating(
        Cinder::real_example(CINDER, "2026.1", "ratchet.test/cinder")
            .context("Cinder has a real example")?
            .manifest,
        NAME,
        "cinder-keystone",
        &cache.memcached_server(),
    );
    let cinder: Cinder = serde_json::from_value(manifest)?;
    h.api::<Cinder>()
        .create(&PostParams::default(), &cinder)
        .await?;
    Ok(())
}

/// p50 and p99 of the requests made between `from` and `to`.
fn span_figures(tally: &Tally, from: SystemTime, to: SystemTime) -> String {
    let own = tally.latencies_ms(from, to);
    format!(
        "p50={:.1}ms p99={:.1}ms",
        percentile(own.clone(), 0.5),
        percentile(own, 0.99)
    )
}

/// memcached's `stats`, asked through its ClusterIP from `netns`.
async fn memcached_stats(netns: &ClientNetns, cache: &backing::Backing) -> Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = std::net::SocketAddr::from((cache.cluster_ip, backing::MEMCACHED_PORT));
    let text = netns
        .run(async move {
            let mut stream = tokio::net::TcpStream::connect(addr).await?;
            stream.write_all(b"stats\r\nquit\r\n").await?;
            let mut text = String::new();
            stream.read_to_string(&mut text).await?;
            Ok::<_, std::io::Error>(text)
        })
        .await??;
    Ok(text)
}
