//! A service's authentication through Keystone, rendered the same way for
//! every service from `spec.identity` ([`IdentitySpec`]): keystonemiddleware's
//! `[keystone_authtoken]` (how it validates each request's token) and
//! `[service_user]` (the token it sends along on calls to other services).
//! The service user's password reaches the processes only as the variables
//! oslo.config reads, from the Secret the spec names.

use ratchet_api::common::SecretOption;
use ratchet_api::identity::{IdentitySpec, SERVICE_DOMAIN, SERVICE_PROJECT};

use super::ini::{ManagedOption, Sections, managed_option_violations, same_option};
use super::model::SecretEnv;

const SET_FROM: &str = "spec.identity";
const PASSWORD_SET_FROM: &str = "spec.identity.password (a Secret)";

/// The sections Ratchet writes; each option in them is Ratchet's own while
/// `spec.identity` is set.
const AUTHTOKEN: &str = "keystone_authtoken";
const SERVICE_USER: &str = "service_user";
/// The option services that pick their API's middleware by it read (in
/// `[DEFAULT]` or `[api]`, as each says in its [`Wiring`]).
const AUTH_STRATEGY: &str = "auth_strategy";

/// Options every login section holds: a password login of the service user.
const LOGIN: &[&str] = &[
    "auth_url",
    "auth_type",
    "username",
    "user_domain_name",
    "project_name",
    "project_domain_name",
    "region_name",
];

/// Which of the identity sections a service reads: each service's own
/// choice, declared once in its folder. `[keystone_authtoken]` is always
/// written (every API validates tokens).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wiring {
    /// The section whose `auth_strategy = keystone` selects the API's
    /// middleware: `DEFAULT` (Cinder, Ironic), `api` (Placement, Nova); none
    /// for Glance, which chooses by its paste flavor instead.
    pub auth_strategy: Option<&'static str>,
    /// `[service_user]`: the service sends its own token beside a user's on
    /// calls to peers (Cinder, Glance, Nova; Ironic has no such section).
    pub service_user: bool,
    /// keystoneauth sections the service finds peers (or itself) through the
    /// catalogue with, e.g. Ironic's `[service_catalog]`, Cinder's `[nova]`.
    pub catalogue_clients: &'static [&'static str],
}

impl Wiring {
    /// Every section logging in as the service user.
    fn login_sections(&self) -> Vec<&'static str> {
        let mut sections = vec![AUTHTOKEN];
        if self.service_user {
            sections.push(SERVICE_USER);
        }
        sections.extend(self.catalogue_clients);
        sections
    }
}

/// Every option Ratchet sets when `spec.identity` is declared; `extraConfig`
/// and `secretOptions` may not name them then.
pub fn managed_options(wiring: &Wiring) -> Vec<ManagedOption> {
    let mut managed = Vec::new();
    for section in wiring.login_sections() {
        for option in LOGIN {
            managed.push(ManagedOption {
                section,
                option,
                set_from: SET_FROM,
            });
        }
        managed.push(ManagedOption {
            section,
            option: "password",
            set_from: PASSWORD_SET_FROM,
        });
    }
    for option in ["www_authenticate_uri", "memcached_servers"] {
        managed.push(ManagedOption {
            section: AUTHTOKEN,
            option,
            set_from: SET_FROM,
        });
    }
    if wiring.service_user {
        managed.push(ManagedOption {
            section: SERVICE_USER,
            option: "send_service_user_token",
            set_from: SET_FROM,
        });
    }
    if let Some(section) = wiring.auth_strategy {
        managed.push(ManagedOption {
            section,
            option: AUTH_STRATEGY,
            set_from: "spec.identity (keystone)",
        });
    }
    managed
}

/// Why the spec cannot be rendered with its identity: `extraConfig` or
/// `secretOptions` naming an option `spec.identity` sets.
pub fn refusals(
    identity: Option<&IdentitySpec>,
    wiring: &Wiring,
    extra_config: &Sections,
    secret_options: &[SecretOption],
) -> Vec<String> {
    if identity.is_none() {
        return Vec::new();
    }
    let managed = managed_options(wiring);
    let mut refused = managed_option_violations(extra_config, &managed);
    refused.extend(secret_options.iter().filter_map(|o| {
        let m = managed
            .iter()
            .find(|m| same_option((&o.section, &o.option), (m.section, m.option)))?;
        Some(format!(
            "spec.secretOptions {}.{}: set by {}; remove it from secretOptions",
            o.section, o.option, m.set_from
        ))
    }));
    refused
}

/// Writes the sections `wiring` names for `service` (its default user name)
/// in `namespace`, with Keystone's API on `keystone_port`.
pub fn render(
    sections: &mut Sections,
    identity: &IdentitySpec,
    wiring: &Wiring,
    service: &str,
    namespace: &str,
    keystone_port: i32,
) {
    let url = identity.keystone_url(namespace, keystone_port);
    let login = [
        ("auth_url", url.as_str()),
        ("auth_type", "password"),
        ("username", identity.username_or(service)),
        ("user_domain_name", SERVICE_DOMAIN),
        ("project_name", SERVICE_PROJECT),
        ("project_domain_name", SERVICE_DOMAIN),
        ("region_name", identity.region_or_default()),
    ];
    for section in wiring.login_sections() {
        let options = sections.entry(section.into()).or_default();
        for (option, value) in login {
            options.insert(option.into(), value.into());
        }
    }
    let authtoken = sections.entry(AUTHTOKEN.into()).or_default();
    authtoken.insert("www_authenticate_uri".into(), url.clone());
    if !identity.memcached_servers.is_empty() {
        authtoken.insert(
            "memcached_servers".into(),
            identity.memcached_servers.join(","),
        );
    }
    if wiring.service_user {
        sections
            .entry(SERVICE_USER.into())
            .or_default()
            .insert("send_service_user_token".into(), "true".into());
    }
    if let Some(section) = wiring.auth_strategy {
        sections
            .entry(section.into())
            .or_default()
            .insert(AUTH_STRATEGY.into(), "keystone".into());
    }
}

/// Makes the catalogue client `section` look its peer up in the region the
/// peer registers in (`peer`, its `spec.identity`), not the service's own.
pub fn find_in_region_of(sections: &mut Sections, section: &str, peer: &IdentitySpec) {
    sections
        .entry(section.into())
        .or_default()
        .insert("region_name".into(), peer.region_or_default().into());
}

/// The password of every login section, from the Secret the spec names.
pub fn secret_envs(identity: &IdentitySpec, wiring: &Wiring) -> Vec<SecretEnv> {
    wiring
        .login_sections()
        .into_iter()
        .filter_map(|section| ratchet_api::oslo::env_name(section, "password"))
        .map(|env| SecretEnv {
            env,
            source: identity.password.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratchet_api::common::SecretKeyRef;

    /// Glance's: service tokens, its middleware chosen by paste flavor.
    const GLANCE: Wiring = Wiring {
        auth_strategy: None,
        service_user: true,
        catalogue_clients: &[],
    };
    /// Ironic's: no service tokens, `[service_catalog]` to find its own API.
    const IRONIC: Wiring = Wiring {
        auth_strategy: Some("DEFAULT"),
        service_user: false,
        catalogue_clients: &["service_catalog"],
    };

    fn identity() -> IdentitySpec {
        IdentitySpec {
            keystone: "keystone".into(),
            password: SecretKeyRef {
                secret_name: "glance-keystone".into(),
                key: "password".into(),
            },
            memcached_servers: vec!["memcached.os.svc:11211".into()],
            ..IdentitySpec::default()
        }
    }

    #[test]
    fn both_sections_log_in_as_the_service_user_by_keystones_service_name() {
        let mut sections = Sections::new();
        render(&mut sections, &identity(), &GLANCE, "glance", "os", 5000);
        let authtoken = &sections["keystone_authtoken"];
        assert_eq!(authtoken["auth_url"], "http://keystone.os.svc:5000");
        assert_eq!(
            authtoken["www_authenticate_uri"],
            "http://keystone.os.svc:5000"
        );
        assert_eq!(authtoken["username"], "glance");
        assert_eq!(authtoken["project_name"], "service");
        assert_eq!(authtoken["region_name"], "RegionOne");
        assert_eq!(authtoken["memcached_servers"], "memcached.os.svc:11211");
        assert!(!authtoken.contains_key("password"));
        let service_user = &sections["service_user"];
        assert_eq!(service_user["send_service_user_token"], "true");
        assert_eq!(service_user["auth_url"], "http://keystone.os.svc:5000");
        assert!(!sections.contains_key("DEFAULT"), "{sections:?}");
        let envs: Vec<String> = secret_envs(&identity(), &GLANCE)
            .into_iter()
            .map(|e| e.env)
            .collect();
        assert_eq!(
            envs,
            [
                "OS_KEYSTONE_AUTHTOKEN__PASSWORD",
                "OS_SERVICE_USER__PASSWORD"
            ]
        );
    }

    #[test]
    fn a_service_without_service_tokens_logs_in_where_it_reads_the_catalogue() {
        let mut sections = Sections::new();
        render(&mut sections, &identity(), &IRONIC, "ironic", "os", 5000);
        assert_eq!(sections["DEFAULT"]["auth_strategy"], "keystone");
        assert!(!sections.contains_key("service_user"), "{sections:?}");
        let catalogue = &sections["service_catalog"];
        assert_eq!(catalogue["auth_url"], "http://keystone.os.svc:5000");
        assert_eq!(catalogue["username"], "ironic");
        assert_eq!(catalogue["auth_type"], "password");
        assert!(!catalogue.contains_key("www_authenticate_uri"));
        let envs: Vec<String> = secret_envs(&identity(), &IRONIC)
            .into_iter()
            .map(|e| e.env)
            .collect();
        assert_eq!(
            envs,
            [
                "OS_KEYSTONE_AUTHTOKEN__PASSWORD",
                "OS_SERVICE_CATALOG__PASSWORD"
            ]
        );
        let extra: Sections = [(
            "DEFAULT".to_string(),
            [("auth_strategy".to_string(), "noauth".to_string())].into(),
        )]
        .into();
        let refused = refusals(Some(&identity()), &IRONIC, &extra, &[]);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].contains("DEFAULT.auth_strategy: set by spec.identity"),
            "{refused:?}"
        );
        assert!(refusals(Some(&identity()), &GLANCE, &extra, &[]).is_empty());
    }

    #[test]
    fn extra_config_and_secret_options_may_not_set_what_identity_sets() {
        let extra: Sections = [(
            "keystone_authtoken".to_string(),
            [("auth-url".to_string(), "http://elsewhere".to_string())].into(),
        )]
        .into();
        let secret = SecretOption {
            section: "service_user".into(),
            option: "password".into(),
            secret_name: "s".into(),
            key: "k".into(),
        };
        let refused = refusals(
            Some(&identity()),
            &GLANCE,
            &extra,
            std::slice::from_ref(&secret),
        );
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(
            refused[0].contains("keystone_authtoken.auth-url"),
            "{refused:?}"
        );
        assert!(refused[1].contains("service_user.password"), "{refused:?}");
        assert!(refusals(None, &GLANCE, &extra, &[secret]).is_empty());
    }
}
