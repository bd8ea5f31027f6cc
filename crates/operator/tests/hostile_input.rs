//! Hostile input on a real control plane: the CRD schema refuses names and
//! values that would inject lines into `cinder.conf`/`ironic.conf`, for every
//! served version and every service, naming the field; what it admits is
//! rendered as given.
//!
//! The schema refuses these before any webhook runs, so the path where neither
//! is in the way (the renderer's own refusal and `InvalidConfig`) cannot be
//! reached through this API server: it is a pure test of the model and the
//! machine in `crates/services/src/cinder/mod.rs`.

mod common;

use anyhow::{Result, ensure};
use common::{Harness, TIMEOUT, cinder_manifest};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use ratchet_api::oslo::{NAME_RULE, VALUE_RULE};
use ratchet_services::Services;
use ratchet_services::cinder::v1alpha1;
use ratchet_services::ironic::v1alpha1::Ironic;
use ratchet_testenv::wait::until;
use serde_json::{Value, json};

/// What the API server answers to creating `manifest` as `K`.
async fn refusal<K>(h: &Harness, manifest: Value) -> Result<String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Clone
        + std::fmt::Debug,
{
    let object: K = serde_json::from_value(manifest)?;
    match h.api::<K>().create(&PostParams::default(), &object).await {
        Ok(_) => Ok(String::new()),
        Err(e) => Ok(e.to_string()),
    }
}

fn with_extra(mut manifest: Value, extra: Value) -> Value {
    manifest["spec"]["extraConfig"] = extra;
    manifest
}

/// Hostile `extraConfig`s, and what the refusal must say.
fn hostile() -> Vec<(Value, &'static str, String)> {
    vec![
        (
            json!({ "DEFAULT": { "debug": "true\n[database]\nconnection = mysql://evil" } }),
            "spec.extraConfig.DEFAULT.debug",
            "should match".into(),
        ),
        (
            json!({ "weird]\n[keystone_authtoken": { "auth_type": "none" } }),
            "spec.extraConfig",
            format!("section names {NAME_RULE}"),
        ),
        (
            json!({ "DEFAULT": { "debug = true\n#": "x" } }),
            "spec.extraConfig",
            format!("option names {NAME_RULE}"),
        ),
        (
            json!({ "DEFAULT": { "debug": "true\r" } }),
            "spec.extraConfig.DEFAULT.debug",
            "should match".into(),
        ),
        (
            json!({ "DEFAULT": { "debug": " true" } }),
            "spec.extraConfig.DEFAULT.debug",
            "should match".into(),
        ),
    ]
}

#[tokio::test]
async fn the_api_server_refuses_injected_configuration_in_every_version() -> Result<()> {
    let h = Harness::start("hostile").await?;
    // The Cinder CRD stores v1beta1; v1alpha1 requests convert through a local
    // webhook (this test binary's cluster only).
    let _conversion = ratchet_operator::install::install_crds_with_local_conversion::<Services>(
        &h.client, TIMEOUT,
    )
    .await?;
    let _ = VALUE_RULE;

    for (i, (extra, field, says)) in hostile().into_iter().enumerate() {
        let beta = with_extra(
            cinder_manifest(&format!("b{i}"), "2026.1", "2026.1", &[]),
            extra.clone(),
        );
        let alpha = json!({
            "apiVersion": "cinder.openstack.c5c3.io/v1alpha1",
            "kind": "Cinder",
            "metadata": { "name": format!("a{i}") },
            "spec": {
                "openStackRelease": "2026.1",
                "image": { "repository": "registry.invalid/cinder", "tag": "2026.1" },
                "database": { "secretName": "cinder-db", "key": "connection" },
                "transport": { "secretName": "cinder-mq", "key": "transport_url" },
                "extraConfig": extra.clone(),
            }
        });
        let ironic = with_extra(
            ratchet_services::ironic::example_manifest(
                &format!("i{i}"),
                "2026.1",
                "registry.invalid/ironic",
                "2026.1",
                1,
            ),
            extra.clone(),
        );
        for (what, err) in [
            (
                "v1beta1 Cinder",
                refusal::<ratchet_services::cinder::v1beta1::Cinder>(&h, beta).await?,
            ),
            (
                "v1alpha1 Cinder",
                refusal::<v1alpha1::Cinder>(&h, alpha).await?,
            ),
            ("Ironic", refusal::<Ironic>(&h, ironic).await?),
        ] {
            ensure!(
                err.contains(field) && err.contains(says.as_str()),
                "{what} with extraConfig {extra}: expected a refusal naming {field:?} saying {says:?}, got {err:?}"
            );
        }
    }

    // A back end's options: v1beta1 list, v1alpha1 map.
    let mut beta = cinder_manifest("bo", "2026.1", "2026.1", &["lvm"]);
    beta["spec"]["volumeBackends"][0]["options"] = json!({ "volume_driver": "lvm\n[database]" });
    let err = refusal::<ratchet_services::cinder::v1beta1::Cinder>(&h, beta).await?;
    ensure!(
        err.contains("spec.volumeBackends[0].options.volume_driver")
            && err.contains("should match"),
        "{err}"
    );
    let alpha = json!({
        "apiVersion": "cinder.openstack.c5c3.io/v1alpha1",
        "kind": "Cinder",
        "metadata": { "name": "ao" },
        "spec": {
            "openStackRelease": "2026.1",
            "image": { "repository": "registry.invalid/cinder", "tag": "2026.1" },
            "database": { "secretName": "cinder-db", "key": "connection" },
            "transport": { "secretName": "cinder-mq", "key": "transport_url" },
            "volumes": { "lvm": { "options": { "a]\n[b": "c" } } },
        }
    });
    let err = refusal::<v1alpha1::Cinder>(&h, alpha).await?;
    ensure!(
        err.contains("spec.volumes") && err.contains("option names"),
        "{err}"
    );

    // An image tag with a newline never reaches a pod spec either.
    let mut tag = cinder_manifest("t", "2026.1", "2026.1", &[]);
    tag["spec"]["image"]["reference"]["tag"] = json!("2026.1\nx");
    let err = refusal::<ratchet_services::cinder::v1beta1::Cinder>(&h, tag).await?;
    ensure!(err.contains("spec.image.reference.tag"), "{err}");

    // What the rules admit is rendered as given.
    let odd = with_extra(
        cinder_manifest("ok", "2026.1", "2026.1", &[]),
        json!({ "DEFAULT": { "my_opt": "a = b [x] #y ünï" } }),
    );
    h.create_cinder(odd).await?;
    let maps: Api<ConfigMap> = h.api();
    let map = until(
        &maps,
        "ok-config",
        TIMEOUT,
        "the ConfigMap",
        |_: &ConfigMap| true,
    )
    .await?;
    let text = map
        .data
        .as_ref()
        .and_then(|d| d.get("cinder.conf"))
        .cloned()
        .unwrap_or_default();
    ensure!(text.contains("\nmy_opt = a = b [x] #y ünï\n"), "{text}");
    h.finish().await;
    Ok(())
}

/// A secret option must name an option with an environment variable of its own:
/// the schema refuses other names for every service; admission refuses what
/// the schema cannot see (two entries for one variable, an option Ratchet sets
/// itself, an `extraConfig` entry or back-end option setting it too), naming
/// the field; the values never reach the ConfigMap.
#[tokio::test]
async fn secret_options_without_a_variable_of_their_own_are_refused() -> Result<()> {
    let h = Harness::start("hostile-secret").await?;
    let with = |mut manifest: Value, options: Value| {
        manifest["spec"]["secretOptions"] = options;
        manifest
    };
    let entry = |section: &str, option: &str| json!({ "section": section, "option": option, "secretName": "s", "key": "k" });
    for (options, says) in [
        (json!([entry("a__b", "c")]), "spec.secretOptions[0].section"),
        (json!([entry("a", "b__c")]), "spec.secretOptions[0].option"),
        (json!([entry("a", "-b")]), "spec.secretOptions[0].option"),
        (
            json!([entry("a]\n[b", "c")]),
            "spec.secretOptions[0].section",
        ),
        (
            json!([entry("default", "debug")]),
            "write DEFAULT in capitals",
        ),
    ] {
        let beta = with(
            cinder_manifest("b", "2026.1", "2026.1", &[]),
            options.clone(),
        );
        let ironic = with(
            ratchet_services::ironic::example_manifest(
                "i",
                "2026.1",
                "registry.invalid/ironic",
                "2026.1",
                1,
            ),
            options.clone(),
        );
        for (what, err) in [
            (
                "Cinder",
                refusal::<ratchet_services::cinder::v1beta1::Cinder>(&h, beta).await?,
            ),
            ("Ironic", refusal::<Ironic>(&h, ironic).await?),
        ] {
            ensure!(
                err.contains(says),
                "{what} with secretOptions {options}: expected {says:?}, got {err:?}"
            );
        }
    }

    for (manifest, says) in [
        (
            with(
                cinder_manifest("d", "2026.1", "2026.1", &[]),
                json!([
                    entry("DEFAULT", "san_password"),
                    entry("DEFAULT", "san-password")
                ]),
            ),
            "spec.secretOptions[\"DEFAULT\"][\"san-password\"]: the same option as spec.secretOptions[\"DEFAULT\"][\"san_password\"] (both are OS_DEFAULT__SAN_PASSWORD)",
        ),
        (
            with(
                cinder_manifest("m", "2026.1", "2026.1", &[]),
                json!([entry("database", "connection")]),
            ),
            "spec.secretOptions[\"database\"][\"connection\"]: set by spec.database (a Secret)",
        ),
        (
            with(
                with_extra(
                    cinder_manifest("x", "2026.1", "2026.1", &[]),
                    json!({ "keystone_authtoken": { "password": "plain" } }),
                ),
                json!([entry("keystone_authtoken", "password")]),
            ),
            "spec.extraConfig.keystone_authtoken.password: set by spec.secretOptions[\"keystone_authtoken\"][\"password\"] (Secret \"s\", key \"k\"); remove it from extraConfig",
        ),
        (
            with(
                cinder_manifest("o", "2026.1", "2026.1", &["lvm"]),
                json!([entry("lvm", "volume_driver")]),
            ),
            "spec.volumeBackends[\"lvm\"].options[\"volume_driver\"]: set by spec.secretOptions[\"lvm\"][\"volume_driver\"]",
        ),
    ] {
        let err = refusal::<ratchet_services::cinder::v1beta1::Cinder>(&h, manifest).await?;
        ensure!(
            err.contains("admission webhook") && err.contains(says),
            "expected {says:?}, got {err:?}"
        );
    }
    let pinned = with(
        ratchet_services::ironic::example_manifest(
            "p",
            "2026.1",
            "registry.invalid/ironic",
            "2026.1",
            1,
        ),
        json!([entry("DEFAULT", "pin_release_version")]),
    );
    let err = refusal::<Ironic>(&h, pinned).await?;
    ensure!(
        err.contains("spec.secretOptions[\"DEFAULT\"][\"pin_release_version\"]: set by Ratchet"),
        "{err}"
    );

    // What the rules admit (a back end's section keeps its '-') is set from the
    // Secret in the environment, not the file.
    let ok = with(
        cinder_manifest("ok", "2026.1", "2026.1", &["lvm-1"]),
        json!([entry("lvm-1", "san-password")]),
    );
    h.create_cinder(ok).await?;
    let maps: Api<ConfigMap> = h.api();
    let map = until(
        &maps,
        "ok-config",
        TIMEOUT,
        "the ConfigMap",
        |_: &ConfigMap| true,
    )
    .await?;
    let text = map
        .data
        .as_ref()
        .and_then(|d| d.get("cinder.conf"))
        .cloned()
        .unwrap_or_default();
    ensure!(text.contains("[lvm-1]") && !text.contains("san"), "{text}");
    h.finish().await;
    Ok(())
}
