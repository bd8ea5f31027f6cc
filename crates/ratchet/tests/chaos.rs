//! Crash chaos: the `ratchet operator` binary SIGKILLed at seeded random
//! moments through whole Cinder and Ironic upgrades, alone and as the leader of
//! two replicas. Every upgrade must complete with its phases in order, no
//! phase Job created twice and each event exactly once. `RATCHET_CHAOS_SEED`
//! and `RATCHET_CHAOS_KILLS` change the seed and the number of kills;
//! `ratchet-bench chaos` runs the same for long soaks.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::testing::Moments;
use ratchet_operator::testing::witness::{
    Witness, event_counts, expected_upgrade, settled, violations,
};
use ratchet_services::Services;
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_services::ironic::v1alpha1::Ironic;
use ratchet_testenv::wait::until;
use ratchet_testenv::{Behaviour, PodSelector, TestEnv, TestNamespace};
use serde_json::json;

const UPGRADE_TIMEOUT: Duration = Duration::from_secs(240);

/// The kill moments, seeded from `RATCHET_CHAOS_SEED` (printed, to repeat a run).
fn moments() -> Moments {
    let seed = std::env::var("RATCHET_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_2026);
    eprintln!("chaos seed {seed}");
    Moments::seeded(seed)
}

fn kills() -> usize {
    std::env::var("RATCHET_CHAOS_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6)
}

/// One `ratchet operator` process, its output in a log file.
struct Replica {
    identity: String,
    args: Vec<String>,
    kubeconfig: std::path::PathBuf,
    log: std::path::PathBuf,
    child: Option<Child>,
}

impl Replica {
    fn new(env: &TestEnv, ns: &str, identity: &str, extra: &[String]) -> Replica {
        let mut args: Vec<String> = [
            "operator",
            "--namespace",
            ns,
            "--metrics-bind",
            "127.0.0.1:0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().cloned());
        Replica {
            identity: identity.into(),
            args,
            kubeconfig: env.kubeconfig_path().to_path_buf(),
            log: std::env::temp_dir().join(format!("ratchet-chaos-{ns}-{identity}.log")),
            child: None,
        }
    }

    fn start(&mut self) -> Result<()> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
            .args(&self.args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("POD_NAME", &self.identity)
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out))
            .spawn()?;
        self.child = Some(child);
        Ok(())
    }

    fn kill(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill()?; // SIGKILL: no graceful stop, no Lease release
            child.wait()?;
        }
        Ok(())
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

async fn prepared(prefix: &str) -> Result<(&'static TestEnv, Client, TestNamespace)> {
    let env = TestEnv::shared()?;
    let client = env.client()?;
    ratchet_operator::install::install_crds::<Services>(&client, Duration::from_secs(60)).await?;
    let ns = env.namespace(&client, prefix).await?;
    ratchet_operator::install::ensure_example_secrets::<Services>(&client, ns.name()).await?;
    // Phase Jobs and rollouts take about a second, so kills land in every phase.
    let scenarios = env.scenarios();
    scenarios.add(
        PodSelector {
            namespace: Some(ns.name().into()),
            ..Default::default()
        },
        Behaviour::default()
            .with_ready_delay(Duration::from_millis(500))
            .with_run_time(Duration::from_millis(800)),
    );
    for (job, message) in [
        ("c-db-migrate", "cinder-status upgrade check exit 0"),
        ("i-upgrade-check", "ironic-status upgrade check exit 0"),
    ] {
        scenarios.add(
            PodSelector::workload(ns.name(), job),
            Behaviour::succeed_with_message(message).with_run_time(Duration::from_millis(800)),
        );
    }
    Ok((env, client, ns))
}

async fn install(client: &Client, ns: &str) -> Result<()> {
    let cinder: Cinder = serde_json::from_value(ratchet_services::cinder::example_manifest(
        "c",
        "2026.1",
        "registry.invalid/openstack/cinder",
        "2026.1",
        &["a", "b"],
    ))?;
    Api::<Cinder>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cinder)
        .await?;
    let ironic: Ironic = serde_json::from_value(ratchet_services::ironic::example_manifest(
        "i",
        "2026.1",
        "registry.invalid/openstack/ironic",
        "2026.1",
        2,
    ))?;
    Api::<Ironic>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &ironic)
        .await?;
    wait_settled::<Cinder>(client, ns, "c", "2026.1").await?;
    wait_settled::<Ironic>(client, ns, "i", "2026.1").await
}

async fn wait_settled<S: OpenStackService>(
    client: &Client,
    ns: &str,
    name: &str,
    release: &str,
) -> Result<()> {
    until(
        &Api::<S>::namespaced(client.clone(), ns),
        name,
        UPGRADE_TIMEOUT,
        &format!("{name} settled at {release}"),
        settled::<S>(release),
    )
    .await?;
    Ok(())
}

async fn bump(client: &Client, ns: &str) -> Result<()> {
    let params = PatchParams::default();
    Api::<Cinder>::namespaced(client.clone(), ns)
        .patch(
            "c",
            &params,
            &Patch::Merge(json!({ "spec": { "openStackRelease": "2026.2", "image": { "reference": { "tag": "2026.2" } } } })),
        )
        .await?;
    Api::<Ironic>::namespaced(client.clone(), ns)
        .patch(
            "i",
            &params,
            &Patch::Merge(
                json!({ "spec": { "openStackRelease": "2026.2", "image": { "tag": "2026.2" } } }),
            ),
        )
        .await?;
    Ok(())
}

/// Waits for both upgrades, then checks what the witnesses saw.
async fn verify(client: &Client, ns: &str, cinders: &Witness, ironics: &Witness) -> Result<()> {
    wait_settled::<Cinder>(client, ns, "c", "2026.2").await?;
    wait_settled::<Ironic>(client, ns, "i", "2026.2").await?;
    let mut broken = Vec::new();
    for (name, witness, expected) in [
        ("c", cinders, expected_upgrade(&Cinder::profile(), &[])),
        ("i", ironics, expected_upgrade(&Ironic::profile(), &[])),
    ] {
        let counts = event_counts(client, ns, name).await?;
        broken.extend(violations(&witness.seen(), name, &expected, &counts));
    }
    ensure!(broken.is_empty(), "{broken:#?}");
    Ok(())
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[tokio::test]
async fn upgrades_complete_exactly_once_while_the_operator_is_killed() -> Result<()> {
    let (env, client, ns) = prepared("chaos").await?;
    let name = ns.name().to_string();
    let mut operator = Replica::new(env, &name, "solo", &[]);
    operator.start()?;
    install(&client, &name).await?;
    let cinders = Witness::start::<Cinder>(&client, &name);
    let ironics = Witness::start::<Ironic>(&client, &name);
    bump(&client, &name).await?;
    let mut moments = moments();
    for _ in 0..kills() {
        // The chaos itself: a kill at a random moment, not a wait for state.
        tokio::time::sleep(moments.between(Duration::from_millis(200), Duration::from_secs(2)))
            .await;
        operator.kill()?;
        operator.start()?;
    }
    verify(&client, &name, &cinders, &ironics)
        .await
        .with_context(|| format!("operator log:\n{}", log_tail(&operator.log)))?;
    drop(operator);
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn upgrades_complete_exactly_once_while_the_leader_is_killed() -> Result<()> {
    let (env, client, ns) = prepared("chaos-ha").await?;
    let name = ns.name().to_string();
    let lease = format!("chaos-{name}");
    let election: Vec<String> = [
        "--leader-election",
        "--lease-name",
        &lease,
        "--lease-namespace",
        &name,
        "--lease-duration-seconds",
        "3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut replicas = [
        Replica::new(env, &name, "replica-a", &election),
        Replica::new(env, &name, "replica-b", &election),
    ];
    for replica in &mut replicas {
        replica.start()?;
    }
    install(&client, &name).await?;
    let cinders = Witness::start::<Cinder>(&client, &name);
    let ironics = Witness::start::<Ironic>(&client, &name);
    bump(&client, &name).await?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &name);
    let mut moments = moments();
    for _ in 0..kills().div_ceil(2) {
        tokio::time::sleep(moments.between(Duration::from_millis(500), Duration::from_secs(3)))
            .await;
        let holder = leases
            .get_opt(&lease)
            .await?
            .and_then(|l| l.spec?.holder_identity);
        if let Some(leader) = replicas
            .iter_mut()
            .find(|r| Some(&r.identity) == holder.as_ref())
        {
            leader.kill()?;
            leader.start()?;
        }
    }
    verify(&client, &name, &cinders, &ironics)
        .await
        .with_context(|| {
            replicas
                .iter()
                .map(|r| format!("{} log:\n{}", r.identity, log_tail(&r.log)))
                .collect::<Vec<_>>()
                .join("\n")
        })?;
    drop(replicas);
    ns.cleanup().await;
    Ok(())
}
