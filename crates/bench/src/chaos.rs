//! Crash and outage chaos for long soaks: rounds of a Cinder upgrade while the
//! `ratchet` binary is SIGKILLed at seeded random moments, counting what a
//! user would see go wrong (upgrades not completing, phases out of order, phase
//! Jobs created twice, events lost or doubled); then kube-apiserver restarts in
//! every phase, timing how long the upgrade takes to move on once the API
//! server serves again. Needs the `ratchet` binary next to this one.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::testing::Moments;
use ratchet_operator::testing::witness::{
    Witness, event_counts, expected_upgrade, phase_of, settled, violations,
};
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_testenv::wait::until;
use ratchet_testenv::{
    Behaviour, KubeletOptions, LocalCluster, PodSelector, Scenarios, SimKubelet,
};
use serde_json::json;

use crate::operator::ratchet_binary;
use crate::stats::summary;
use ratchet_services::Services;

#[derive(Args)]
pub struct ChaosArgs {
    /// Upgrades, each with `--kills` SIGKILLs of the operator.
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    /// SIGKILLs per upgrade, at random moments.
    #[arg(long, default_value_t = 12)]
    kills: usize,
    /// Seed of the kill moments.
    #[arg(long, default_value_t = 2026)]
    seed: u64,
    /// Upgrades with a kube-apiserver restart in each of their phases.
    #[arg(long, default_value_t = 3)]
    outage_rounds: usize,
    /// How long each API-server outage lasts, in seconds.
    #[arg(long, default_value_t = 3)]
    outage_seconds: u64,
}

const NS: &str = "chaos";
const TIMEOUT: Duration = Duration::from_secs(300);

struct Operator(Option<Child>);

impl Operator {
    fn start(kubeconfig: &std::path::Path) -> anyhow::Result<Operator> {
        let child = Command::new(ratchet_binary()?)
            .args([
                "operator",
                "--namespace",
                NS,
                "--metrics-bind",
                "127.0.0.1:0",
            ])
            .env("KUBECONFIG", kubeconfig)
            .env("POD_NAME", "chaos")
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        Ok(Operator(Some(child)))
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.kill();
    }
}

#[derive(Default)]
struct Tally {
    completed: usize,
    not_completed: usize,
    violations: Vec<String>,
}

pub async fn run(args: ChaosArgs) -> anyhow::Result<()> {
    let mut cluster = LocalCluster::start().await?;
    let client = cluster.client()?;
    let scenarios = Scenarios::default();
    scenarios.add(
        PodSelector::default(),
        Behaviour::default()
            .with_ready_delay(Duration::from_millis(500))
            .with_run_time(Duration::from_secs(1)),
    );
    let _kubelet = SimKubelet::start_with_scenarios(
        client.clone(),
        KubeletOptions::default(),
        scenarios.clone(),
    )
    .await?;
    ratchet_operator::install::install_crds::<Services>(&client, TIMEOUT).await?;
    let ns: Namespace = serde_json::from_value(json!({ "metadata": { "name": NS } }))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    ratchet_operator::install::ensure_example_secrets::<Services>(&client, NS).await?;
    let mut operator = Operator::start(cluster.kubeconfig_path())?;
    let witness = Witness::start::<Cinder>(&client, NS);
    let expected = expected_upgrade(&Cinder::profile(), &[]);
    let phases = expected.0.clone();
    let mut moments = Moments::seeded(args.seed);

    let mut tally = Tally::default();
    let started = Instant::now();
    for round in 0..args.rounds {
        let name = format!("kill-{round}");
        install(&client, &name, &scenarios).await?;
        bump(&client, &name).await?;
        for _ in 0..args.kills {
            tokio::time::sleep(
                moments.between(Duration::from_millis(100), Duration::from_millis(1500)),
            )
            .await;
            operator.kill();
            operator = Operator::start(cluster.kubeconfig_path())?;
        }
        if wait_settled(&client, &name, "2026.2").await.is_ok() {
            tally.completed += 1;
        } else {
            tally.not_completed += 1;
        }
        let counts = event_counts(&client, NS, &name).await?;
        tally
            .violations
            .extend(violations(&witness.seen(), &name, &expected, &counts));
    }
    println!(
        "SIGKILL chaos: {} upgrades × {} kills (seed {}) in {:.0}s: {} completed, {} not completed, {} violations",
        args.rounds,
        args.kills,
        args.seed,
        started.elapsed().as_secs_f64(),
        tally.completed,
        tally.not_completed,
        tally.violations.len()
    );
    for v in &tally.violations {
        println!("  violation: {v}");
    }

    let outage = Duration::from_secs(args.outage_seconds);
    let mut recoveries: Vec<Duration> = Vec::new();
    for round in 0..args.outage_rounds {
        let name = format!("outage-{round}");
        install(&client, &name, &scenarios).await?;
        bump(&client, &name).await?;
        let api: Api<Cinder> = Api::namespaced(client.clone(), NS);
        for phase in &phases {
            until(
                &api,
                &name,
                TIMEOUT,
                &format!("phase {phase}"),
                |c: &Cinder| phase_of(c) == *phase,
            )
            .await?;
            cluster.stop_apiserver();
            tokio::time::sleep(outage).await;
            cluster.start_apiserver(TIMEOUT).await?;
            let back = Instant::now();
            until(
                &api,
                &name,
                TIMEOUT,
                &format!("leaving {phase}"),
                |c: &Cinder| phase_of(c) != *phase,
            )
            .await?;
            let took = back.elapsed();
            println!(
                "  {name}: {phase}: moved on {:.2}s after the API server was back",
                took.as_secs_f64()
            );
            recoveries.push(took);
        }
        wait_settled(&client, &name, "2026.2").await?;
        let counts = event_counts(&client, NS, &name).await?;
        for v in violations(&witness.seen(), &name, &expected, &counts) {
            println!("  violation: {v}");
        }
    }
    if !recoveries.is_empty() {
        println!(
            "API-server outages of {}s, one per phase: the upgrade moved on after the API server was back in {}",
            args.outage_seconds,
            summary(&recoveries)
        );
    }
    operator.kill();
    Ok(())
}

/// Installs a Cinder at 2026.1 whose phase Jobs report a clean check.
async fn install(client: &Client, name: &str, scenarios: &Scenarios) -> anyhow::Result<()> {
    scenarios.add(
        PodSelector::workload(NS, &format!("{name}-db-migrate")),
        Behaviour::succeed_with_message("cinder-status upgrade check exit 0")
            .with_run_time(Duration::from_secs(1)),
    );
    ratchet_services::testing::create_example_cinder(client, NS, name, "2026.1", &["a", "b"])
        .await?;
    wait_settled(client, name, "2026.1")
        .await
        .context("install")
}

async fn bump(client: &Client, name: &str) -> anyhow::Result<()> {
    Api::<Cinder>::namespaced(client.clone(), NS)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "openStackRelease": "2026.2", "image": { "reference": { "tag": "2026.2" } } } })),
        )
        .await?;
    Ok(())
}

async fn wait_settled(client: &Client, name: &str, release: &str) -> anyhow::Result<()> {
    until(
        &Api::<Cinder>::namespaced(client.clone(), NS),
        name,
        TIMEOUT,
        &format!("{name} settled at {release}"),
        settled::<Cinder>(release),
    )
    .await?;
    Ok(())
}
