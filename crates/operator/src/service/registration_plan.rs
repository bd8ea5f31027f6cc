//! What a service's registration in Keystone makes true, as data: the
//! service user, catalogue entry and endpoints a model asks for, the
//! registration Job's command, and the script it runs (`registration.py`,
//! shipped in the service's ConfigMap). The Job itself and its inputs are
//! `registration.rs`'s; docs/identity.md says why a Job.

use ratchet_api::common::SecretKeyRef;
use ratchet_api::identity::{IdentitySpec, KEYSTONE_API_PORT};

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
    /// The roles its user holds in the service project: `service` (what
    /// validating tokens and calling peers as a service takes), and what a
    /// peer's API asks beyond it (see [`Registration::with_roles`]).
    pub roles: &'static [&'static str],
}

/// The role every service user holds in the service project.
pub const SERVICE_ROLES: &[&str] = &["service"];

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
            roles: SERVICE_ROLES,
        }
    }

    /// The same registration, its user holding `roles` (`service` among them).
    pub fn with_roles(self, roles: &'static [&'static str]) -> Registration {
        Registration { roles, ..self }
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
        for role in self.roles {
            command.push("--role".into());
            command.push(role.to_string());
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

    fn identity() -> IdentitySpec {
        IdentitySpec {
            keystone: "keystone".into(),
            password: SecretKeyRef {
                secret_name: "glance-keystone".into(),
                key: "password".into(),
            },
            ..IdentitySpec::default()
        }
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
        let roles = |command: &[String]| {
            (command.windows(2))
                .filter(|pair| pair[0] == "--role")
                .map(|pair| pair[1].clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(roles(&command), ["service"]);
        let widened = registration.with_roles(&["service", "admin"]);
        let command = widened.command("/etc/glance", "os", &admin, "glance os/glance");
        assert_eq!(roles(&command), ["service", "admin"]);
    }
}
