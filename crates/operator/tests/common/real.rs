//! What the tests with real OpenStack processes share: their images, Secrets,
//! SQL against the service's MariaDB and latency figures.

use ratchet_operator::service::peers::Peers;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams, PostParams};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::plan::start_patch;
use ratchet_operator::testing::witness::{
    Witness, event_counts, expected_upgrade, settled, violations,
};
use ratchet_phase_machine::vocabulary::event::{UPGRADE_CHECK_COMPLETED, UPGRADE_CHECK_WARNINGS};
use ratchet_testenv::ClientNetns;
use ratchet_testenv::backing::{self, Backing};
pub use ratchet_testenv::load::percentile;
use ratchet_testenv::load::{RunningLoad, SharedTally, Tally};
use ratchet_testenv::process_kubelet::images::Catalogue;
use ratchet_testenv::wait::until;
use serde_json::json;

use super::Harness;

/// Builds (or finds cached) every image a test runs, with MariaDB's and
/// RabbitMQ's, before any timeout starts.
pub async fn prepare_images(images: &[&str]) -> Result<()> {
    let mut all: Vec<String> = images.iter().map(|i| i.to_string()).collect();
    all.extend([
        backing::MARIADB_IMAGE.into(),
        backing::RABBITMQ_IMAGE.into(),
    ]);
    tokio::task::spawn_blocking(move || -> Result<()> {
        let catalogue = Catalogue::load()?;
        for image in &all {
            catalogue
                .resolve(image)
                .map_err(|e| anyhow::anyhow!("{}", e.0))?;
        }
        Ok(())
    })
    .await?
}

/// A Secret with one key.
pub async fn secret(h: &Harness, name: &str, key: &str, value: String) -> Result<()> {
    // Applied: a second call with the same name gives the key a new value.
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": { "name": name },
        "stringData": { key: value },
    });
    h.api::<Secret>()
        .patch(
            name,
            &PatchParams::apply("ratchet-test").force(),
            &Patch::Apply(&secret),
        )
        .await?;
    Ok(())
}

/// A ReadWriteMany claim of 1 GiB named `name` (a Glance's image store, say).
pub async fn claim(h: &Harness, name: &str) -> Result<()> {
    let claim: k8s_openapi::api::core::v1::PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": { "accessModes": ["ReadWriteMany"], "resources": { "requests": { "storage": "1Gi" } } },
    }))?;
    h.api().create(&PostParams::default(), &claim).await?;
    Ok(())
}

/// Runs `sql` against `database` with Debian's mariadb client from the client
/// network namespace (a child forked there inherits it): its rows, tab-separated.
pub async fn query(netns: &ClientNetns, db: &Backing, database: &str, sql: &str) -> Result<String> {
    let mut args = client_args(db, database);
    args.extend(["-e".into(), sql.into()]);
    let output = netns
        .run_blocking(move || std::process::Command::new("mariadb").args(args).output())
        .await??;
    ensure!(
        output.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The mariadb client's arguments for `database`, output as bare rows.
fn client_args(db: &Backing, database: &str) -> Vec<String> {
    vec![
        "-h".to_string(),
        db.cluster_ip.to_string(),
        "-u".into(),
        backing::USER.into(),
        format!("-p{}", backing::PASSWORD),
        "--batch".into(),
        "--skip-column-names".into(),
        "--connect-timeout=5".into(),
        database.into(),
    ]
}

/// Polls `sql` (one value) about twice a second until it reads `expected`.
pub async fn until_sql(
    netns: &ClientNetns,
    db: &Backing,
    database: &str,
    sql: &str,
    expected: &str,
    timeout: Duration,
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = String::new();
    while tokio::time::Instant::now() < deadline {
        last = query(netns, db, database, sql).await?.trim().to_string();
        if last == expected {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    anyhow::bail!("{sql} still reads {last:?}, not {expected:?}, after {timeout:?}")
}

/// An open transaction holding row locks: what a slow writer looks like to the
/// service. A mariadb client kept running in the client namespace holds it.
pub struct RowLocks {
    client: std::process::Child,
    /// The first row of the locking `SELECT`.
    pub selected: String,
}

impl RowLocks {
    /// Begins a transaction and runs `select` (a `SELECT … FOR UPDATE`),
    /// returning once it answered, i.e. once its rows are locked.
    pub async fn take(
        netns: &ClientNetns,
        db: &Backing,
        database: &str,
        select: &str,
    ) -> Result<RowLocks> {
        use std::io::{BufRead, Write};
        use std::process::{Command, Stdio};
        let mut args = client_args(db, database);
        args.push("--unbuffered".into());
        let mut client = netns
            .run_blocking(move || {
                Command::new("mariadb")
                    .args(args)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
            })
            .await??;
        let sql = format!("BEGIN;\n{select};\n");
        let (stdin, stdout) = (client.stdin.as_mut(), client.stdout.take());
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            anyhow::bail!("the mariadb client has no pipes");
        };
        stdin.write_all(sql.as_bytes())?;
        stdin.flush()?;
        let selected = tokio::time::timeout(
            Duration::from_secs(30),
            tokio::task::spawn_blocking(move || {
                let mut line = String::new();
                std::io::BufReader::new(stdout)
                    .read_line(&mut line)
                    .map(|_| line.trim().to_string())
            }),
        )
        .await???;
        ensure!(!selected.is_empty(), "{select} answered nothing");
        Ok(RowLocks { client, selected })
    }

    /// Ends the transaction (the client exits on end of input, rolling it back).
    pub async fn release(mut self) -> Result<()> {
        drop(self.client.stdin.take());
        tokio::task::spawn_blocking(move || self.client.wait()).await??;
        Ok(())
    }
}

/// `query`'s rows split into columns.
pub async fn rows(
    netns: &ClientNetns,
    db: &Backing,
    database: &str,
    sql: &str,
) -> Result<Vec<Vec<String>>> {
    Ok(query(netns, db, database, sql)
        .await?
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect())
}

/// How long a quiet window of load lasts before the upgrade, as its baseline.
pub const STEADY_WINDOW: Duration = Duration::from_secs(20);

/// Every line of every container log in the test's namespace that names one
/// of `needles` (volume or node ids), prefixed with its pod: the evidence a
/// failure message carries, since the logs go with the test environment.
pub fn log_lines_naming(h: &Harness, needles: &[&str]) -> Vec<String> {
    let Ok(namespace_dir) = h.env.pods_dir(h.name()) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let pods = std::fs::read_dir(namespace_dir)
        .into_iter()
        .flatten()
        .flatten();
    for pod in pods {
        let files = std::fs::read_dir(pod.path())
            .into_iter()
            .flatten()
            .flatten();
        for file in files {
            let path = file.path();
            if path.extension().is_none_or(|e| e != "log") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            for line in text.lines() {
                if needles.iter().any(|n| line.contains(n)) {
                    let pod = pod.file_name().to_string_lossy().into_owned();
                    found.push(format!(
                        "{pod}: {}",
                        line.chars().take(400).collect::<String>()
                    ));
                }
            }
        }
    }
    found
}

/// Waits until some container log line of the test's namespace names every
/// one of `needles`; returns those lines.
pub async fn until_logged(h: &Harness, needles: &[&str], timeout: Duration) -> Result<Vec<String>> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let found: Vec<String> = log_lines_naming(h, &needles[..1])
            .into_iter()
            .filter(|line| needles.iter().all(|n| line.contains(n)))
            .collect();
        if !found.is_empty() {
            return Ok(found);
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "no log line names all of {needles:?} after {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Creates `object` (named `name`) and waits until it settled at `release`.
pub async fn install<S: OpenStackService>(
    h: &Harness,
    object: &S,
    name: &str,
    release: &str,
    timeout: Duration,
) -> Result<()> {
    h.api::<S>().create(&PostParams::default(), object).await?;
    installed::<S>(h, name, release, timeout).await
}

/// Waits until `name` settled at `release`.
pub async fn installed<S: OpenStackService>(
    h: &Harness,
    name: &str,
    release: &str,
    timeout: Duration,
) -> Result<()> {
    until(
        &h.api::<S>(),
        name,
        timeout,
        &format!("installed at {release}"),
        settled::<S>(release),
    )
    .await
    .context("install")?;
    Ok(())
}

/// Starts the upgrade of `name` to `target` as a user would (release and
/// image together) with a witness watching, and waits until it settled
/// there, second roll included: the witness, to check afterwards.
pub async fn upgrade<S: OpenStackService>(
    h: &Harness,
    name: &str,
    target: &str,
    timeout: Duration,
) -> Result<Witness> {
    let api = h.api::<S>();
    let witness = Witness::start::<S>(&h.client, h.name());
    let installed = api.get(name).await?;
    let patch = start_patch(&installed.spec_view(), target);
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    until(
        &api,
        name,
        timeout,
        &format!("upgraded to {target} and rolled out"),
        settled::<S>(target),
    )
    .await
    .context("upgrade")?;
    Ok(witness)
}

/// The upgrade the witness saw kept the machine's rules: phases in the
/// profile's order, each phase Job and event once.
pub async fn clean_upgrade<S: OpenStackService>(
    h: &Harness,
    witness: &Witness,
    name: &str,
) -> Result<()> {
    clean_upgrade_tolerating::<S>(h, witness, name, None).await
}

/// [`clean_upgrade`], where the upgrade check may instead report, once, the
/// warnings `tolerated` names (`failed: Service UUIDs`: a Cinder check that
/// met a volume its load was still creating, which has no service yet).
pub async fn clean_upgrade_tolerating<S: OpenStackService>(
    h: &Harness,
    witness: &Witness,
    name: &str,
    tolerated: Option<&str>,
) -> Result<()> {
    let mut counts = event_counts(&h.client, h.name(), name).await?;
    if let Some(tolerated) = tolerated {
        let warned: Vec<String> = h
            .events_for(name)
            .await?
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(UPGRADE_CHECK_WARNINGS))
            .map(|e| e.note.unwrap_or_default())
            .collect();
        if let [note] = warned.as_slice() {
            ensure!(
                note.contains(&format!("{tolerated};")),
                "the check warned of more than {tolerated}: {note}"
            );
            // Counted as the one report the rules ask for.
            *counts
                .entry(UPGRADE_CHECK_COMPLETED.to_string())
                .or_default() += 1;
            counts.remove(UPGRADE_CHECK_WARNINGS);
        }
    }
    let groups = h
        .api::<S>()
        .get(name)
        .await?
        .model(name, &Peers::none())
        .job_group_names();
    let broken = violations(
        &witness.seen(),
        name,
        &expected_upgrade(&S::profile(), &groups),
        &counts,
    );
    ensure!(
        broken.is_empty(),
        "the upgrade broke the rules: {broken:?}; events about {name}: {:?}",
        h.event_reasons(name).await?
    );
    Ok(())
}

/// Stops `load` and gives its outcome with every request it made.
pub async fn stop_load<Outcome: Send + 'static>(
    load: RunningLoad<Outcome>,
    settle: Duration,
) -> Result<(Outcome, Tally)> {
    let tally = load.tally();
    let outcome = load.stop(settle).await?;
    let tally = tally
        .lock()
        .map_err(|_| anyhow::anyhow!("tally poisoned"))?
        .clone();
    Ok((outcome, tally))
}

/// No request failed, and there were more than `at_least`.
pub fn no_failed_request(tally: &Tally, at_least: usize) -> Result<()> {
    let failures = tally.failures();
    ensure!(
        failures.is_empty(),
        "{} of {} requests failed: {:#?}",
        failures.len(),
        tally.requests(),
        failures.iter().take(20).collect::<Vec<_>>(),
    );
    ensure!(
        tally.requests() > at_least,
        "the load made only {} requests",
        tally.requests()
    );
    Ok(())
}

/// "steady p50=… p99=… upgrade p50=… p99=…": the client's latencies before
/// and during the upgrade, for the FIGURES line.
pub fn latency_figures(
    tally: &Tally,
    steady_from: SystemTime,
    upgrade: (SystemTime, SystemTime),
) -> String {
    let steady = tally.latencies_ms(steady_from, upgrade.0);
    let during = tally.latencies_ms(upgrade.0, upgrade.1);
    format!(
        "steady p50={:.1}ms p99={:.1}ms upgrade p50={:.1}ms p99={:.1}ms",
        percentile(steady.clone(), 0.5),
        percentile(steady, 0.99),
        percentile(during.clone(), 0.5),
        percentile(during, 0.99),
    )
}

/// The catalogue of the Keystone at `keystone` (its ClusterIP), read as its
/// bootstrap admin, lists each `(type, url)` of `expected` exactly as Ratchet
/// registers it: one `internal` and one `public` endpoint at that URL in
/// `RegionOne`.
pub async fn registered(
    netns: &ClientNetns,
    keystone: std::net::SocketAddr,
    admin_password: &str,
    expected: &[(&str, String)],
) -> Result<()> {
    let catalog = ratchet_testenv::load::auth::catalog(netns, keystone, admin_password).await?;
    for (kind, url) in expected {
        let endpoints: Vec<(&str, &str)> = catalog
            .iter()
            .filter(|e| e.service_type == *kind && e.region == "RegionOne")
            .map(|e| (e.interface.as_str(), e.url.as_str()))
            .collect();
        ensure!(
            endpoints == [("internal", url.as_str()), ("public", url.as_str())],
            "the {kind} endpoints in the catalogue: {endpoints:?}"
        );
    }
    Ok(())
}

/// A Keystone `name` (2026.1, one API: it does not upgrade beside the
/// service under test) on `db`'s database `keystone`, its admin password
/// `admin_password`, created and not waited for, and a memcached for
/// keystonemiddleware's token caches: the memcached.
pub async fn keystone_beside(
    h: &Harness,
    name: &str,
    db: &Backing,
    admin_password: &str,
) -> Result<Backing> {
    secret(h, "keystone-db", "connection", db.mysql_url("keystone")).await?;
    secret(h, "keystone-admin", "password", admin_password.into()).await?;
    let manifest = ratchet_services::keystone::resource::example_manifest(
        name,
        "2026.1",
        "ratchet.test/keystone",
        "2026.1",
        1,
    );
    let keystone: ratchet_services::keystone::v1alpha1::Keystone =
        serde_json::from_value(manifest)?;
    h.api().create(&PostParams::default(), &keystone).await?;
    Ok(backing::memcached(&h.client, h.name(), "memcached").await?)
}

/// Waits until the load client behind `tally` has made `count` requests: a
/// window measured in work, not time, so a busy machine only makes it longer.
pub async fn until_requests(tally: &SharedTally, count: usize, timeout: Duration) -> Result<()> {
    let made = || tally.lock().map(|t| t.requests()).unwrap_or_default();
    let deadline = tokio::time::Instant::now() + timeout;
    while made() < count {
        ensure!(
            tokio::time::Instant::now() < deadline,
            "the load made only {} requests in {timeout:?}",
            made()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}
