//! Ratchet's own API across versions, on a real API server and etcd (seed 004):
//! objects created while v1alpha1 is the storage version, storage flipped to
//! v1beta1 with the operator's conversion webhook, the stored-version migration
//! (refused once by a validating webhook, interrupted by a CRD change, then
//! paging through an expired continue token), every object read back from etcd as v1beta1, storedVersions
//! pruned, and a CRD without v1alpha1 applied and used. Two thousand objects,
//! migrated in pages of a hundred.
//!
//! One test on its own control plane: the stages share the cluster-wide Cinder
//! CRD and must not overlap.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use futures::{StreamExt as _, TryStreamExt as _, stream};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client, CustomResourceExt};
use ratchet_operator::storage::{self, MigrationError, MigrationOptions};
use ratchet_operator::webhooks::registration;
use ratchet_operator::webhooks::{Endpoint, Registration, TlsSource, WebhookConfig};
use ratchet_services::Services;
use ratchet_services::cinder::{self, v1alpha1, v1beta1};
use ratchet_testenv::etcd::EtcdClient;
use ratchet_testenv::wait::{until, until_every};
use ratchet_testenv::{ClusterOptions, LocalCluster};
use serde_json::json;

const CRD: &str = "cinders.cinder.openstack.c5c3.io";
const OBJECTS: usize = 2000;
/// Requests in flight while the test itself creates or applies every object.
const IN_FLIGHT: usize = 16;
const TIMEOUT: Duration = Duration::from_secs(60);

fn resource(version: &str) -> ApiResource {
    let gvk = GroupVersionKind::gvk("cinder.openstack.c5c3.io", version, "Cinder");
    ApiResource::from_gvk_with_plural(&gvk, "cinders")
}

async fn apply_crd(client: &Client, crd: &CustomResourceDefinition) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.patch(
        CRD,
        &PatchParams::apply("storage-test").force(),
        &Patch::Apply(crd),
    )
    .await?;
    tokio::time::timeout(
        TIMEOUT,
        await_condition(api, CRD, conditions::is_crd_established()),
    )
    .await??;
    Ok(())
}

async fn stored_versions(client: &Client) -> Result<Vec<String>> {
    let crd = Api::<CustomResourceDefinition>::all(client.clone())
        .get(CRD)
        .await?;
    Ok(crd
        .status
        .and_then(|s| s.stored_versions)
        .unwrap_or_default())
}

/// The stored-version migration's condition on the Cinder CRD.
async fn migration_condition(client: &Client) -> Result<(String, String, String)> {
    let crd = Api::<CustomResourceDefinition>::all(client.clone())
        .get(CRD)
        .await?;
    let condition = crd
        .status
        .and_then(|s| s.conditions)
        .into_iter()
        .flatten()
        .find(|c| c.type_ == storage::condition::STORAGE_MIGRATED)
        .context("no migration condition on the CRD")?;
    Ok((
        condition.status,
        condition.reason.unwrap_or_default(),
        condition.message.unwrap_or_default(),
    ))
}

/// The apiVersion each object of the namespace is stored with, read from etcd.
async fn stored_as(etcd: &EtcdClient, ns: &str) -> Result<BTreeMap<String, String>> {
    let prefix = format!("/registry/cinder.openstack.c5c3.io/cinders/{ns}/");
    Ok(etcd
        .list_prefix(&prefix)
        .await?
        .into_iter()
        .map(|o| {
            let name = o.key.trim_start_matches(&prefix).to_string();
            (name, o.json_api_version().unwrap_or_default())
        })
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_are_rewritten_in_the_storage_version_and_stored_versions_pruned() -> Result<()> {
    // Its own control plane: without the watch cache, lists are served by etcd
    // and a compaction expires their continue tokens, as it does on any cluster
    // once the API server's cached snapshots are gone.
    let cluster = LocalCluster::start_with(ClusterOptions {
        apiserver_args: vec!["--watch-cache=false".into()],
        ..ClusterOptions::default()
    })
    .await?;
    let client = cluster.client()?;
    ratchet_services::testing::install_crds_before_v1beta1(&client, TIMEOUT).await?;
    let ns_name = "storage".to_string();
    let namespace: Namespace = serde_json::from_value(json!({ "metadata": { "name": ns_name } }))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;
    ratchet_operator::install::ensure_example_secrets::<Services>(&client, &ns_name).await?;
    let etcd = cluster.etcd().clone();

    // 1. v1alpha1 is the storage version: create objects through it.
    let alpha: Api<v1alpha1::Cinder> = Api::namespaced(client.clone(), &ns_name);
    stream::iter(0..OBJECTS)
        .map(|i| {
            let alpha = alpha.clone();
            async move {
                let object = cinder::example_v1alpha1(&format!("c{i:04}"))?;
                alpha.create(&PostParams::default(), &object).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<()>()
        .await?;
    let before = stored_as(&etcd, &ns_name).await?;
    ensure!(before.len() == OBJECTS);
    ensure!(
        before
            .values()
            .all(|v| v == "cinder.openstack.c5c3.io/v1alpha1")
    );

    // 2. The operator's webhook server converts; the CRD stores v1beta1 now.
    let (webhook, ca) = ratchet_operator::webhooks::serve_on_localhost::<Services>(
        "127.0.0.1:0".parse()?,
        Arc::new(ratchet_operator::metrics::Metrics::default()),
    )
    .await?;
    let endpoint = Endpoint::Url(format!("https://127.0.0.1:{}", webhook.local_addr.port()));
    apply_crd(&client, &cinder::crd_v1beta1_storage()?).await?;
    registration::register_conversion(
        &client,
        CRD,
        &endpoint,
        ratchet_services::cinder::CONVERSION_PATH,
        &ca,
    )
    .await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    until(
        &crds,
        CRD,
        TIMEOUT,
        "both versions stored",
        |c: &CustomResourceDefinition| {
            c.status
                .as_ref()
                .and_then(|s| s.stored_versions.clone())
                .is_some_and(|v| v.len() == 2)
        },
    )
    .await?;

    // Live round trip: create at each version, read at each version, compare.
    let beta: Api<v1beta1::Cinder> = Api::namespaced(client.clone(), &ns_name);
    let created_beta: v1beta1::Cinder = serde_json::from_value(json!({
        "apiVersion": "cinder.openstack.c5c3.io/v1beta1",
        "kind": "Cinder",
        "metadata": { "name": "beta-made" },
        "spec": {
            "openStackRelease": "2026.1",
            "image": { "repository": "registry.invalid/cinder", "reference": { "tag": "2026.1" } },
            "database": { "secretName": "cinder-db", "key": "connection" },
            "transport": { "secretName": "cinder-mq", "key": "transport_url" },
            "volumeBackends": [ { "name": "zeta" }, { "name": "alpha", "replicas": 2 } ],
        }
    }))?;
    let created_beta = beta.create(&PostParams::default(), &created_beta).await?;
    let as_alpha = alpha.get("beta-made").await?;
    ensure!(as_alpha.spec.volumes.len() == 2);
    ensure!(as_alpha.spec.volumes["alpha"].replicas == Some(2));
    let back = beta.get("beta-made").await?;
    ensure!(
        back.spec == created_beta.spec,
        "v1beta1 → v1alpha1 → v1beta1 kept the order"
    );
    let alpha_object = alpha.get("c0000").await?;
    let beta_view = beta.get("c0000").await?;
    ensure!(
        cinder::conversion::to_v1alpha1(&beta_view)?.spec == alpha_object.spec,
        "the server's conversion is the pure one"
    );

    // 3. A validating webhook refuses to rewrite one object: the migration stops
    // with an error naming it and storedVersions stays as it was.
    registration::register::<Services>(
        &client,
        &Registration {
            name: format!("ratchet-{ns_name}"),
            endpoint: endpoint.clone(),
            namespace_selector: Some(BTreeMap::from([(
                "kubernetes.io/metadata.name".to_string(),
                ns_name.clone(),
            )])),
            conversion: false,
            admission: true,
        },
        &ca,
    )
    .await?;
    // Installed 2026.2 with the spec at 2026.1: any update is a refused downgrade.
    alpha
        .patch_status(
            "c0007",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "installedRelease": "2026.2" } })),
        )
        .await?;
    let refused =
        storage::migrate_recorded(&client, &crds.get(CRD).await?, MigrationOptions::default())
            .await;
    match &refused {
        Err(MigrationError::Rewrite { name, .. }) => ensure!(name == "c0007", "{refused:?}"),
        other => anyhow::bail!("expected a refused rewrite, got {other:?}"),
    }
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    ensure!(
        message.contains("storedVersions left unchanged"),
        "{message}"
    );
    ensure!(
        stored_versions(&client).await?.len() == 2,
        "not pruned after a stop"
    );
    let (status, reason, message) = migration_condition(&client).await?;
    ensure!(
        status == "False" && reason == "MigrationFailed" && message.contains("c0007"),
        "the CRD says why: {status} {reason} {message}"
    );

    // Pre-flight: dropping v1alpha1 now would strand objects.
    let live = crds.get(CRD).await?;
    let v1beta1_only = v1beta1::Cinder::crd();
    ensure!(!storage::preflight(&live, &v1beta1_only).is_empty());

    // 4. Fixed. The CRD changes while the objects are rewritten (a new
    // generation): nothing is pruned, the next run finishes.
    alpha
        .patch_status(
            "c0007",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "installedRelease": "2026.1" } })),
        )
        .await?;
    let changing = crds.clone();
    let changed = Arc::new(Mutex::new(false));
    let flag = changed.clone();
    let runtime = tokio::runtime::Handle::current();
    let options = MigrationOptions {
        page_size: 500,
        on_page: Some(Box::new(move |_| {
            let mut done = flag.lock().unwrap_or_else(|p| p.into_inner());
            if !*done {
                *done = true;
                let crds = changing.clone();
                let patch = json!({ "spec": { "names": { "categories": ["ratchet-test"] } } });
                let patched = tokio::task::block_in_place(|| {
                    runtime.block_on(async move {
                        crds.patch(CRD, &PatchParams::default(), &Patch::Merge(&patch))
                            .await
                    })
                });
                if let Err(e) = patched {
                    tracing::warn!(error = %e, "changing the CRD failed");
                }
            }
        })),
        ..MigrationOptions::default()
    };
    let interrupted = storage::migrate_recorded(&client, &crds.get(CRD).await?, options).await?;
    ensure!(
        interrupted.crd_changed && !interrupted.pruned,
        "{interrupted:?}"
    );
    ensure!(stored_versions(&client).await?.len() == 2, "not pruned");
    let (status, reason, _) = migration_condition(&client).await?;
    ensure!(
        status == "Unknown" && reason == "CRDChanged",
        "{status} {reason}"
    );

    // Migrated in small pages while etcd compacts under the listing (the
    // continue token expires; the migration lists again).
    let compacting = etcd.clone();
    // The compaction's outcome, once it ran.
    let compaction: Arc<Mutex<Option<Result<i64, String>>>> = Arc::new(Mutex::new(None));
    let outcome = compaction.clone();
    let handle = tokio::runtime::Handle::current();
    let options = MigrationOptions {
        page_size: 100,
        concurrency: 4,
        max_restarts: 5,
        on_page: Some(Box::new(move |rewritten| {
            let mut done = outcome.lock().unwrap_or_else(|p| p.into_inner());
            if rewritten >= 200 && done.is_none() {
                let etcd = compacting.clone();
                // The callback is synchronous; compaction must finish before
                // the next page is requested.
                let compacted = tokio::task::block_in_place(|| {
                    handle.block_on(async move { etcd.compact().await })
                });
                *done = Some(compacted.map_err(|e| e.to_string()));
            }
        })),
    };
    let migration = storage::migrate_recorded(&client, &crds.get(CRD).await?, options).await?;
    let compacted = compaction.lock().unwrap_or_else(|p| p.into_inner()).clone();
    ensure!(
        matches!(compacted, Some(Ok(_))),
        "etcd compacted under the listing: {compacted:?}"
    );
    ensure!(migration.pruned, "{migration:?}");
    let (status, reason, message) = migration_condition(&client).await?;
    ensure!(
        status == "True"
            && reason == "Pruned"
            && message.ends_with("storedVersions pruned from [v1alpha1, v1beta1] to [v1beta1]"),
        "{status} {reason} {message}"
    );
    ensure!(
        migration.pages >= (OBJECTS as u64 + 1) / 100,
        "paged: {migration:?}"
    );
    ensure!(
        migration.restarts >= 1,
        "the expired continue token was survived: {migration:?}"
    );
    ensure!(stored_versions(&client).await? == ["v1beta1"]);
    let after = stored_as(&etcd, &ns_name).await?;
    ensure!(after.len() == OBJECTS + 1);
    ensure!(
        after
            .values()
            .all(|v| v == "cinder.openstack.c5c3.io/v1beta1"),
        "{after:?}"
    );
    ensure!(storage::preflight(&crds.get(CRD).await?, &v1beta1_only).is_empty());

    // 5. The operator runs the migration whenever a Ratchet CRD changes. The
    // next CRD drops v1alpha1: the managed fields that name it are cleaned, and
    // every object lists and server-side applies.
    let operator = ratchet_operator::start::<Services>(
        client.clone(),
        ratchet_operator::OperatorConfig {
            // Its service controllers have nothing to do here.
            namespace: Some("no-such-namespace".into()),
            storage_migration: true,
            webhook: Some(WebhookConfig {
                bind: "127.0.0.1:0".parse()?,
                tls: TlsSource::SelfManaged {
                    dns_names: vec!["localhost".into()],
                    ips: vec![std::net::Ipv4Addr::LOCALHOST.into()],
                },
                registration: Some(Registration {
                    name: "ratchet-storage-operator".into(),
                    endpoint: Endpoint::Url("https://127.0.0.1:0".into()),
                    namespace_selector: Some(BTreeMap::from([(
                        "kubernetes.io/metadata.name".to_string(),
                        "no-such-namespace".to_string(),
                    )])),
                    conversion: true,
                    admission: true,
                }),
            }),
            ..ratchet_operator::OperatorConfig::default()
        },
    )
    .await?;
    // The operator points the CRD's conversion at itself, and puts it back
    // when a re-applied CRD (Helm, GitOps) changed it.
    let port = operator.webhook_addr().context("webhook address")?.port();
    let ours = format!("https://127.0.0.1:{port}/convert/cinders");
    let points_at_operator = |c: &CustomResourceDefinition| {
        c.spec
            .conversion
            .as_ref()
            .and_then(|c| c.webhook.as_ref())
            .and_then(|w| w.client_config.as_ref())
            .and_then(|cc| cc.url.as_deref())
            == Some(ours.as_str())
    };
    until(
        &crds,
        CRD,
        TIMEOUT,
        "conversion points at the operator",
        points_at_operator,
    )
    .await?;
    crds.patch(
        CRD,
        &PatchParams::default(),
        &Patch::Merge(
            json!({ "spec": { "conversion": { "webhook": { "clientConfig": {
            "url": "https://127.0.0.1:1/convert/cinders", "caBundle": null } } } } }),
        ),
    )
    .await?;
    until(
        &crds,
        CRD,
        TIMEOUT,
        "conversion restored",
        points_at_operator,
    )
    .await?;
    apply_crd(&client, &v1beta1_only).await?;
    let dynamic: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &ns_name, &resource("v1beta1"));
    until_every(
        &dynamic,
        OBJECTS + 1,
        TIMEOUT,
        "managed fields of v1alpha1 cleaned",
        |o: &DynamicObject| {
            o.metadata
                .managed_fields
                .iter()
                .flatten()
                .all(|f| f.api_version.as_deref() != Some("cinder.openstack.c5c3.io/v1alpha1"))
        },
    )
    .await?;
    until(
        &crds,
        CRD,
        TIMEOUT,
        "the operator's run says the CRD is up to date",
        |c: &CustomResourceDefinition| {
            c.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .any(|c| {
                    c.type_ == storage::condition::STORAGE_MIGRATED
                        && c.status == "True"
                        && c.reason.as_deref() == Some("UpToDate")
                })
        },
    )
    .await?;
    // The condition may read UpToDate from an earlier run before this run's
    // outcome is counted: wait for the count.
    let counted = "ratchet_storage_migrations_total{crd=\"cinders.cinder.openstack.c5c3.io\",outcome=\"clean\"}";
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let metrics = operator.metrics().encode();
        if metrics.contains(counted) {
            break;
        }
        ensure!(tokio::time::Instant::now() < deadline, "{metrics}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    operator.stop().await;
    let listed = dynamic.list(&ListParams::default()).await?;
    ensure!(listed.items.len() == OBJECTS + 1);
    stream::iter(listed.items)
        .map(|object| {
            let dynamic = dynamic.clone();
            async move {
                let name = object.metadata.name.context("name")?;
                let patch = json!({
                    "apiVersion": "cinder.openstack.c5c3.io/v1beta1",
                    "kind": "Cinder",
                    "metadata": { "name": name, "labels": { "migrated": "yes" } },
                });
                dynamic
                    .patch(
                        &name,
                        &PatchParams::apply("storage-test"),
                        &Patch::Apply(&patch),
                    )
                    .await
                    .with_context(|| format!("server-side apply of {name}"))?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<()>()
        .await?;

    drop(webhook);
    Ok(())
}

/// The chart's cert-manager path on the CRD Ratchet ships: the serving
/// certificate and its CA come from files, the operator registers only the
/// conversion, and a v1alpha1 client is served through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_crd_converts_through_an_operator_given_its_ca_as_a_file() -> Result<()> {
    let cluster = LocalCluster::start().await?;
    let client = cluster.client()?;
    ratchet_operator::install::install_crds::<Services>(&client, TIMEOUT).await?;

    // What cert-manager mounts: tls.crt, tls.key and the issuer's ca.crt.
    let ca = ratchet_pki::CertificateAuthority::new("issuer")?;
    let issued = ca.issue_server(
        "ratchet-webhook",
        &["localhost"],
        &[std::net::Ipv4Addr::LOCALHOST.into()],
    )?;
    let dir = std::env::temp_dir().join(format!("ratchet-cert-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (cert, key, ca_file) = (dir.join("tls.crt"), dir.join("tls.key"), dir.join("ca.crt"));
    std::fs::write(&cert, &issued.cert_pem)?;
    std::fs::write(&key, &issued.key_pem)?;
    std::fs::write(&ca_file, ca.cert_pem())?;

    let registration = Registration {
        name: "ratchet-files".into(),
        endpoint: Endpoint::Url("https://127.0.0.1:0".into()),
        namespace_selector: None,
        conversion: true,
        admission: false,
    };
    let operator = ratchet_operator::start::<Services>(
        client.clone(),
        ratchet_operator::OperatorConfig {
            namespace: Some("no-such-namespace".into()),
            webhook: Some(WebhookConfig {
                bind: "127.0.0.1:0".parse()?,
                tls: TlsSource::Files {
                    cert,
                    key,
                    ca: Some(ca_file),
                },
                registration: Some(registration),
            }),
            ..ratchet_operator::OperatorConfig::default()
        },
    )
    .await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let ca_bundle = ca.cert_pem();
    until(
        &crds,
        CRD,
        TIMEOUT,
        "the CRD trusts the issuer's CA",
        |c: &CustomResourceDefinition| {
            c.spec
                .conversion
                .as_ref()
                .and_then(|c| c.webhook.as_ref())
                .and_then(|w| w.client_config.as_ref())
                .and_then(|cc| cc.ca_bundle.as_ref())
                .is_some_and(|b| b.0 == ca_bundle.as_bytes())
        },
    )
    .await?;
    let admission: Api<
        k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
    > = Api::all(client.clone());
    ensure!(
        admission.get_opt("ratchet-files").await?.is_none(),
        "admission is left to cert-manager's injection"
    );

    // A client still at v1alpha1 writes and reads through the conversion.
    let ns_name = "files".to_string();
    let namespace: Namespace = serde_json::from_value(json!({ "metadata": { "name": ns_name } }))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;
    let manifest = cinder::conversion::convert(
        cinder::example_manifest(
            "old-client",
            "2026.1",
            "registry.invalid/cinder",
            "2026.1",
            &["nfs", "lvm"],
        ),
        cinder::conversion::V1ALPHA1,
    )?;
    let alpha: Api<v1alpha1::Cinder> = Api::namespaced(client.clone(), &ns_name);
    alpha
        .create(&PostParams::default(), &serde_json::from_value(manifest)?)
        .await?;
    let beta: Api<v1beta1::Cinder> = Api::namespaced(client.clone(), &ns_name);
    let stored = beta.get("old-client").await?;
    let names: Vec<&str> = stored
        .spec
        .volume_backends
        .iter()
        .map(|b| b.name.as_str())
        .collect();
    ensure!(
        names == ["nfs", "lvm"],
        "the list order survives v1alpha1: {names:?}"
    );
    let stored_as = stored_as(cluster.etcd(), &ns_name).await?;
    ensure!(
        stored_as.get("old-client").map(String::as_str) == Some(cinder::conversion::V1BETA1),
        "{stored_as:?}"
    );
    operator.stop().await;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
