//! Control-plane faults during upgrades: kube-apiserver killed and started
//! again in every phase (Cinder and Ironic), etcd restarted, the
//! kube-controller-manager stopped for a while. Each upgrade must resume on its
//! own and complete with a legal phase sequence, no phase Job created twice and
//! each seed-000 event once. Every test starts a private cluster: it restarts
//! components, which would disturb tests sharing one.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use ratchet_operator::OperatorConfig;
use ratchet_operator::service::OpenStackService;
use ratchet_operator::testing::witness::{
    Witness, describe_workloads, event_counts, expected_upgrade, phase_of, settled, violations,
};
use ratchet_phase_machine::Profile;
use ratchet_services::Services;
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_services::ironic::v1alpha1::Ironic;
use ratchet_testenv::wait::until;
use ratchet_testenv::{
    Behaviour, KubeletOptions, LocalCluster, PodSelector, Scenarios, SimKubelet,
};
use serde_json::json;

const NS: &str = "faults";
/// How long each outage lasts.
const OUTAGE: Duration = Duration::from_secs(3);
/// Once a phase's work is done after an outage (its Job complete), the
/// operator must move the upgrade on within this long: it retries and re-watches
/// within a second; the rest is slack for a loaded machine. Before the fix, one
/// 3-second outage stalled an upgrade for over two minutes.
const REACTION: Duration = Duration::from_secs(5);
/// How long the cluster may take to finish a phase's work after an outage.
const RECOVERY: Duration = Duration::from_secs(150);
const START: Duration = Duration::from_secs(60);

struct Cluster {
    cluster: LocalCluster,
    client: Client,
    _kubelet: SimKubelet,
    operator: Option<ratchet_operator::OperatorHandle>,
}

/// A private cluster with a simulated kubelet whose phase Jobs run for a few
/// seconds (so an outage lands inside a phase), the CRDs, the example Secrets
/// and an operator scoped to the test namespace.
async fn cluster(phase_jobs: &[&str], check_message: &str) -> Result<Cluster> {
    // RUST_LOG=ratchet_operator=debug shows the operator's passes when a test fails.
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
    let cluster = LocalCluster::start().await?;
    let client = cluster.client()?;
    let scenarios = Scenarios::default();
    // The newest matching rule wins: the phase Jobs' rules narrow this one.
    scenarios.add(
        PodSelector::default(),
        Behaviour::default().with_ready_delay(Duration::from_secs(1)),
    );
    for job in phase_jobs {
        scenarios.add(
            PodSelector {
                workload: Some((*job).into()),
                ..Default::default()
            },
            Behaviour::succeed_with_message(check_message).with_run_time(Duration::from_secs(4)),
        );
    }
    let kubelet =
        SimKubelet::start_with_scenarios(client.clone(), KubeletOptions::default(), scenarios)
            .await?;
    ratchet_operator::install::install_crds::<Services>(&client, START).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({ "metadata": { "name": NS } }))?;
    namespaces.create(&PostParams::default(), &ns).await?;
    ratchet_operator::install::ensure_example_secrets::<Services>(&client, NS).await?;
    let operator = ratchet_operator::start::<Services>(
        client.clone(),
        OperatorConfig {
            namespace: Some(NS.into()),
            instance: "faults".into(),
            ..OperatorConfig::default()
        },
    )
    .await?;
    Ok(Cluster {
        cluster,
        client,
        _kubelet: kubelet,
        operator: Some(operator),
    })
}

/// Which component an outage takes away.
#[derive(Clone, Copy, Debug)]
enum Outage {
    ApiServer,
    Etcd,
    ControllerManager,
}

async fn outage(cluster: &mut LocalCluster, what: Outage) -> Result<()> {
    match what {
        Outage::ApiServer => {
            cluster.stop_apiserver();
            tokio::time::sleep(OUTAGE).await; // the outage itself, not a wait for state
            cluster.start_apiserver(START).await?;
        }
        Outage::Etcd => {
            cluster.stop_etcd();
            tokio::time::sleep(OUTAGE).await;
            cluster.start_etcd(START).await?;
        }
        Outage::ControllerManager => {
            cluster.stop_controller_manager();
            // Long enough for a rollout or Job to be due meanwhile.
            tokio::time::sleep(OUTAGE * 3).await;
            cluster.start_controller_manager(START).await?;
        }
    }
    Ok(())
}

/// The suffix of the Job a phase runs, if it runs one.
fn job_of(profile: &Profile, phase: &str) -> Option<&'static str> {
    // Cinder's and Ironic's phases run one Job each.
    let (_, phase) = profile.phase(phase)?;
    phase.templates().last().map(|t| t.suffix)
}

fn job_complete(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                matches!(c.type_.as_str(), "Complete" | "SuccessCriteriaMet") && c.status == "True"
            })
        })
}

/// Workloads, pods and the components' log tails, for a failure message.
async fn describe(c: &Cluster) -> String {
    let mut state = describe_workloads(&c.client, NS).await;
    for (component, log) in c.cluster.logs() {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(15)..].join("\n");
        state.push_str(&format!("\n--- {component} log:\n{tail}"));
    }
    state
}

/// Upgrades the resource `name` with `bump`, causing an outage of `what` as
/// each phase of `outage_phases` begins, and checks the outcome.
async fn upgrade_through_outages<K: OpenStackService>(
    c: &mut Cluster,
    name: &str,
    bump: serde_json::Value,
    to: &str,
    outage_phases: &[&str],
    what: Outage,
) -> Result<()> {
    let profile = K::profile();
    // Neither Cinder nor Ironic has Job groups.
    let expected = expected_upgrade(&profile, &[]);
    let api: Api<K> = Api::namespaced(c.client.clone(), NS);
    let jobs: Api<Job> = Api::namespaced(c.client.clone(), NS);
    let witness = Witness::start::<K>(&c.client, NS);
    api.patch(name, &PatchParams::default(), &Patch::Merge(&bump))
        .await?;
    for phase in outage_phases {
        until(&api, name, START, &format!("phase {phase}"), |o: &K| {
            phase_of(o) == *phase
        })
        .await?;
        outage(&mut c.cluster, what).await?;
        let back = Instant::now();
        // A Job phase's work done is visible in the cluster: from then on the
        // wait is the operator's alone, and short. A roll waits on the
        // controller-manager too, whose own retry queues back off after an
        // outage (tens of seconds, seen in its log): only the patient bound.
        let job = job_of(&profile, phase).map(|suffix| format!("{name}-{suffix}"));
        let patience = match &job {
            Some(job) => {
                let complete = until(
                    &jobs,
                    job,
                    RECOVERY,
                    &format!("{job} complete"),
                    job_complete,
                )
                .await;
                if let Err(e) = complete {
                    let state = describe(c).await;
                    return Err(e).with_context(|| {
                        format!("{phase}: its Job never completed after the outage\n{state}")
                    });
                }
                REACTION
            }
            None => RECOVERY,
        };
        let done = Instant::now();
        let moved_on = until(
            &api,
            name,
            patience,
            &format!("leaving {phase} after {what:?} came back"),
            |o: &K| phase_of(o) != *phase,
        )
        .await;
        if let Err(e) = moved_on {
            let state = describe(c).await;
            return Err(e).with_context(|| {
                format!(
                    "{phase}: no progress {:?} after the outage ({:?} after its work was done)\n{state}",
                    back.elapsed(),
                    done.elapsed()
                )
            });
        }
    }
    until(
        &api,
        name,
        Duration::from_secs(120),
        &format!("settled at {to}"),
        settled::<K>(to),
    )
    .await?;
    let counts = event_counts(&c.client, NS, name).await?;
    // Each outage phase was reached (waited for above); the witness may miss a
    // short phase across a restart (its watch re-lists), which the order check allows.
    let broken = violations(&witness.seen(), name, &expected, &counts);
    ensure!(broken.is_empty(), "{broken:#?}");
    Ok(())
}

const CINDER_PHASES: &[&str] = &["Expanding", "Migrating", "RollingUpdate", "Contracting"];

async fn installed_cinder() -> Result<Cluster> {
    let c = cluster(
        &["c-db-expand", "c-db-migrate", "c-db-contract"],
        "cinder-status upgrade check exit 0",
    )
    .await?;
    ratchet_services::testing::create_example_cinder(&c.client, NS, "c", "2026.1", &["lvm"])
        .await?;
    until(
        &Api::<Cinder>::namespaced(c.client.clone(), NS),
        "c",
        START,
        "installed",
        settled::<Cinder>("2026.1"),
    )
    .await?;
    Ok(c)
}

fn cinder_bump() -> serde_json::Value {
    json!({ "spec": { "openStackRelease": "2026.2", "image": { "reference": { "tag": "2026.2" } } } })
}

/// A Cinder installed at 2026.1, upgraded to 2026.2 through outages of
/// `what` as each of `phases` begins.
async fn cinder_through_outages(phases: &[&str], what: Outage) -> Result<()> {
    let mut c = installed_cinder().await?;
    upgrade_through_outages::<Cinder>(&mut c, "c", cinder_bump(), "2026.2", phases, what).await
}

#[tokio::test]
async fn cinder_upgrade_survives_an_api_server_restart_in_every_phase() -> Result<()> {
    cinder_through_outages(CINDER_PHASES, Outage::ApiServer).await
}

#[tokio::test]
async fn cinder_upgrade_survives_an_etcd_restart() -> Result<()> {
    cinder_through_outages(&["Expanding", "RollingUpdate"], Outage::Etcd).await
}

#[tokio::test]
async fn cinder_upgrade_survives_the_controller_manager_stopping() -> Result<()> {
    cinder_through_outages(&["Migrating", "RollingUpdate"], Outage::ControllerManager).await
}

#[tokio::test]
async fn ironic_upgrade_survives_an_api_server_restart_in_every_phase() -> Result<()> {
    const PHASES: &[&str] = &[
        "DatabaseUpgrade",
        "UpgradeCheck",
        "PinnedRoll",
        "Unpinning",
        "OnlineMigrations",
    ];
    let mut c = cluster(
        &["i-db-upgrade", "i-upgrade-check", "i-online-migrations"],
        "ironic-status upgrade check exit 0",
    )
    .await?;
    let manifest = ratchet_services::ironic::example_manifest(
        "i",
        "2026.1",
        "registry.invalid/openstack/ironic",
        "2026.1",
        2,
    );
    let ironic: Ironic = serde_json::from_value(manifest)?;
    let api: Api<Ironic> = Api::namespaced(c.client.clone(), NS);
    api.create(&PostParams::default(), &ironic).await?;
    until(&api, "i", START, "installed", settled::<Ironic>("2026.1")).await?;
    upgrade_through_outages::<Ironic>(
        &mut c,
        "i",
        json!({ "spec": { "openStackRelease": "2026.2", "image": { "tag": "2026.2" } } }),
        "2026.2",
        PHASES,
        Outage::ApiServer,
    )
    .await
}

/// The operator serves the Cinder CRD's conversion itself (registered by URL),
/// and both it and the API server restart. Conversion must be served before
/// the operator needs its own watch, and the restarted operator must pick up
/// and finish an upgrade, reading and writing at both API versions.
#[tokio::test]
async fn the_operator_that_serves_conversion_recovers_after_both_restart() -> Result<()> {
    use ratchet_operator::webhooks::{Endpoint, Registration, TlsSource, WebhookConfig};
    let mut c = installed_cinder().await?;
    let port = ratchet_testenv::cluster::free_port()?;
    let config = OperatorConfig {
        namespace: Some(NS.into()),
        instance: "faults-conversion".into(),
        webhook: Some(WebhookConfig {
            bind: format!("127.0.0.1:{port}").parse()?,
            tls: TlsSource::SelfManaged {
                dns_names: vec!["localhost".into()],
                ips: vec![std::net::Ipv4Addr::LOCALHOST.into()],
            },
            registration: Some(Registration {
                name: "ratchet-faults".into(),
                endpoint: Endpoint::Url(format!("https://127.0.0.1:{port}")),
                namespace_selector: None,
                conversion: true,
                admission: false,
            }),
        }),
        ..OperatorConfig::default()
    };
    // The test's first operator gives way to one that serves conversion.
    if let Some(first) = c.operator.take() {
        first.stop().await;
    }
    let serving = ratchet_operator::start::<Services>(c.client.clone(), config.clone()).await?;
    let v1alpha1: Api<ratchet_services::cinder::v1alpha1::Cinder> =
        Api::namespaced(c.client.clone(), NS);
    until(
        &v1alpha1,
        "c",
        START,
        "read at v1alpha1 through conversion",
        |_| true,
    )
    .await?;

    // Both go away; the API server comes back first, with no conversion
    // webhook answering, then the operator.
    serving.stop().await;
    outage(&mut c.cluster, Outage::ApiServer).await?;
    c.operator = Some(ratchet_operator::start::<Services>(c.client.clone(), config).await?);

    until(&v1alpha1, "c", RECOVERY, "v1alpha1 served again", |_| true).await?;
    let api: Api<Cinder> = Api::namespaced(c.client.clone(), NS);
    api.patch("c", &PatchParams::default(), &Patch::Merge(&cinder_bump()))
        .await?;
    until(
        &api,
        "c",
        Duration::from_secs(120),
        "upgraded after both restarted",
        settled::<Cinder>("2026.2"),
    )
    .await?;
    let read = v1alpha1.get("c").await?;
    ensure!(read.status.is_some_and(|s| s.installed_release == "2026.2"));
    Ok(())
}
