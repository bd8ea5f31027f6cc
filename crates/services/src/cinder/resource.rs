//! The Cinder resource across its API versions: the CRD serving both, the
//! types both versions share, and example manifests.

use super::{config, conversion, model, v1alpha1, v1beta1};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, ServiceReference, WebhookClientConfig,
    WebhookConversion,
};
use kube::CustomResourceExt;
use kube::core::crd::{MergeError, merge_crds};

/// What `kubectl` and other clients print on every v1alpha1 request.
pub const V1ALPHA1_DEPRECATION_WARNING: &str = "cinder.openstack.c5c3.io/v1alpha1 Cinder is deprecated; use cinder.openstack.c5c3.io/v1beta1 (spec.volumes becomes the list spec.volumeBackends, spec.image.tag/digest become spec.image.reference.tag/digest)";

/// Where the operator serves Cinder conversion (`ConversionReview`).
pub const CONVERSION_PATH: &str = "/convert/cinders";

/// The Service the shipped CRD's conversion points at until the operator points it
/// at itself: where the Helm chart and `ratchet manifests` run the operator.
pub const DEFAULT_CONVERSION_SERVICE: (&str, &str) = ("ratchet-system", "ratchet");

/// The Cinder CRD serving both versions: v1beta1 is the storage version, v1alpha1 is
/// still served but deprecated.
///
/// `spec.conversion` is left unset. The versions differ in shape, so the CRD must not
/// be applied without setting it to the webhook that calls [`conversion::convert`].
pub fn crd_v1beta1_storage() -> Result<CustomResourceDefinition, MergeError> {
    let mut v1alpha1 = v1alpha1::Cinder::crd();
    for version in &mut v1alpha1.spec.versions {
        version.deprecated = Some(true);
        version.deprecation_warning = Some(V1ALPHA1_DEPRECATION_WARNING.to_owned());
    }
    merge_crds(vec![v1beta1::Cinder::crd(), v1alpha1], "v1beta1")
}

/// The Cinder CRD Ratchet ships: [`crd_v1beta1_storage`] with its conversion on the
/// operator's webhook in [`DEFAULT_CONVERSION_SERVICE`]. No caBundle: the operator
/// sets it, and its endpoint, at start-up and whenever the CRD is re-applied.
pub fn crd() -> Result<CustomResourceDefinition, MergeError> {
    let mut crd = crd_v1beta1_storage()?;
    let (namespace, name) = DEFAULT_CONVERSION_SERVICE;
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".to_owned(),
        webhook: Some(WebhookConversion {
            conversion_review_versions: vec!["v1".to_owned()],
            client_config: Some(WebhookClientConfig {
                service: Some(ServiceReference {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                    path: Some(CONVERSION_PATH.to_owned()),
                    port: Some(443),
                }),
                ..WebhookClientConfig::default()
            }),
        }),
    });
    Ok(crd)
}

/// A v1beta1 Cinder manifest for demos and tests: secrets `cinder-db`/`cinder-mq`,
/// one back end per name, every back end on the LVM driver.
pub fn example_manifest(
    name: &str,
    release: &str,
    repository: &str,
    tag: &str,
    backends: &[&str],
) -> serde_json::Value {
    let volume_backends: Vec<serde_json::Value> = backends
        .iter()
        .map(|b| {
            serde_json::json!({
                "name": b,
                "options": { "volume_driver": "cinder.volume.drivers.lvm.LVMVolumeDriver" },
            })
        })
        .collect();
    serde_json::json!({
        "apiVersion": conversion::V1BETA1,
        "kind": "Cinder",
        "metadata": { "name": name },
        "spec": {
            "openStackRelease": release,
            "image": { "repository": repository, "reference": { "tag": tag } },
            "database": { "secretName": "cinder-db", "key": "connection" },
            "transport": { "secretName": "cinder-mq", "key": "transport_url" },
            // Backups as files on a claim of that name (cinder's posix driver).
            "backup": { "posixVolumeClaim": "cinder-backups" },
            "volumeBackends": volume_backends,
        }
    })
}

/// Cinder's own fake volume driver: the volume service is real, its storage
/// is not (it needs no device, no root and no rootwrap).
pub const FAKE_DRIVER: &str = "cinder.tests.fake_driver.FakeLoggingVolumeDriver";

/// The test images' own volume driver (`testenv/images/python/ratchet_file_volume.py`):
/// volumes are sparse files on the back end's storage claim, which an unprivileged
/// cinder-backup can read, so backups work end to end.
pub const FILE_DRIVER: &str = "ratchet_file_volume.FileVolumeDriver";

/// The example as the real tests and `ratchet demo --real` run it: 2 API and 2
/// scheduler replicas, two back ends on [`FILE_DRIVER`] (each on its claim
/// `cinder-<back end>`), backups as files on the claim `cinder-backups` by a
/// privileged backup service, the
/// Secrets `cinder-db` (`connection`) and `cinder-mq` (`url`), and the noauth
/// pipeline (no Keystone resource exists).
pub fn real_example_manifest(name: &str, release: &str, repository: &str) -> serde_json::Value {
    let backend = |backend: &str| {
        serde_json::json!({
            "name": backend,
            "storageVolumeClaim": format!("cinder-{backend}"),
            "options": {
                "volume_driver": FILE_DRIVER,
                "file_volume_directory": format!("{}/{backend}", config::BACKEND_STORAGE_PATH),
            },
        })
    };
    serde_json::json!({
        "apiVersion": conversion::V1BETA1,
        "kind": "Cinder",
        "metadata": { "name": name },
        "spec": {
            "openStackRelease": release,
            "image": { "repository": repository, "reference": { "tag": release } },
            "database": { "secretName": "cinder-db", "key": "connection" },
            "transport": { "secretName": "cinder-mq", "key": "url" },
            "api": { "replicas": 2 },
            "scheduler": { "replicas": 2 },
            // Privileged: os-brick starts oslo.privsep's helper for every
            // backup. The images have no sudo nor rootwrap configuration;
            // a root container starts the helper itself.
            "backup": { "posixVolumeClaim": "cinder-backups", "privileged": true },
            "volumeBackends": [backend("files-a"), backend("files-b")],
            "extraConfig": {
                "DEFAULT": {
                    "auth_strategy": "noauth",
                    // Each backup reads its volume through a buffer of this
                    // size (the posix driver's default is 1.9 GB, upstream's
                    // help says to scale it to RAM): with the load's backups
                    // of 1 GiB volumes side by side, one cinder-backup grew
                    // past 13 GB. 64 MiB, a multiple of the 32 KiB SHA block.
                    "backup_file_size": "67108864",
                },
                "privsep_osbrick": {
                    "helper_command": format!("privsep-helper --config-dir {}", model::CONFIG_DIR),
                },
            },
        }
    })
}

/// The same example as a v1alpha1 object at 2026.1 with back ends `ceph` and
/// `lvm`: what a client of the previous Ratchet stored (the stored-version
/// migration's test and benchmark create thousands).
pub fn example_v1alpha1(name: &str) -> Result<v1alpha1::Cinder, conversion::ConversionError> {
    let manifest = example_manifest(
        name,
        "2026.1",
        "registry.invalid/cinder",
        "2026.1",
        &["ceph", "lvm"],
    );
    let converted = conversion::convert(manifest, conversion::V1ALPHA1)?;
    serde_json::from_value(converted).map_err(|source| conversion::ConversionError::Invalid {
        api_version: conversion::V1ALPHA1.into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_version_crd_stores_v1beta1_and_deprecates_v1alpha1() {
        let crd = crd_v1beta1_storage().expect("the versions merge");
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("cinders.cinder.openstack.c5c3.io")
        );
        let versions: Vec<_> = crd
            .spec
            .versions
            .iter()
            .map(|v| (v.name.as_str(), v.served, v.storage, v.deprecated))
            .collect();
        assert_eq!(versions.len(), 2, "{versions:?}");
        assert!(
            versions.contains(&("v1beta1", true, true, None)),
            "{versions:?}"
        );
        assert!(
            versions.contains(&("v1alpha1", true, false, Some(true))),
            "{versions:?}"
        );
        let stored: Vec<_> = versions.iter().filter(|v| v.2).map(|v| v.0).collect();
        assert_eq!(stored, ["v1beta1"]);

        let alpha = crd.spec.versions.iter().find(|v| v.name == "v1alpha1");
        let warning = alpha.and_then(|v| v.deprecation_warning.as_deref());
        assert!(warning.is_some_and(|w| w.contains("use cinder.openstack.c5c3.io/v1beta1")));
        for version in &crd.spec.versions {
            let subresources = version.subresources.as_ref();
            assert!(
                subresources.is_some_and(|s| s.status.is_some()),
                "{}",
                version.name
            );
            assert_eq!(
                version.additional_printer_columns.as_ref().map(Vec::len),
                Some(6)
            );
        }
        assert!(
            crd.spec.conversion.is_none(),
            "the webhook is set where it is deployed"
        );
    }

    #[test]
    fn v1beta1_schema_merges_back_ends_by_name_and_replaces_the_image_reference() {
        let crd = v1beta1::Cinder::crd();
        let json = serde_json::to_value(&crd).expect("CRD serialises");
        let spec = &json["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        let backends = &spec["properties"]["volumeBackends"];
        assert_eq!(backends["type"], "array");
        assert_eq!(backends["x-kubernetes-list-type"], "map");
        assert_eq!(
            backends["x-kubernetes-list-map-keys"],
            serde_json::json!(["name"])
        );
        let name = &backends["items"]["properties"]["name"];
        // A pattern, not a CEL rule: per item of an unbounded list, the rule's estimated
        // cost exceeds the API server's budget.
        assert_eq!(name["maxLength"], 40);
        assert_eq!(name["pattern"], "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
        assert_eq!(backends["items"]["required"], serde_json::json!(["name"]));

        let image = &spec["properties"]["image"];
        assert_eq!(
            image["required"],
            serde_json::json!(["reference", "repository"])
        );
        let reference = &image["properties"]["reference"];
        assert_eq!(reference["x-kubernetes-map-type"], "atomic");
        assert_eq!(
            reference["x-kubernetes-validations"][0]["rule"],
            "has(self.tag) != has(self.digest)"
        );
        assert!(spec["properties"].get("volumes").is_none());
    }
}

/// cinder-backup: its size and where backups go.
#[derive(
    Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, kube::KubeSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct BackupSpec {
    /// Number of pods. Default 1 when a backup driver is configured (below, or
    /// `extraConfig.DEFAULT.backup_driver`), else 0: a backup service without a
    /// driver that works cannot take a backup. Set above 0 without one is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub replicas: Option<i32>,
    /// CPU and memory requests and limits of the service container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    /// Back up to files (cinder's posix driver) on this PersistentVolumeClaim,
    /// mounted at `/var/lib/cinder/backup` in every backup pod. With more than one
    /// replica on more than one node it must be ReadWriteMany: any backup pod may
    /// restore or delete any backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    )]
    pub posix_volume_claim: Option<String>,
    /// Run the backup pods as root, privileged, with privilege escalation
    /// allowed. cinder-backup attaches every volume it backs up through
    /// os-brick, which asks each connector for this host's properties before
    /// it connects; the NVMe-oF one reads the system UUID through oslo.privsep,
    /// whose helper starts with `sudo` and needs capabilities, so an
    /// unprivileged backup pod fails every backup. Default false. Admission
    /// answers with a warning.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub privileged: bool,
}
