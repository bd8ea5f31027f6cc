//! oslo.config files: sections of options, `[DEFAULT]` first, the rest in name
//! order, so a rendering is deterministic and its hash changes only with content.

use std::collections::BTreeMap;
use std::fmt::Write;

use ratchet_api::oslo::{self, NAME_RULE, VALUE_RULE};

pub type Sections = BTreeMap<String, BTreeMap<String, String>>;

/// An option Ratchet sets itself, outside the rendered file. `extraConfig`
/// may not name it: oslo.config lets the environment override the file, so a
/// copy in the file is either ignored (a Secret's value, in plain sight) or
/// outlives Ratchet's own setting (a pin left in force after unpinning).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ManagedOption {
    pub section: &'static str,
    pub option: &'static str,
    /// Where the value comes from instead, for the refusal's message.
    pub set_from: &'static str,
}

impl ManagedOption {
    /// Whether `section`/`option` of a file names this option (oslo.config
    /// treats `-` and `_` in option names alike; case is not trusted either).
    pub fn named_by(&self, section: &str, option: &str) -> bool {
        same_option((section, option), (self.section, self.option))
    }
}

/// Whether two section/option pairs name one option (oslo.config treats `-`
/// and `_` in option names alike; case is not trusted either).
pub fn same_option(a: (&str, &str), b: (&str, &str)) -> bool {
    let normal = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    a.0.eq_ignore_ascii_case(b.0) && normal(a.1) == normal(b.1)
}

pub const DATABASE_CONNECTION: ManagedOption = ManagedOption {
    section: "database",
    option: "connection",
    set_from: "spec.database (a Secret)",
};
pub const TRANSPORT_URL: ManagedOption = ManagedOption {
    section: "DEFAULT",
    option: "transport_url",
    set_from: "spec.transport (a Secret)",
};

/// Entries of `extra` that name a managed option, as messages naming the field.
pub fn managed_option_violations(extra: &Sections, managed: &[ManagedOption]) -> Vec<String> {
    extra
        .iter()
        .flat_map(|(section, options)| options.keys().map(move |option| (section, option)))
        .filter_map(|(section, option)| {
            let m = managed.iter().find(|m| m.named_by(section, option))?;
            Some(format!(
                "spec.extraConfig.{section}.{option}: set by {}; remove it from extraConfig",
                m.set_from
            ))
        })
        .collect()
}

/// Entries of `sections` (the resource's field `field`, e.g. `spec.extraConfig`)
/// that oslo.config would not read back as written (the rules are
/// [`ratchet_api::oslo`]'s), as messages naming the entry. Values are not
/// quoted in the messages: they may be meant to be private.
pub fn unsafe_entries(field: &str, sections: &Sections) -> Vec<String> {
    let mut violations = Vec::new();
    for (section, options) in sections {
        if !oslo::is_name(section) {
            violations.push(format!("{field}[{section:?}]: section names {NAME_RULE}"));
        }
        violations.extend(unsafe_options(&format!("{field}[{section:?}]"), options));
    }
    violations
}

/// Entries of one section's `options` (the field `field`) that oslo.config would
/// not read back as written.
pub fn unsafe_options(field: &str, options: &BTreeMap<String, String>) -> Vec<String> {
    let mut violations = Vec::new();
    for (option, value) in options {
        if !oslo::is_name(option) {
            violations.push(format!("{field}[{option:?}]: option names {NAME_RULE}"));
        }
        if !oslo::is_value(value) {
            violations.push(format!("{field}[{option:?}]: values {VALUE_RULE}"));
        }
    }
    violations
}

/// Adds `extra` (a resource's `extraConfig`) over `sections`, option by
/// option, leaving out the `managed` ones (refused with a reason elsewhere).
pub fn overlay(sections: &mut Sections, extra: &Sections, managed: &[ManagedOption]) {
    for (section, options) in extra {
        let kept = options
            .iter()
            .filter(|(option, _)| !managed.iter().any(|m| m.named_by(section, option)))
            .map(|(option, value)| (option.clone(), value.clone()));
        sections.entry(section.clone()).or_default().extend(kept);
    }
}

/// The file: `header` lines as comments, then the sections.
///
/// Refuses, with the entries it cannot write, anything oslo.config would not
/// read back as given (a name or value that would open a section, start
/// another line or be stripped): the last guard, whatever the service checked
/// before calling it.
pub fn write(header: &[String], mut sections: Sections) -> Result<String, Vec<String>> {
    let mut refused = unsafe_entries("configuration", &sections);
    refused.extend(
        header
            .iter()
            .filter(|line| !oslo::is_value(line))
            .map(|line| format!("configuration header {line:?}: lines {VALUE_RULE}")),
    );
    if !refused.is_empty() {
        return Err(refused);
    }
    let mut out = String::new();
    for line in header {
        let _ = writeln!(out, "# {line}");
    }
    let default = sections.remove("DEFAULT").unwrap_or_default();
    for (section, options) in std::iter::once(("DEFAULT".to_string(), default)).chain(sections) {
        let _ = writeln!(out, "\n[{section}]");
        for (key, value) in options {
            let _ = writeln!(out, "{key} = {value}");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_first_then_by_name_and_extra_overrides() {
        let mut sections = Sections::new();
        sections
            .entry("zeta".into())
            .or_default()
            .insert("a".into(), "1".into());
        sections
            .entry("DEFAULT".into())
            .or_default()
            .insert("debug".into(), "false".into());
        let extra = Sections::from([(
            "DEFAULT".to_string(),
            BTreeMap::from([("debug".to_string(), "true".to_string())]),
        )]);
        overlay(&mut sections, &extra, &[]);
        assert_eq!(
            write(&["hello".into()], sections).as_deref(),
            Ok("# hello\n\n[DEFAULT]\ndebug = true\n\n[zeta]\na = 1\n")
        );
    }

    #[test]
    fn managed_options_are_refused_and_never_rendered() {
        let extra = Sections::from([
            (
                "DEFAULT".to_string(),
                BTreeMap::from([
                    ("Pin-Release-Version".to_string(), "2026.1".to_string()),
                    ("debug".to_string(), "true".to_string()),
                ]),
            ),
            (
                "database".to_string(),
                BTreeMap::from([("connection".to_string(), "mysql://x".to_string())]),
            ),
        ]);
        let pin = ManagedOption {
            section: "DEFAULT",
            option: "pin_release_version",
            set_from: "Ratchet, during an upgrade's pinned roll only",
        };
        let managed = [DATABASE_CONNECTION, pin];
        assert_eq!(
            managed_option_violations(&extra, &managed),
            [
                "spec.extraConfig.DEFAULT.Pin-Release-Version: set by Ratchet, during an upgrade's pinned roll only; remove it from extraConfig",
                "spec.extraConfig.database.connection: set by spec.database (a Secret); remove it from extraConfig",
            ]
        );
        let mut sections = Sections::new();
        overlay(&mut sections, &extra, &managed);
        assert_eq!(
            write(&[], sections).as_deref(),
            Ok("\n[DEFAULT]\ndebug = true\n\n[database]\n")
        );
        assert!(managed_option_violations(&extra, &[TRANSPORT_URL]).is_empty());
    }

    #[test]
    fn an_empty_default_section_is_still_written() {
        assert_eq!(write(&[], Sections::new()).as_deref(), Ok("\n[DEFAULT]\n"));
    }

    fn one(section: &str, option: &str, value: &str) -> Sections {
        Sections::from([(
            section.to_string(),
            BTreeMap::from([(option.to_string(), value.to_string())]),
        )])
    }

    #[test]
    fn hostile_names_and_values_are_refused_naming_the_entry() {
        let injected = one(
            "DEFAULT",
            "debug",
            "true\n[database]\nconnection = mysql://x",
        );
        assert_eq!(
            unsafe_entries("spec.extraConfig", &injected),
            [format!(
                "spec.extraConfig[\"DEFAULT\"][\"debug\"]: values {VALUE_RULE}"
            )]
        );
        let section = one("weird]\n[keystone_authtoken", "a", "b");
        assert_eq!(
            unsafe_entries("spec.extraConfig", &section),
            [format!(
                "spec.extraConfig[\"weird]\\n[keystone_authtoken\"]: section names {NAME_RULE}"
            )]
        );
        let option = one("DEFAULT", "a = b\r", " padded");
        let v = unsafe_entries("spec.extraConfig", &option);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].starts_with("spec.extraConfig[\"DEFAULT\"][\"a = b\\r\"]: option names"));
        assert!(v[1].contains("values may not"), "{v:?}");
        assert!(
            !v.iter().any(|m| m.contains("padded")),
            "values are not quoted"
        );
        assert!(unsafe_entries("f", &one("DEFAULT", "debug", "true")).is_empty());
    }

    #[test]
    fn the_writer_refuses_what_it_cannot_write_back() {
        for sections in [
            one("DEFAULT", "debug", "true\n[database]"),
            one("a]\n[b", "x", "y"),
            one("DEFAULT", "#x", "y"),
            one("DEFAULT", "x", "y "),
        ] {
            assert!(write(&[], sections.clone()).is_err(), "{sections:?}");
        }
        assert!(write(&["a\n[database]".into()], Sections::new()).is_err());
    }
}
