use crate::cinder::v1beta1::Cinder;
use crate::cinder::v1beta1::{CinderStatus, CinderUpgradePhase};
use crate::ironic::v1alpha1::{Ironic, IronicStatus};
use ratchet_api::common::UpgradeStatus;
use ratchet_operator::webhooks::validation::validate;

fn cinder(release: &str, image: serde_json::Value) -> Cinder {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "cinder.openstack.c5c3.io/v1beta1",
        "kind": "Cinder",
        "metadata": { "name": "c", "namespace": "ns" },
        "spec": {
            "openStackRelease": release,
            "image": image,
            "database": { "secretName": "db", "key": "connection" },
            "transport": { "secretName": "mq", "key": "url" },
        }
    }))
    .expect("cinder")
}

fn tagged(release: &str) -> Cinder {
    cinder(
        release,
        serde_json::json!({ "repository": "cinder", "reference": { "tag": release } }),
    )
}

fn installed(release: &str, phase: CinderUpgradePhase) -> Cinder {
    let mut c = tagged(release);
    c.status = Some(CinderStatus {
        installed_release: release.into(),
        upgrade_phase: phase,
        ..Default::default()
    });
    c
}

#[test]
fn admits_a_valid_create_and_a_forward_step() {
    assert!(validate(&tagged("2026.1"), None).is_empty());
    let old = installed("2026.1", CinderUpgradePhase::None);
    assert!(validate(&tagged("2026.2"), Some(&old)).is_empty());
}

#[test]
fn refuses_bad_release_and_image_naming_the_field() {
    let v = validate(&tagged("2025.9"), None);
    assert!(
        v.iter().any(|m| m.starts_with("spec.openStackRelease")),
        "{v:?}"
    );
    let both = cinder(
        "2026.1",
        serde_json::json!({ "repository": "cinder", "reference": { "tag": "2026.1", "digest": format!("sha256:{}", "a".repeat(64)) } }),
    );
    let v = validate(&both, None);
    assert!(
        v.iter()
            .any(|m| m.starts_with("spec.image.reference: set exactly one of tag and digest")),
        "{v:?}"
    );
    let neither = cinder(
        "2026.1",
        serde_json::json!({ "repository": "cinder", "reference": {} }),
    );
    assert!(
        validate(&neither, None)
            .iter()
            .any(|m| m.starts_with("spec.image.reference:"))
    );
    let mut repeated = tagged("2026.1");
    for name in ["lvm", "lvm"] {
        repeated
            .spec
            .volume_backends
            .push(crate::cinder::v1beta1::VolumeBackend {
                name: name.into(),
                ..Default::default()
            });
    }
    let v = validate(&repeated, None);
    assert!(
        v.iter()
            .any(|m| m == "spec.volumeBackends: back-end name \"lvm\" appears more than once"),
        "{v:?}"
    );
}

#[test]
fn refuses_downgrades_but_admits_the_abort() {
    let old = installed("2026.2", CinderUpgradePhase::None);
    let v = validate(&tagged("2026.1"), Some(&old));
    assert!(
        v.iter()
            .any(|m| m.contains("older than the installed release 2026.2")),
        "{v:?}"
    );
    // Reverting to the installed release during an upgrade is the abort.
    let upgrading = installed("2026.1", CinderUpgradePhase::Migrating);
    assert!(validate(&tagged("2026.1"), Some(&upgrading)).is_empty());
    // Going below the installed release is refused during an upgrade too.
    assert!(!validate(&tagged("2025.2"), Some(&upgrading)).is_empty());
    // Unknown installed release (fresh object): nothing to compare.
    assert!(validate(&tagged("2026.1"), Some(&tagged("2026.2"))).is_empty());
}

fn ironic(release: &str) -> Ironic {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "ironic.openstack.c5c3.io/v1alpha1",
        "kind": "Ironic",
        "metadata": { "name": "i", "namespace": "ns" },
        "spec": {
            "openStackRelease": release,
            "image": { "repository": "ironic", "tag": release },
            "database": { "secretName": "db", "key": "connection" },
            "transport": { "secretName": "mq", "key": "url" },
        }
    }))
    .expect("ironic")
}

#[test]
fn the_same_rules_hold_for_ironic() {
    assert!(validate(&ironic("2026.1"), None).is_empty());
    assert!(
        validate(&ironic("2026.3"), None)
            .iter()
            .any(|m| m.starts_with("spec.openStackRelease"))
    );
    let mut old = ironic("2026.2");
    old.status = Some(IronicStatus {
        upgrade: UpgradeStatus {
            installed_release: "2026.2".into(),
            ..Default::default()
        },
        ..Default::default()
    });
    assert!(
        validate(&ironic("2026.1"), Some(&old))
            .iter()
            .any(|m| m.contains("older than the installed release 2026.2"))
    );
}

#[test]
fn extra_config_may_not_inject_lines_or_sections() {
    let mut hostile = ironic("2026.1");
    hostile.spec.extra_config.insert(
        "weird]\n[keystone_authtoken".into(),
        [("auth_type".to_string(), "none".to_string())].into(),
    );
    hostile.spec.extra_config.insert(
        "DEFAULT".into(),
        [(
            "debug".to_string(),
            "true\n[database]\nconnection = x".to_string(),
        )]
        .into(),
    );
    let refused = validate(&hostile, None);
    assert_eq!(
        refused,
        [
            format!(
                "spec.extraConfig[\"DEFAULT\"][\"debug\"]: values {}",
                ratchet_api::oslo::VALUE_RULE
            ),
            format!(
                "spec.extraConfig[\"weird]\\n[keystone_authtoken\"]: section names {}",
                ratchet_api::oslo::NAME_RULE
            ),
        ]
    );
}

#[test]
fn extra_config_may_not_set_the_pin_or_the_secrets() {
    let mut pinned = ironic("2026.1");
    pinned.spec.extra_config.insert(
        "DEFAULT".into(),
        [("pin_release_version".to_string(), "2026.1".to_string())].into(),
    );
    pinned.spec.extra_config.insert(
        "database".into(),
        [("connection".to_string(), "mysql://x".to_string())].into(),
    );
    let refused = validate(&pinned, None);
    assert!(
        refused
            .iter()
            .any(|m| m.starts_with("spec.extraConfig.DEFAULT.pin_release_version: set by Ratchet")),
        "{refused:?}"
    );
    assert!(
        refused
            .iter()
            .any(|m| m.starts_with("spec.extraConfig.database.connection: set by spec.database")),
        "{refused:?}"
    );
}

#[test]
fn extra_config_may_not_move_the_boot_roots_or_add_api_workers() {
    let mut spec = ironic("2026.1");
    for (section, option, value) in [
        ("api", "api_workers", "4"),
        ("deploy", "http_root", "/httpboot"),
        ("pxe", "tftp_root", "/tftpboot"),
    ] {
        spec.spec.extra_config.insert(
            section.into(),
            [(option.to_string(), value.to_string())].into(),
        );
    }
    let refused = validate(&spec, None);
    for expected in [
        "spec.extraConfig.api.api_workers: set by Ratchet (one worker per pod: scale with spec.api.replicas)",
        "spec.extraConfig.deploy.http_root: set by Ratchet (an emptyDir",
        "spec.extraConfig.pxe.tftp_root: set by Ratchet (an emptyDir",
    ] {
        assert!(
            refused.iter().any(|m| m.starts_with(expected)),
            "{expected}: {refused:?}"
        );
    }
}

#[test]
fn refuses_a_glance_whose_extra_config_sets_what_its_identity_sets() {
    let glance = |extra: serde_json::Value| -> crate::glance::v1alpha1::Glance {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "glance.openstack.c5c3.io/v1alpha1",
            "kind": "Glance",
            "metadata": { "name": "g", "namespace": "ns" },
            "spec": {
                "openStackRelease": "2026.1",
                "image": { "repository": "glance", "tag": "2026.1" },
                "database": { "secretName": "db", "key": "connection" },
                "imageStore": { "fileVolumeClaim": "images" },
                "identity": {
                    "keystone": "keystone",
                    "password": { "secretName": "glance-keystone", "key": "password" },
                },
                "extraConfig": extra,
            }
        }))
        .expect("glance")
    };
    assert!(validate(&glance(serde_json::json!({})), None).is_empty());
    let v = validate(
        &glance(serde_json::json!({
            "keystone_authtoken": { "memcached_servers": "elsewhere:11211" },
            "paste_deploy": { "flavor": "" },
        })),
        None,
    );
    assert!(
        v.iter()
            .any(|m| m.contains("keystone_authtoken.memcached_servers: set by spec.identity")),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|m| m.contains("serves requests without Keystone")),
        "{v:?}"
    );
}
