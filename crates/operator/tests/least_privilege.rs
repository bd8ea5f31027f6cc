//! The operator under a namespaced Role that grants only what it needs, minus
//! one right:
//! - minus `patch` on the Cinder itself: the upgrade still completes, and the
//!   check report that needs that patch is deferred with a Warning (C15)
//!   instead of being published without its once-per-Job record;
//! - minus StatefulSets: the operator cannot see that kind of child, and says
//!   so on the resource instead of deciding blind or waiting silently;
//! - minus writing Services: every pass fails on the refusal, and the operator
//!   says so on the resource instead of retrying silently for ever.
//!
//! And the self-managed webhook certificate every replica shares, with only
//! the rights `rbac::webhook_certificate_rules` grants.

use std::time::Duration;

use anyhow::{Result, ensure};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use ratchet_operator::OperatorConfig;
use ratchet_operator::testing::impersonating;
use ratchet_operator::webhooks::{TlsSource, tls};
use ratchet_services::Services;
use ratchet_services::testing::{create_example_cinder, settled_at};
use ratchet_testenv::wait::{until, until_any};
use ratchet_testenv::{Behaviour, PodSelector, TestEnv};
use serde_json::json;

/// What a namespaced operator needs (the one list in `rbac.rs`), except
/// patching Cinders themselves.
fn role_without_cinder_patch() -> serde_json::Value {
    let mut rules = ratchet_operator::rbac::reconcile_rules::<Services>();
    if let Some(cinders) = rules.as_array_mut().and_then(|r| r.first_mut()) {
        cinders["verbs"] = json!(["get", "list", "watch"]);
    }
    rules
}

/// What a namespaced operator needs, except anything on StatefulSets.
fn role_without_stateful_sets() -> serde_json::Value {
    let mut rules = ratchet_operator::rbac::reconcile_rules::<Services>();
    for rule in rules.as_array_mut().into_iter().flatten() {
        if let Some(resources) = rule["resources"].as_array_mut() {
            resources.retain(|r| r != "statefulsets");
        }
    }
    rules
}

/// What a namespaced operator needs, except writing Services (it may still
/// read and watch them).
fn role_without_writing_services() -> serde_json::Value {
    let mut rules = ratchet_operator::rbac::reconcile_rules::<Services>();
    if let Some(list) = rules.as_array_mut() {
        for rule in list.iter_mut() {
            if let Some(resources) = rule["resources"].as_array_mut() {
                resources.retain(|r| r != "services");
            }
        }
        list.push(json!({
            "apiGroups": [""], "resources": ["services"], "verbs": ["get", "list", "watch"],
        }));
    }
    rules
}

/// A namespace with the example Secrets and a ServiceAccount bound to a Role
/// of `rules`, and a client acting as that ServiceAccount (impersonated by the
/// admin).
async fn service_account_with_role(
    env: &TestEnv,
    admin: &kube::Client,
    prefix: &str,
    rules: serde_json::Value,
) -> Result<(ratchet_testenv::TestNamespace, kube::Client)> {
    ratchet_operator::install::install_crds::<Services>(admin, Duration::from_secs(60)).await?;
    let ns = env.namespace(admin, prefix).await?;
    let name = ns.name().to_string();
    ratchet_operator::install::ensure_example_secrets::<Services>(admin, &name).await?;
    let sa: ServiceAccount = serde_json::from_value(json!({ "metadata": { "name": "ratchet" } }))?;
    Api::<ServiceAccount>::namespaced(admin.clone(), &name)
        .create(&PostParams::default(), &sa)
        .await?;
    let role: Role =
        serde_json::from_value(json!({ "metadata": { "name": "ratchet" }, "rules": rules }))?;
    Api::<Role>::namespaced(admin.clone(), &name)
        .create(&PostParams::default(), &role)
        .await?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": "ratchet" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "ratchet" },
        "subjects": [{ "kind": "ServiceAccount", "name": "ratchet", "namespace": name }],
    }))?;
    Api::<RoleBinding>::namespaced(admin.clone(), &name)
        .create(&PostParams::default(), &binding)
        .await?;

    let client = impersonating(env.config(), &name, "ratchet")?;
    Ok((ns, client))
}

/// [`service_account_with_role`], with the operator started as that account.
async fn operator_with_role(
    env: &TestEnv,
    admin: &kube::Client,
    prefix: &str,
    rules: serde_json::Value,
    config: OperatorConfig,
) -> Result<(
    ratchet_testenv::TestNamespace,
    ratchet_operator::OperatorHandle,
)> {
    let (ns, client) = service_account_with_role(env, admin, prefix, rules).await?;
    let operator = ratchet_operator::start::<Services>(
        client,
        OperatorConfig {
            namespace: Some(ns.name().to_string()),
            ..config
        },
    )
    .await?;
    Ok((ns, operator))
}

#[tokio::test]
async fn a_check_report_that_cannot_be_recorded_is_deferred_and_the_upgrade_goes_on() -> Result<()>
{
    let env = TestEnv::shared()?;
    let admin = env.client()?;
    let (ns, operator) = operator_with_role(
        env,
        &admin,
        "rbac",
        role_without_cinder_patch(),
        OperatorConfig::default(),
    )
    .await?;
    let name = ns.name().to_string();

    let api = create_example_cinder(&admin, &name, "c", "2026.1", &[]).await?;
    let settled = settled_at;
    until(
        &api,
        "c",
        Duration::from_secs(60),
        "installed with least privilege",
        settled("2026.1"),
    )
    .await?;

    env.scenarios().add(
        PodSelector::workload(&name, "c-db-migrate"),
        Behaviour::succeed_with_message("cinder-status upgrade check exit 0"),
    );
    let patch = json!({ "spec": { "openStackRelease": "2026.2", "image": { "reference": { "tag": "2026.2" } } } });
    api.patch("c", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    until(
        &api,
        "c",
        Duration::from_secs(120),
        "upgraded",
        settled("2026.2"),
    )
    .await?;

    let events = Api::<Event>::namespaced(admin.clone(), &name)
        .list(&ListParams::default())
        .await?;
    let reasons: Vec<String> = events
        .items
        .iter()
        .filter_map(|e| e.reason.clone())
        .collect();
    ensure!(
        reasons
            .iter()
            .any(|r| r == "UpgradeCheckEventEmissionDeferred"),
        "{reasons:?}"
    );
    ensure!(
        !reasons.iter().any(|r| r == "UpgradeCheckCompleted"),
        "reported without its record: {reasons:?}"
    );
    let annotations = api.get("c").await?.metadata.annotations.unwrap_or_default();
    ensure!(!annotations.contains_key("cinder.c5c3.io/last-upgrade-check-job-uid"));
    operator.stop().await;
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn children_the_operator_cannot_watch_are_named_on_the_resource() -> Result<()> {
    let env = TestEnv::shared()?;
    let admin = env.client()?;
    let (ns, operator) = operator_with_role(
        env,
        &admin,
        "rbac-sts",
        role_without_stateful_sets(),
        OperatorConfig {
            cache_sync_timeout: Duration::from_secs(2),
            ..OperatorConfig::default()
        },
    )
    .await?;
    let name = ns.name().to_string();
    let cinders = create_example_cinder(&admin, &name, "c", "2026.1", &[]).await?;

    let events: Api<Event> = Api::namespaced(admin.clone(), &name);
    let warned = |e: &Event| {
        e.reason.as_deref() == Some("CacheNotReady")
            && e.type_.as_deref() == Some("Warning")
            && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("c")
            && e.note
                .as_deref()
                .is_some_and(|n| n.contains("may list and watch statefulsets"))
    };
    until_any(
        &events,
        Duration::from_secs(60),
        "a CacheNotReady warning on c",
        warned,
    )
    .await?;
    // Nothing was decided blind: no Job, no status.
    let cinder = cinders.get("c").await?;
    ensure!(cinder.status.is_none(), "{:?}", cinder.status);
    let jobs = Api::<k8s_openapi::api::batch::v1::Job>::namespaced(admin.clone(), &name)
        .list(&ListParams::default())
        .await?;
    ensure!(jobs.items.is_empty());
    operator.stop().await;
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn a_write_the_api_server_keeps_refusing_is_named_on_the_resource() -> Result<()> {
    let env = TestEnv::shared()?;
    let admin = env.client()?;
    let (ns, operator) = operator_with_role(
        env,
        &admin,
        "rbac-svc",
        role_without_writing_services(),
        OperatorConfig::default(),
    )
    .await?;
    let name = ns.name().to_string();
    create_example_cinder(&admin, &name, "c", "2026.1", &[]).await?;

    let events: Api<Event> = Api::namespaced(admin.clone(), &name);
    let warned = |e: &Event| {
        e.reason.as_deref() == Some("ReconcileFailing")
            && e.type_.as_deref() == Some("Warning")
            && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("c")
            && e.note.as_deref().is_some_and(|n| {
                n.starts_with("3 passes in a row failed") && n.contains("forbidden")
            })
    };
    until_any(
        &events,
        Duration::from_secs(120),
        "a ReconcileFailing warning on c naming the refusal",
        warned,
    )
    .await?;
    operator.stop().await;
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn replicas_share_one_self_managed_certificate() -> Result<()> {
    let env = TestEnv::shared()?;
    let admin = env.client()?;
    let (ns, client) = service_account_with_role(
        env,
        &admin,
        "webhook-cert",
        ratchet_operator::rbac::webhook_certificate_rules(),
    )
    .await?;
    let name = ns.name().to_string();
    let shared = |dns: &str| TlsSource::SelfManagedShared {
        dns_names: vec![dns.to_string()],
        ips: vec![std::net::Ipv4Addr::LOCALHOST.into()],
        namespace: name.clone(),
        name: "ratchet-webhook-tls".into(),
    };
    let source = shared("ratchet.ratchet-system.svc");
    // Two replicas starting together: one stores its identity, both serve it.
    let (first, second) = tokio::join!(tls::load(&client, &source), tls::load(&client, &source));
    let (first, second) = (first?, second?);
    ensure!(first.cert_pem == second.cert_pem && first.ca_pem == second.ca_pem);
    ensure!(first.ca_pem.is_some(), "a caBundle to publish");
    let restarted = tls::load(&client, &source).await?;
    ensure!(restarted.cert_pem == first.cert_pem, "a restart reuses it");
    let secret = Api::<Secret>::namespaced(admin.clone(), &name)
        .get("ratchet-webhook-tls")
        .await?;
    ensure!(secret.type_.as_deref() == Some("kubernetes.io/tls"));

    // Other names (a renamed Service): issued anew, then shared again.
    let renamed = shared("ratchet-v2.ratchet-system.svc");
    let reissued = tls::load(&client, &renamed).await?;
    ensure!(reissued.cert_pem != first.cert_pem && reissued.ca_pem != first.ca_pem);
    ensure!(tls::load(&client, &renamed).await?.cert_pem == reissued.cert_pem);
    ns.cleanup().await;
    Ok(())
}
