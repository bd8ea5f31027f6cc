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
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::plan::start_patch;
use ratchet_operator::testing::witness::settled;
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_services::ironic::v1alpha1::Ironic;
use ratchet_testenv::{KubeletOptions, LocalCluster, SimKubelet};

use crate::setup::REPO;
use ratchet_services::Services;

#[derive(Args)]
pub struct OperatorArgs {
    /// Cinders to install and upgrade at once.
    #[arg(long, default_value_t = 100)]
    cinders: usize,
    /// Ironics beside them.
    #[arg(long, default_value_t = 0)]
    ironics: usize,
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
    metrics_bind: &str,
) -> anyhow::Result<Operator> {
    let mut command = Command::new(ratchet_binary()?);
    command
        .args([
            "operator",
            "--metrics-bind",
            metrics_bind,
            "--concurrency",
            "8",
        ])
        .args(extra)
        .env("KUBECONFIG", kubeconfig)
        .env("POD_NAME", identity)
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // To see why a figure is what it is: the operator's log at info (its own
    // crate and its leader election at debug), in a file.
    if let Some(path) = std::env::var_os("RATCHET_BENCH_OPERATOR_LOG") {
        let mut path = PathBuf::from(path);
        path.as_mut_os_string().push(format!(".{identity}"));
        let log = std::fs::File::create(&path)?;
        command
            .env(
                "RUST_LOG",
                "info,ratchet_operator=debug,kube_lease_manager=debug",
            )
            .stdout(log.try_clone()?)
            .stderr(log);
    }
    let child = command.spawn()?;
    Ok(Operator(child))
}

/// Waits until `count` resources of `K` are settled at `release`, sampling
/// the peak RSS.
async fn settle_all<K: OpenStackService>(
    api: &Api<K>,
    count: usize,
    release: &str,
    pid: u32,
) -> anyhow::Result<(Duration, f64)> {
    let started = Instant::now();
    let mut peak = rss_mib(pid).unwrap_or(0.0);
    if count == 0 {
        return Ok((Duration::ZERO, peak));
    }
    let is_settled = settled::<K>(release);
    // A dropped watch resumes: the figures are about the operator, not the link.
    let mut stream = watcher::watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    let mut done = std::collections::HashSet::new();
    let mut sample = tokio::time::interval(Duration::from_millis(200));
    while done.len() < count {
        tokio::select! {
            next = stream.next() => {
                let object = next.context("watch ended")??;
                let name = object.meta().name.clone().unwrap_or_default();
                if is_settled(&object) { done.insert(name); } else { done.remove(&name); }
            }
            _ = sample.tick() => {
                peak = peak.max(rss_mib(pid).unwrap_or(0.0));
                if started.elapsed() > Duration::from_secs(3600) {
                    bail!("only {} of {count} {} settled at {release} after an hour", done.len(), K::kind(&()));
                }
            }
        }
    }
    Ok((started.elapsed(), peak))
}

/// Creates `count` example resources of `K` at 2026.1, named `<prefix><i>`.
async fn create_all<K: OpenStackService>(
    api: &Api<K>,
    count: usize,
    prefix: &str,
) -> anyhow::Result<()> {
    for i in 0..count {
        let name = format!("{prefix}{i}");
        let example = K::example(&name, "2026.1", REPO, 0);
        let object: K = serde_json::from_value(example.manifest)?;
        api.create(&PostParams::default(), &object).await?;
    }
    Ok(())
}

/// Moves every resource of `K` to 2026.2 (release and image together).
async fn upgrade_all<K: OpenStackService>(api: &Api<K>) -> anyhow::Result<()> {
    for object in api.list(&ListParams::default()).await?.items {
        let patch = start_patch(&object.spec_view(), "2026.2");
        let name = object.meta().name.clone().unwrap_or_default();
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(())
}

pub async fn run(args: OperatorArgs) -> anyhow::Result<()> {
    let cluster = LocalCluster::start().await?;
    let admin = cluster.client()?;
    let _kubelet = SimKubelet::start(admin.clone(), KubeletOptions::default()).await?;
    ratchet_operator::install::install_crds::<Services>(&admin, Duration::from_secs(60)).await?;
    ratchet_operator::install::ensure_example_secrets::<Services>(&admin, "default").await?;
    let kubeconfig = cluster.kubeconfig_path().to_path_buf();

    // A port of its own, to read its metrics from afterwards.
    let metrics_bind = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let operator = spawn_operator(&kubeconfig, &[], "bench", &metrics_bind.to_string())?;
    let pid = operator.0.id();
    // Idle: give it five seconds to start, list and settle with nothing to do.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle = rss_mib(pid).context("reading the operator's RSS")?;
    println!("operator RSS at idle: {idle:.1} MiB");

    let cinders: Api<Cinder> = Api::namespaced(admin.clone(), "default");
    let ironics: Api<Ironic> = Api::namespaced(admin.clone(), "default");
    let fleet = format!("{} Cinders and {} Ironics", args.cinders, args.ironics);
    let per_100 = |peak: f64| (peak - idle) / ((args.cinders + args.ironics).max(1) as f64 / 100.0);
    create_all(&cinders, args.cinders, "c").await?;
    create_all(&ironics, args.ironics, "i").await?;
    let ((took, cinder_peak), (_, ironic_peak)) = tokio::try_join!(
        settle_all(&cinders, args.cinders, "2026.1", pid),
        settle_all(&ironics, args.ironics, "2026.1", pid),
    )?;
    let peak = cinder_peak.max(ironic_peak);
    println!(
        "{fleet} installed in {:.1}s; operator peak RSS {peak:.1} MiB ({:.2} MiB per 100 resources above idle)",
        took.as_secs_f64(),
        per_100(peak)
    );
    print_cache_costs(&admin).await?;
    upgrade_all(&cinders).await?;
    upgrade_all(&ironics).await?;
    let ((took, cinder_peak), (_, ironic_peak)) = tokio::try_join!(
        settle_all(&cinders, args.cinders, "2026.2", pid),
        settle_all(&ironics, args.ironics, "2026.2", pid),
    )?;
    let peak = cinder_peak.max(ironic_peak);
    println!(
        "{fleet} upgraded 2026.1 → 2026.2 in {:.1}s; operator peak RSS {peak:.1} MiB ({:.2} MiB per 100 resources above idle)",
        took.as_secs_f64(),
        per_100(peak)
    );
    let metrics = reqwest::Client::builder()
        .build()?
        .get(format!("http://{metrics_bind}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    println!(
        "operator failed passes: {}",
        crate::setup::failed_passes(&metrics)
    );
    println!(
        "requests the API server refused as overloaded (API Priority and Fairness, anyone's): {}",
        rejected_for_overload(&admin).await?
    );
    drop(operator);

    takeover(&admin, &kubeconfig).await
}

/// The API server's count of requests it refused with 429 to share its
/// capacity fairly (`apiserver_flowcontrol_rejected_requests_total`).
async fn rejected_for_overload(admin: &Client) -> anyhow::Result<u64> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let metrics = admin.request_text(request).await?;
    Ok(metrics
        .lines()
        .filter(|l| l.starts_with("apiserver_flowcontrol_rejected_requests_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum())
}

/// What each of the operator's watch caches holds for the installed fleet.
async fn print_cache_costs(admin: &Client) -> anyhow::Result<()> {
    let costs = crate::heap::caches(admin).await?;
    let total: isize = costs.iter().map(|c| c.bytes).sum();
    for cost in &costs {
        println!(
            "  cache of {}: {} objects, {:.2} MiB ({} bytes each)",
            cost.kind,
            cost.objects,
            cost.bytes as f64 / 1048576.0,
            cost.bytes / cost.objects.max(1) as isize
        );
    }
    println!("  caches in all: {:.2} MiB", total as f64 / 1048576.0);
    Ok(())
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
    let a = spawn_operator(kubeconfig, &lease_args, "replica-a", "127.0.0.1:0")?;
    let b = spawn_operator(kubeconfig, &lease_args, "replica-b", "127.0.0.1:0")?;
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
