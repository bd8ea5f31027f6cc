//! The operator as a process: resident memory at idle and while many Cinders
//! install and upgrade, and how long a standby takes to take over from a
//! killed leader. Needs the `ratchet` binary next to this one
//! (`cargo build -p ratchet` first, same profile).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use ratchet_services::cinder::v1beta1::{Cinder, CinderUpgradePhase};
use ratchet_testenv::{KubeletOptions, LocalCluster, SimKubelet};

use crate::setup::REPO;
use ratchet_services::Services;

#[derive(Args)]
pub struct OperatorArgs {
    /// Cinders to install and upgrade at once.
    #[arg(long, default_value_t = 100)]
    cinders: usize,
}

pub fn ratchet_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = exe.parent().context("binary directory")?.join("ratchet");
    if !path.is_file() {
        bail!(
            "{} not found: run `cargo build -p ratchet` (same profile) first",
            path.display()
        );
    }
    Ok(path)
}

/// Resident set size of a process, in MiB.
fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

struct Operator(Child);

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_operator(
    kubeconfig: &std::path::Path,
    extra: &[&str],
    identity: &str,
) -> anyhow::Result<Operator> {
    let child = Command::new(ratchet_binary()?)
        .args([
            "operator",
            "--metrics-bind",
            "127.0.0.1:0",
            "--concurrency",
            "8",
        ])
        .args(extra)
        .env("KUBECONFIG", kubeconfig)
        .env("POD_NAME", identity)
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    Ok(Operator(child))
}

/// Waits until every Cinder is settled at `release`, sampling the peak RSS.
async fn settle_all(
    api: &Api<Cinder>,
    count: usize,
    release: &str,
    pid: u32,
) -> anyhow::Result<(Duration, f64)> {
    let started = Instant::now();
    let mut peak = rss_mib(pid).unwrap_or(0.0);
    let mut stream = watcher::watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let mut done = std::collections::HashSet::new();
    let mut sample = tokio::time::interval(Duration::from_millis(200));
    while done.len() < count {
        tokio::select! {
            next = stream.next() => {
                let c = next.context("watch ended")??;
                let settled = c.status.as_ref().is_some_and(|s| {
                    s.installed_release == release
                        && s.upgrade_phase == CinderUpgradePhase::None
                        && s.observed_generation == c.metadata.generation
                        && ["Ready", "DeploymentsReady"].iter().all(|kind| {
                            s.conditions.iter().any(|x| x.type_ == *kind && x.status == "True")
                        })
                });
                let name = c.metadata.name.clone().unwrap_or_default();
                if settled { done.insert(name); } else { done.remove(&name); }
            }
            _ = sample.tick() => {
                peak = peak.max(rss_mib(pid).unwrap_or(0.0));
                if started.elapsed() > Duration::from_secs(1800) {
                    bail!("only {} of {count} settled at {release} after 30 min", done.len());
                }
            }
        }
    }
    Ok((started.elapsed(), peak))
}

pub async fn run(args: OperatorArgs) -> anyhow::Result<()> {
    let cluster = LocalCluster::start().await?;
    let admin = cluster.client()?;
    let _kubelet = SimKubelet::start(admin.clone(), KubeletOptions::default()).await?;
    ratchet_operator::install::install_crds::<Services>(&admin, Duration::from_secs(60)).await?;
    ratchet_operator::install::ensure_example_secrets::<Services>(&admin, "default").await?;
    let kubeconfig = cluster.kubeconfig_path().to_path_buf();

    let operator = spawn_operator(&kubeconfig, &[], "bench")?;
    let pid = operator.0.id();
    // Idle: give it five seconds to start, list and settle with nothing to do.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle = rss_mib(pid).context("reading the operator's RSS")?;
    println!("operator RSS at idle: {idle:.1} MiB");

    let api: Api<Cinder> = Api::namespaced(admin.clone(), "default");
    for i in 0..args.cinders {
        let cinder: Cinder = serde_json::from_value(ratchet_services::cinder::example_manifest(
            &format!("c{i}"),
            "2026.1",
            REPO,
            "2026.1",
            &[],
        ))?;
        api.create(&PostParams::default(), &cinder).await?;
    }
    let (took, peak) = settle_all(&api, args.cinders, "2026.1", pid).await?;
    println!(
        "{} Cinders installed in {:.1}s; operator peak RSS {peak:.1} MiB",
        args.cinders,
        took.as_secs_f64()
    );
    let patch = serde_json::json!({ "spec": { "openStackRelease": "2026.2", "image": { "reference": { "tag": "2026.2" } } } });
    for i in 0..args.cinders {
        api.patch(
            &format!("c{i}"),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    }
    let (took, peak) = settle_all(&api, args.cinders, "2026.2", pid).await?;
    println!(
        "{} Cinders upgraded 2026.1 → 2026.2 in {:.1}s; operator peak RSS {peak:.1} MiB",
        args.cinders,
        took.as_secs_f64()
    );
    drop(operator);

    takeover(&admin, &kubeconfig).await
}

/// Two replicas with leader election; the leader is killed (no release); the
/// time until the standby acts on a change.
async fn takeover(admin: &Client, kubeconfig: &std::path::Path) -> anyhow::Result<()> {
    let lease_args = [
        "--leader-election",
        "--lease-namespace",
        "default",
        "--lease-duration-seconds",
        "15",
    ];
    let a = spawn_operator(kubeconfig, &lease_args, "replica-a")?;
    let b = spawn_operator(kubeconfig, &lease_args, "replica-b")?;
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "default");
    let lease = ratchet_testenv::wait::until(
        &leases,
        "ratchet-leader",
        Duration::from_secs(60),
        "a leader",
        |l: &Lease| {
            l.spec
                .as_ref()
                .and_then(|s| s.holder_identity.as_deref())
                .is_some_and(|h| !h.is_empty())
        },
    )
    .await?;
    let holder = lease
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    let (mut leader, _standby) = if holder == "replica-a" {
        (a, b)
    } else {
        (b, a)
    };
    let killed = Instant::now();
    leader.0.kill()?;
    let _ = leader.0.wait();
    // A change only a reconciling operator answers.
    let api: Api<Cinder> = Api::namespaced(admin.clone(), "default");
    let name = api
        .list(&ListParams::default().limit(1))
        .await?
        .items
        .first()
        .and_then(|c| c.metadata.name.clone())
        .context("a Cinder")?;
    let patch =
        serde_json::json!({ "spec": { "extraConfig": { "DEFAULT": { "debug": "true" } } } });
    let changed = api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let generation = changed.metadata.generation;
    ratchet_testenv::wait::until(
        &api,
        &name,
        Duration::from_secs(120),
        "standby reconciles",
        |c: &Cinder| c.status.as_ref().and_then(|s| s.observed_generation) == generation,
    )
    .await?;
    println!(
        "standby takeover after the leader was killed (lease 15 s): {:.1}s until the change was reconciled",
        killed.elapsed().as_secs_f64()
    );
    Ok(())
}
