//! What admission refuses, decided without I/O. Each message names the field.

use ratchet_release::{ImageRef, Release, StepRefusal};

use crate::service::OpenStackService;

/// Reasons to refuse a create or update of any service resource; empty when
/// it is admitted.
///
/// - `spec.openStackRelease` must be `YYYY.N` (N 1 or 2): the CRD pattern says
///   the same, this catches clusters where the schema was edited.
/// - `spec.image` must name a repository and exactly one of tag or digest.
/// - `spec.extraConfig` may not name an option Ratchet sets itself, nor hold
///   names or values oslo.config would read otherwise than written (a line
///   break that opens a section, a `[`, `=` or `:` in a name, ...; the rules
///   are `ratchet_api::oslo`'s); nor may a Cinder back end's `options`.
/// - A release older than `status.installedRelease` is refused (a downgrade),
///   whether or not an upgrade is active. Moving back to the installed release
///   itself is the abort and is admitted.
/// - `spec.secretOptions` must each name an option with an environment variable
///   of its own, none of the options Ratchet sets through the environment, and
///   none that `extraConfig` (or a Cinder back end's `options`) sets too.
/// - Whatever the service itself refuses ([`OpenStackService::violations`]).
///
/// What it admits but warns about is [`OpenStackService::warnings`].
pub fn validate<S: OpenStackService>(new: &S, old: Option<&S>) -> Vec<String> {
    let mut violations = Vec::new();
    let spec = new.spec_view();
    let release = match Release::parse(&spec.release) {
        Ok(r) => Some(r),
        Err(e) => {
            violations.push(format!("spec.openStackRelease: {e}"));
            None
        }
    };
    if let Err(e) = ImageRef::new(
        &spec.image_repository,
        spec.image_tag.as_deref(),
        spec.image_digest.as_deref(),
    ) {
        violations.push(e.message(spec.image_layout));
    }
    violations.extend(spec.invalid_config.iter().cloned());
    violations.extend(new.violations());
    if let (Some(release), Some(old)) = (release, old)
        && let Ok(installed) = Release::parse(&old.status_view().installed_release)
        && let Some(downgrade @ StepRefusal::Downgrade { .. }) = installed.refuse_step_to(release)
    {
        violations.push(format!("spec.openStackRelease: {downgrade}"));
    }
    violations
}

/// A lowercase DNS label (RFC 1123).
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratchet_api::cinder::v1beta1::Cinder;
    use ratchet_api::cinder::v1beta1::{CinderStatus, CinderUpgradePhase};

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
                .push(ratchet_api::cinder::v1beta1::VolumeBackend {
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
}

#[cfg(test)]
mod ironic_tests {
    use super::*;
    use ratchet_api::ironic::v1alpha1::{Ironic, IronicStatus};

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
            installed_release: "2026.2".into(),
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
                .any(|m| m
                    .starts_with("spec.extraConfig.DEFAULT.pin_release_version: set by Ratchet")),
            "{refused:?}"
        );
        assert!(
            refused.iter().any(
                |m| m.starts_with("spec.extraConfig.database.connection: set by spec.database")
            ),
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
}
