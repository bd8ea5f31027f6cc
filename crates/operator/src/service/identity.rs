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

/// Options both sections hold: a password login of the service user.
const LOGIN: &[&str] = &[
    "auth_url",
    "auth_type",
    "username",
    "user_domain_name",
    "project_name",
    "project_domain_name",
    "region_name",
];

/// Every option Ratchet sets when `spec.identity` is declared; `extraConfig`
/// and `secretOptions` may not name them then.
pub fn managed_options() -> Vec<ManagedOption> {
    let mut managed = Vec::new();
    for section in [AUTHTOKEN, SERVICE_USER] {
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
    managed.push(ManagedOption {
        section: SERVICE_USER,
        option: "send_service_user_token",
        set_from: SET_FROM,
    });
    managed
}

/// Why the spec cannot be rendered with its identity: `extraConfig` or
/// `secretOptions` naming an option `spec.identity` sets.
pub fn refusals(
    identity: Option<&IdentitySpec>,
    extra_config: &Sections,
    secret_options: &[SecretOption],
) -> Vec<String> {
    if identity.is_none() {
        return Vec::new();
    }
    let managed = managed_options();
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

/// Writes both sections for `service` (its default user name) in
/// `namespace`, with Keystone's API on `keystone_port`.
pub fn render(
    sections: &mut Sections,
    identity: &IdentitySpec,
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
    for section in [AUTHTOKEN, SERVICE_USER] {
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
    sections
        .entry(SERVICE_USER.into())
        .or_default()
        .insert("send_service_user_token".into(), "true".into());
}

/// The password of both sections, from the Secret the spec names.
pub fn secret_envs(identity: &IdentitySpec) -> Vec<SecretEnv> {
    [AUTHTOKEN, SERVICE_USER]
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
        render(&mut sections, &identity(), "glance", "os", 5000);
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
        let envs: Vec<String> = secret_envs(&identity())
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
        let refused = refusals(Some(&identity()), &extra, std::slice::from_ref(&secret));
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(
            refused[0].contains("keystone_authtoken.auth-url"),
            "{refused:?}"
        );
        assert!(refused[1].contains("service_user.password"), "{refused:?}");
        assert!(refusals(None, &extra, &[secret]).is_empty());
    }
}
