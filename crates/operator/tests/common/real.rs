//! What the tests with real OpenStack processes share: their images, Secrets,
//! SQL against the service's MariaDB and latency figures.

use std::time::Duration;

use anyhow::{Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use ratchet_testenv::ClientNetns;
use ratchet_testenv::backing::{self, Backing};
use ratchet_testenv::process_kubelet::images::Catalogue;
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
    let secret: Secret = serde_json::from_value(json!({
        "metadata": { "name": name },
        "stringData": { key: value },
    }))?;
    h.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await?;
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
        db.ip.to_string(),
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

/// The `p`-quantile (0..=1) of `values`, 0 for none.
pub fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let index = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[index.min(values.len() - 1)]
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
