//! oslo.config files: sections of options, `[DEFAULT]` first, the rest in name
//! order, so a rendering is deterministic and its hash changes only with content.

use std::collections::BTreeMap;
use std::fmt::Write;

pub type Sections = BTreeMap<String, BTreeMap<String, String>>;

/// Adds `extra` (a resource's `extraConfig`) over `sections`, option by option.
pub fn overlay(sections: &mut Sections, extra: &Sections) {
    for (section, options) in extra {
        sections
            .entry(section.clone())
            .or_default()
            .extend(options.clone());
    }
}

/// The file: `header` lines as comments, then the sections.
pub fn write(header: &[String], mut sections: Sections) -> String {
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
    out
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
        overlay(&mut sections, &extra);
        assert_eq!(
            write(&["hello".into()], sections),
            "# hello\n\n[DEFAULT]\ndebug = true\n\n[zeta]\na = 1\n"
        );
    }

    #[test]
    fn an_empty_default_section_is_still_written() {
        assert_eq!(write(&[], Sections::new()), "\n[DEFAULT]\n");
    }
}
