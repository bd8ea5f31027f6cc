//! Two operator replicas against one cluster: only the Lease holder reconciles;
//! when it dies without releasing, the other takes over within the Lease
//! duration and finishes the upgrade in flight.

use std::time::Duration;

use anyhow::{Result, ensure};
use kube::api::{Patch, PatchParams};
use ratchet_operator::LeaderElection;
use ratchet_operator::{OperatorConfig, OperatorHandle};
use ratchet_services::Services;
use ratchet_services::cinder::v1beta1::{Cinder, CinderUpgradePhase};
use ratchet_services::testing::{create_example_cinder, settled_at};
use ratchet_testenv::wait::until;
use ratchet_testenv::{Behaviour, PodSelector, TestEnv};

fn reconciles(op: &OperatorHandle) -> u64 {
    op.metrics()
        .encode()
        .lines()
        .find(|l| l.starts_with("ratchet_reconciles_total{service=\"cinder\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn only_the_leader_reconciles_and_a_standby_takes_over() -> Result<()> {
    let env = TestEnv::shared()?;
    let client = env.client()?;
    ratchet_operator::install::install_crds::<Services>(&client, Duration::from_secs(60)).await?;
    let ns = env.namespace(&client, "leader").await?;
    let name = ns.name().to_string();
    ratchet_operator::install::ensure_example_secrets::<Services>(&client, &name).await?;
    let config = |identity: &str| OperatorConfig {
        namespace: Some(name.clone()),
        instance: identity.to_string(),
        leader_election: Some(LeaderElection {
            lease_name: "ratchet-leader".into(),
            namespace: name.clone(),
            identity: identity.to_string(),
            duration_seconds: 3,
            grace_seconds: 1,
        }),
        ..OperatorConfig::default()
    };
    let a = ratchet_operator::start::<Services>(client.clone(), config("replica-a")).await?;
    let b = ratchet_operator::start::<Services>(client.clone(), config("replica-b")).await?;

    let api = create_example_cinder(&client, &name, "c", "2026.1", &[]).await?;
    let settled = settled_at;
    until(
        &api,
        "c",
        Duration::from_secs(60),
        "installed",
        settled("2026.1"),
    )
    .await?;
    let (ra, rb) = (reconciles(&a), reconciles(&b));
    ensure!(
        (ra > 0) != (rb > 0),
        "exactly one replica reconciles: a={ra} b={rb}"
    );
    let (leader, standby) = if ra > 0 { (a, b) } else { (b, a) };

    // An upgrade in flight when the leader dies.
    env.scenarios().add(
        PodSelector::workload(&name, "c-db-expand"),
        Behaviour::default().with_run_time(Duration::from_secs(2)),
    );
    let patch = serde_json::json!({ "spec": { "openStackRelease": "2026.2", "image": { "reference": { "tag": "2026.2" } } } });
    api.patch("c", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    until(
        &api,
        "c",
        Duration::from_secs(60),
        "Expanding",
        |c: &Cinder| {
            c.status
                .as_ref()
                .is_some_and(|s| s.upgrade_phase == CinderUpgradePhase::Expanding)
        },
    )
    .await?;
    let before = reconciles(&standby);
    drop(leader); // a crash: no release, the Lease must expire
    until(
        &api,
        "c",
        Duration::from_secs(90),
        "upgraded by the standby",
        settled("2026.2"),
    )
    .await?;
    ensure!(reconciles(&standby) > before, "the standby never took over");
    standby.stop().await;
    ns.cleanup().await;
    Ok(())
}
