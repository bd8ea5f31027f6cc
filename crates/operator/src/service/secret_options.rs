//! Options whose values come from Secret keys (`spec.secretOptions`, every
//! service): the environment variables oslo.config reads them from, filled by
//! `secretKeyRef`s so the values never enter a ConfigMap, and the rules that
//! keep one owner per option. What a section or option name must be to have a
//! variable of its own is `ratchet_api::oslo`'s rule (schema, webhook and
//! renderer read it from there).

use ratchet_api::common::SecretOption;
use ratchet_api::oslo::{self, SECRET_OPTION_RULE, SECRET_SECTION_RULE};

use super::ini::{ManagedOption, Sections, same_option};
use super::model::SecretEnv;

/// The field every service's secret options are in.
pub const SECRET_OPTIONS: &str = "spec.secretOptions";

fn field(o: &SecretOption) -> String {
    format!("{SECRET_OPTIONS}[{:?}][{:?}]", o.section, o.option)
}

/// Entries of `options` that cannot be set as given, as messages naming the
/// entry: a section or option without a variable of its own, an option Ratchet
/// sets itself through the environment (`environment`), or a second entry for
/// the variable of an earlier one.
pub fn refused(options: &[SecretOption], environment: &[ManagedOption]) -> Vec<String> {
    let mut violations = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for o in options {
        let field = field(o);
        if !oslo::is_secret_section(&o.section) {
            violations.push(format!("{field}: section names {SECRET_SECTION_RULE}"));
        }
        if !oslo::is_secret_option(&o.option) {
            violations.push(format!("{field}: option names {SECRET_OPTION_RULE}"));
        }
        if let Some(m) = environment
            .iter()
            .find(|m| same_option((&o.section, &o.option), (m.section, m.option)))
        {
            violations.push(format!(
                "{field}: set by {}; remove it from {SECRET_OPTIONS}",
                m.set_from
            ));
        }
        let Some(env) = oslo::env_name(&o.section, &o.option) else {
            continue;
        };
        match seen.iter().find(|(seen, _)| *seen == env) {
            Some((_, first)) => violations.push(format!(
                "{field}: the same option as {first} (both are {env}); keep one"
            )),
            None => seen.push((env, field)),
        }
    }
    violations
}

/// The variables of the entries that have one, sorted by name (the first entry
/// of a variable wins; [`refused`] refuses the others).
pub fn environment(options: &[SecretOption]) -> Vec<SecretEnv> {
    let mut env: Vec<SecretEnv> = Vec::new();
    for o in options {
        if let Some(name) = oslo::env_name(&o.section, &o.option)
            && !env.iter().any(|e| e.env == name)
        {
            env.push(SecretEnv {
                env: name,
                source: o.source(),
            });
        }
    }
    env.sort_by(|a, b| a.env.cmp(&b.env));
    env
}

/// Where `[section] option` comes from when a secret option sets it, for messages.
pub fn set_by(options: &[SecretOption], section: &str, option: &str) -> Option<String> {
    let o = options
        .iter()
        .find(|o| same_option((&o.section, &o.option), (section, option)))?;
    Some(format!(
        "{} (Secret {:?}, key {:?})",
        field(o),
        o.secret_name,
        o.key
    ))
}

/// Entries of `extra` (a resource's `extraConfig`) that name an option set from
/// a Secret, as messages naming the field: the file would hold a second value
/// the environment overrides.
pub fn extra_config_conflicts(options: &[SecretOption], extra: &Sections) -> Vec<String> {
    extra
        .iter()
        .flat_map(|(section, entries)| entries.keys().map(move |option| (section, option)))
        .filter_map(|(section, option)| {
            let by = set_by(options, section, option)?;
            Some(format!(
                "spec.extraConfig.{section}.{option}: set by {by}; remove it from extraConfig"
            ))
        })
        .collect()
}

/// What the renderer refuses of a service `S`'s secret options: the entries
/// [`refused`] names, and the `extraConfig` entries that would set one of them
/// in the file too. Nothing is rendered then.
pub fn violations<S: super::contract::OpenStackService>(
    options: &[SecretOption],
    extra: &Sections,
) -> Vec<String> {
    let mut violations = refused(options, S::ENVIRONMENT_OPTIONS);
    violations.extend(extra_config_conflicts(options, extra));
    violations
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::service::ini::{DATABASE_CONNECTION, TRANSPORT_URL};

    fn option(section: &str, option: &str, secret: &str) -> SecretOption {
        SecretOption {
            section: section.into(),
            option: option.into(),
            secret_name: secret.into(),
            key: "value".into(),
        }
    }

    #[test]
    fn each_option_becomes_the_variable_oslo_config_reads_sorted() {
        let env = environment(&[
            option("lvm-1", "san-password", "lvm"),
            option("keystone_authtoken", "password", "ks"),
        ]);
        let names: Vec<&str> = env.iter().map(|e| e.env.as_str()).collect();
        assert_eq!(
            names,
            ["OS_KEYSTONE_AUTHTOKEN__PASSWORD", "OS_LVM-1__SAN_PASSWORD"]
        );
        assert_eq!(env[0].source.secret_name, "ks");
        assert!(
            refused(
                &[option("keystone_authtoken", "password", "ks")],
                &[DATABASE_CONNECTION]
            )
            .is_empty()
        );
    }

    #[test]
    fn inexpressible_repeated_and_managed_options_are_refused_naming_the_entry() {
        let options = [
            option("a__b", "c", "s"),
            option("DEFAULT", "_x", "s"),
            option("default", "debug", "s"),
            option("Database", "Connection", "s"),
            option("DEFAULT", "san_password", "s"),
            option("DEFAULT", "SAN-password", "t"),
        ];
        let v = refused(&options, &[DATABASE_CONNECTION, TRANSPORT_URL]);
        assert_eq!(v.len(), 5, "{v:?}");
        assert!(v[0].starts_with("spec.secretOptions[\"a__b\"][\"c\"]: section names must be"));
        assert!(v[1].starts_with("spec.secretOptions[\"DEFAULT\"][\"_x\"]: option names must be"));
        assert!(v[2].starts_with("spec.secretOptions[\"default\"][\"debug\"]: section names"));
        assert_eq!(
            v[3],
            "spec.secretOptions[\"Database\"][\"Connection\"]: set by spec.database (a Secret); remove it from spec.secretOptions"
        );
        assert_eq!(
            v[4],
            "spec.secretOptions[\"DEFAULT\"][\"SAN-password\"]: the same option as spec.secretOptions[\"DEFAULT\"][\"san_password\"] (both are OS_DEFAULT__SAN_PASSWORD); keep one"
        );
        // Only the expressible ones have a variable, the first of a repeat winning.
        let env = environment(&options);
        let names: Vec<(&str, &str)> = env
            .iter()
            .map(|e| (e.env.as_str(), e.source.secret_name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("OS_DATABASE__CONNECTION", "s"),
                ("OS_DEFAULT__SAN_PASSWORD", "s")
            ]
        );
    }

    #[test]
    fn extra_config_may_not_name_an_option_set_from_a_secret() {
        let options = [option("keystone_authtoken", "password", "ks")];
        let extra = Sections::from([
            (
                "Keystone_Authtoken".to_string(),
                BTreeMap::from([
                    ("password".to_string(), "plain".to_string()),
                    ("username".to_string(), "cinder".to_string()),
                ]),
            ),
            (
                "DEFAULT".to_string(),
                BTreeMap::from([("password".to_string(), "x".to_string())]),
            ),
        ]);
        assert_eq!(
            extra_config_conflicts(&options, &extra),
            [
                "spec.extraConfig.Keystone_Authtoken.password: set by spec.secretOptions[\"keystone_authtoken\"][\"password\"] (Secret \"ks\", key \"value\"); remove it from extraConfig"
            ]
        );
    }
}
