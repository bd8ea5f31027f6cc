//! A service's authentication through Keystone, rendered the same way for
//! every service from `spec.identity` ([`IdentitySpec`]): keystonemiddleware's
//! `[keystone_authtoken]` (how it validates each request's token) and
//! `[service_user]` (the token it sends along on calls to other services).
//! The service user's password reaches the processes only as the variables
//! oslo.config reads, from the Secret the spec names.

use ratchet_api::common::{SecretKeyRef, SecretOption};
use ratchet_api::identity::{IdentitySpec, KEYSTONE_API_PORT, SERVICE_DOMAIN, SERVICE_PROJECT};

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

/// What a service's registration in Keystone makes true: its service user
/// with the password from its Secret, the catalogue entry of its type and
/// its public and internal endpoints in the region (see `registration.py`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The Keystone resource, in the service's namespace.
    pub keystone: String,
    pub username: String,
    pub password: SecretKeyRef,
    pub region: String,
    /// The catalogue entry's name: the resource's, unique in its namespace,
    /// so two resources never move each other's endpoints.
    pub service_name: String,
    /// The catalogue type (`image`, `block-storage`, `baremetal`).
    pub service_type: &'static str,
    /// Both endpoints' URL: the service's API by its Service's DNS name.
    pub endpoint: String,
}

impl Registration {
    /// For the resource `name` of `service`, of catalogue type
    /// `service_type`, whose API is `endpoint`.
    pub fn new(
        identity: &IdentitySpec,
        service: &'static str,
        name: &str,
        service_type: &'static str,
        endpoint: String,
    ) -> Registration {
        Registration {
            keystone: identity.keystone.clone(),
            username: identity.username_or(service).to_string(),
            password: identity.password.clone(),
            region: identity.region_or_default().to_string(),
            service_name: name.to_string(),
            service_type,
            endpoint,
        }
    }

    /// `user glance, service image`, for messages.
    pub fn summary(&self) -> String {
        format!(
            "user {}, service {} ({})",
            self.username, self.service_name, self.service_type
        )
    }

    /// The Job's command: the script in `config_dir` (the ConfigMap), told
    /// where everything is; the passwords come as variables.
    pub fn command(
        &self,
        config_dir: &str,
        namespace: &str,
        admin: &SecretKeyRef,
        owner: &str,
    ) -> Vec<String> {
        let secret = |s: &SecretKeyRef| format!("{}/{}", s.secret_name, s.key);
        let mut command = vec![
            "python3".to_string(),
            format!("{config_dir}/{REGISTRATION_SCRIPT}"),
        ];
        for (option, value) in [
            (
                "--keystone",
                format!(
                    "http://{}.{namespace}.svc:{KEYSTONE_API_PORT}",
                    self.keystone
                ),
            ),
            ("--admin-secret", secret(admin)),
            ("--user", self.username.clone()),
            ("--password-secret", secret(&self.password)),
            ("--region", self.region.clone()),
            ("--service-name", self.service_name.clone()),
            ("--service-type", self.service_type.to_string()),
            ("--endpoint", self.endpoint.clone()),
            ("--owner", owner.to_string()),
        ] {
            command.push(option.to_string());
            command.push(value);
        }
        command
    }
}

/// The registration script's key in the ConfigMap (not `*.conf`).
pub const REGISTRATION_SCRIPT: &str = "ratchet-registration.py";
const REGISTRATION_TEXT: &str = include_str!("registration.py");

/// The ConfigMap entry holding the registration script.
pub fn registration_script() -> (&'static str, &'static str) {
    (REGISTRATION_SCRIPT, REGISTRATION_TEXT)
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
    fn the_registration_names_everything_but_the_passwords() {
        let registration = Registration::new(
            &identity(),
            "glance",
            "glance",
            "image",
            "http://glance.os.svc:9292".into(),
        );
        let admin = SecretKeyRef {
            secret_name: "keystone-admin".into(),
            key: "password".into(),
        };
        let command = registration.command("/etc/glance", "os", &admin, "glance os/glance");
        let option = |name: &str| {
            command
                .iter()
                .position(|a| a == name)
                .and_then(|i| command.get(i + 1))
                .map(String::as_str)
        };
        assert_eq!(command[1], "/etc/glance/ratchet-registration.py");
        assert_eq!(option("--keystone"), Some("http://keystone.os.svc:5000"));
        assert_eq!(option("--admin-secret"), Some("keystone-admin/password"));
        assert_eq!(
            option("--password-secret"),
            Some("glance-keystone/password")
        );
        assert_eq!(option("--user"), Some("glance"));
        assert_eq!(option("--region"), Some("RegionOne"));
        assert_eq!(option("--service-type"), Some("image"));
        assert_eq!(option("--endpoint"), Some("http://glance.os.svc:9292"));
        assert_eq!(option("--owner"), Some("glance os/glance"));
        assert_eq!(
            registration.summary(),
            "user glance, service glance (image)"
        );
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
