//! `ratchet operator` as a process: JSON logs that name the resource, health
//! endpoints, and a clean exit on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use ratchet_services::Services;
use ratchet_services::testing::create_example_cinder;
use ratchet_testenv::TestEnv;

#[tokio::test]
async fn json_logs_name_the_resource_and_sigterm_stops_cleanly() -> Result<()> {
    let env = TestEnv::shared()?;
    let client = env.client()?;
    ratchet_operator::install::install_crds::<Services>(&client, Duration::from_secs(60)).await?;
    let ns = env.namespace(&client, "binary").await?;
    let name = ns.name().to_string();
    // No Secrets: the reconcile fails with SecretMissing and logs a warning.
    create_example_cinder(&client, &name, "logged", "2026.1", &[]).await?;

    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args([
            "--log-format",
            "json",
            "operator",
            "--namespace",
            &name,
            "--metrics-bind",
            "127.0.0.1:0",
        ])
        .env("KUBECONFIG", env.kubeconfig_path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let lines = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let found = line.contains("logged") && line.contains("SecretMissing");
            seen.push(line);
            if found || Instant::now() > deadline {
                break;
            }
        }
        seen
    });
    let lines = tokio::time::timeout(Duration::from_secs(90), lines).await??;
    let last = lines.last().cloned().unwrap_or_default();
    ensure!(
        last.contains("SecretMissing"),
        "no reconcile warning in {lines:#?}"
    );
    let json: serde_json::Value = serde_json::from_str(&last).context("a JSON log line")?;
    ensure!(json["level"] == "WARN", "{json}");
    ensure!(
        json.to_string().contains(&format!("logged.{name}")),
        "the line names the resource: {json}"
    );

    // SIGTERM: graceful stop, exit status 0.
    let pid = i32::try_from(child.id())?;
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let status = tokio::task::spawn_blocking(move || child.wait()).await??;
    ensure!(status.success(), "exit status {status}");
    ns.cleanup().await;
    Ok(())
}
