//! `glance-api.conf`, rendered from the spec. The database URL comes from a
//! Secret through oslo.config's environment variable; the image files are on
//! the claim the spec names, mounted where this file points the file store.

use ratchet_release::Release;

use super::paste;
use super::profile::CONFIG_DIR;
use crate::glance::v1alpha1::{Glance, GlanceSpec};

use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::identity;
use ratchet_operator::service::ini::{self, ManagedOption, Sections, same_option};
use ratchet_operator::service::model::ENV_DATABASE_CONNECTION;
use ratchet_operator::service::status::{EXTRA_CONFIG, config_refusals};

/// The file store's name in `enabled_backends` and its section.
pub const FILE_STORE: &str = "file";
/// Where `spec.imageStore.fileVolumeClaim` is mounted in the API pods.
pub const IMAGES_DIR: &str = "/var/lib/glance/images";
/// glance's own stores for images being imported and for task data: files
/// under the pod's state directory (an emptyDir each, per pod).
pub const STAGING_DIR: &str = "/var/lib/glance/staging";
pub const TASKS_DIR: &str = "/var/lib/glance/tasks";

pub const FILE_STORE_DIR: ManagedOption = ManagedOption {
    section: FILE_STORE,
    option: "filesystem_store_datadir",
    set_from: "spec.imageStore.fileVolumeClaim (mounted at /var/lib/glance/images)",
};
pub const STAGING_STORE_DIR: ManagedOption = ManagedOption {
    section: "os_glance_staging_store",
    option: "filesystem_store_datadir",
    set_from: "Ratchet (a directory of the pod, /var/lib/glance/staging)",
};
pub const TASKS_STORE_DIR: ManagedOption = ManagedOption {
    section: "os_glance_tasks_store",
    option: "filesystem_store_datadir",
    set_from: "Ratchet (a directory of the pod, /var/lib/glance/tasks)",
};
pub const PASTE_CONFIG: ManagedOption = ManagedOption {
    section: "paste_deploy",
    option: "config_file",
    set_from: "Ratchet (glance-api-paste.ini in the ConfigMap)",
};

/// `[paste_deploy] flavor` as `extraConfig` sets it, if it does.
fn extra_flavor(spec: &GlanceSpec) -> Option<&str> {
    spec.extra_config
        .iter()
        .flat_map(|(section, options)| options.iter().map(move |(o, v)| (section, o, v)))
        .find(|(section, option, _)| same_option((section, option), ("paste_deploy", "flavor")))
        .map(|(_, _, value)| value.as_str())
}

/// The pipeline's flavor: `extraConfig`'s, else `keystone` with
/// `spec.identity`, else none ("").
fn flavor(spec: &GlanceSpec) -> &str {
    extra_flavor(spec).unwrap_or(match spec.identity {
        Some(_) => KEYSTONE_FLAVOR,
        None => "",
    })
}

/// The flavor `spec.identity` selects unless `extraConfig` picks another
/// that authenticates (`keystone+caching`, say).
const KEYSTONE_FLAVOR: &str = "keystone";

/// Why the pipeline cannot be served: `extraConfig`'s `[paste_deploy]
/// flavor` is none the rendered pipeline has (the API would not load), or
/// one without Keystone although `spec.identity` is set.
pub fn flavor_refusal(spec: &GlanceSpec) -> Option<String> {
    let release = Release::parse(&spec.open_stack_release).ok();
    let flavor = flavor(spec);
    match (paste::authenticates(release, flavor), &spec.identity) {
        (None, _) => Some(format!(
            "{EXTRA_CONFIG}.paste_deploy.flavor {flavor:?}: {} has no such pipeline (it has {:?})",
            paste::FILE,
            paste::flavors(release)
        )),
        (Some(false), Some(_)) => Some(format!(
            "{EXTRA_CONFIG}.paste_deploy.flavor {flavor:?} serves requests without Keystone, \
             but spec.identity asks for it; pick a keystone flavor or remove the entry"
        )),
        _ => None,
    }
}

/// What Glance reads of `spec.identity`: service tokens on its calls to
/// peers; its middleware comes with the paste flavor, not `auth_strategy`.
pub const IDENTITY_WIRING: identity::Wiring = identity::Wiring {
    auth_strategy: None,
    service_user: true,
    catalogue_clients: &[],
};

/// Why `spec.identity` cannot be rendered: other fields setting its options.
pub fn identity_refusals(spec: &GlanceSpec) -> Vec<String> {
    identity::refusals(
        spec.identity.as_ref(),
        &IDENTITY_WIRING,
        &spec.extra_config,
        &spec.secret_options,
    )
}

/// The file, or why it cannot be written: the entries of `extraConfig` that
/// oslo.config would read otherwise than written, or a paste flavor the
/// rendered pipeline does not have (nothing is rendered then).
pub fn render(namespace: &str, name: &str, spec: &GlanceSpec) -> Result<String, Vec<String>> {
    let release = Release::parse(&spec.open_stack_release).ok();
    let mut refused = config_refusals::<Glance>(&spec.extra_config, &spec.secret_options);
    refused.extend(flavor_refusal(spec));
    refused.extend(identity_refusals(spec));
    let authenticates = paste::authenticates(release, flavor(spec));
    if !refused.is_empty() {
        return Err(refused);
    }
    let mut sections = Sections::new();
    let mut set = |section: &str, option: &str, value: &str| {
        sections
            .entry(section.into())
            .or_default()
            .insert(option.into(), value.into());
    };
    set("DEFAULT", "use_stderr", "true");
    // The file store is the default; extraConfig may list more stores
    // (keeping this one) and pick another default.
    set(
        "DEFAULT",
        "enabled_backends",
        &format!("{FILE_STORE}:{FILE_STORE}"),
    );
    set("glance_store", "default_backend", FILE_STORE);
    let paste_file = format!("{CONFIG_DIR}/{}", paste::FILE);
    for (option, value) in [
        (FILE_STORE_DIR, IMAGES_DIR),
        (STAGING_STORE_DIR, STAGING_DIR),
        (TASKS_STORE_DIR, TASKS_DIR),
        (PASTE_CONFIG, paste_file.as_str()),
    ] {
        set(option.section, option.option, value);
    }
    if authenticates == Some(false) {
        // Without Keystone every request's context has no roles, which the
        // new default policies refuse; the legacy ones allow it.
        set("oslo_policy", "enforce_new_defaults", "false");
    }
    if extra_flavor(spec).is_none() && spec.identity.is_some() {
        set("paste_deploy", "flavor", KEYSTONE_FLAVOR);
    }
    if let Some(identity) = &spec.identity {
        identity::render(
            &mut sections,
            identity,
            &IDENTITY_WIRING,
            crate::glance::SERVICE,
            namespace,
            crate::keystone::model::API_PORT,
        );
    }
    ini::overlay(&mut sections, &spec.extra_config, Glance::MANAGED_OPTIONS);
    ini::write(
        &[
            format!("Rendered by Ratchet for Glance {namespace}/{name}; edits are overwritten."),
            format!("[database] connection comes from a Secret via {ENV_DATABASE_CONNECTION}."),
        ],
        sections,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(extra: serde_json::Value) -> GlanceSpec {
        serde_json::from_value(serde_json::json!({
            "openStackRelease": "2026.1",
            "image": { "repository": "glance", "tag": "2026.1" },
            "database": { "secretName": "db", "key": "connection" },
            "imageStore": { "fileVolumeClaim": "images" },
            "extraConfig": extra,
        }))
        .expect("spec")
    }

    #[test]
    fn the_stores_are_where_the_claim_and_the_scratch_dirs_are_mounted() {
        let text = render("ns", "g", &spec(serde_json::json!({}))).expect("renders");
        for expected in [
            "[DEFAULT]\nenabled_backends = file:file\nuse_stderr = true\n",
            "[file]\nfilesystem_store_datadir = /var/lib/glance/images\n",
            "[glance_store]\ndefault_backend = file\n",
            "[os_glance_staging_store]\nfilesystem_store_datadir = /var/lib/glance/staging\n",
            "[os_glance_tasks_store]\nfilesystem_store_datadir = /var/lib/glance/tasks\n",
            "[oslo_policy]\nenforce_new_defaults = false\n",
            "[paste_deploy]\nconfig_file = /etc/glance/glance.conf.d/glance-api-paste.ini\n",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
        assert!(
            !text.lines().any(|l| l.starts_with("connection")),
            "the database URL stays in its Secret: {text}"
        );
    }

    #[test]
    fn with_keystone_the_new_policies_stay_and_more_stores_may_be_added() {
        let text = render(
            "ns",
            "g",
            &spec(serde_json::json!({
                "paste_deploy": { "flavor": "keystone" },
                "DEFAULT": { "enabled_backends": "file:file,ceph:rbd" },
                "glance_store": { "default_backend": "ceph" },
            })),
        )
        .expect("renders");
        assert!(!text.contains("enforce_new_defaults"), "{text}");
        assert!(text.contains("[paste_deploy]\nconfig_file = /etc/glance/glance.conf.d/glance-api-paste.ini\nflavor = keystone\n"), "{text}");
        assert!(text.contains("enabled_backends = file:file,ceph:rbd\n"));
        assert!(text.contains("[glance_store]\ndefault_backend = ceph\n"));
    }

    #[test]
    fn a_flavor_the_paste_file_lacks_is_refused() {
        let refused = render(
            "ns",
            "g",
            &spec(serde_json::json!({ "paste_deploy": { "flavor": "keystone+cache" } })),
        )
        .expect_err("refused");
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].starts_with("spec.extraConfig.paste_deploy.flavor \"keystone+cache\""),
            "{refused:?}"
        );
    }

    fn with_identity(extra: serde_json::Value) -> GlanceSpec {
        GlanceSpec {
            identity: Some(
                serde_json::from_value(serde_json::json!({
                    "keystone": "keystone",
                    "password": { "secretName": "glance-keystone", "key": "password" },
                }))
                .expect("identity"),
            ),
            ..spec(extra)
        }
    }

    #[test]
    fn an_identity_authenticates_through_keystones_service_name() {
        let text = render("ns", "g", &with_identity(serde_json::json!({}))).expect("renders");
        for expected in [
            "[keystone_authtoken]\nauth_type = password\nauth_url = http://keystone.ns.svc:5000\n",
            "username = glance\nwww_authenticate_uri = http://keystone.ns.svc:5000\n",
            "[paste_deploy]\nconfig_file = /etc/glance/glance.conf.d/glance-api-paste.ini\nflavor = keystone\n",
            "[service_user]\nauth_type = password\n",
            "send_service_user_token = true\n",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
        assert!(!text.contains("enforce_new_defaults"), "{text}");
        assert!(!text.contains("password ="), "{text}");
        // Another flavor with Keystone is the user's choice.
        let caching =
            with_identity(serde_json::json!({ "paste_deploy": { "flavor": "keystone+caching" } }));
        assert!(
            render("ns", "g", &caching)
                .expect("renders")
                .contains("flavor = keystone+caching\n")
        );
    }

    #[test]
    fn an_identity_refuses_a_flavor_without_keystone_and_its_options_set_elsewhere() {
        let refused = render(
            "ns",
            "g",
            &with_identity(serde_json::json!({
                "paste_deploy": { "flavor": "caching" },
                "keystone_authtoken": { "auth_url": "http://elsewhere:5000" },
            })),
        )
        .expect_err("refused");
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(
            refused[0].contains("serves requests without Keystone"),
            "{refused:?}"
        );
        assert!(
            refused[1].contains("keystone_authtoken.auth_url: set by spec.identity"),
            "{refused:?}"
        );
    }
}
