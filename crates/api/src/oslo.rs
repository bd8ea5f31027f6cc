//! What text may reach an oslo.config file (`cinder.conf`, `ironic.conf`): the
//! rules for section names, option names and values, as Rust predicates and as
//! the schema the CRDs carry. One home for the rule: the CRD schema, the
//! admission webhook and the renderer all read it from here.
//!
//! oslo.config reads a file line by line (Python text mode: `\n`, `\r` and
//! `\r\n` all end a line), so a value or name that carries a line break writes
//! lines of its own: a `[database]` header, an option Ratchet sets itself, or
//! options that land in another section. Within a line it reads:
//!
//! - a line starting with `[` as a section header (`[` … `]`),
//! - a line starting with `#` or `;` as a comment,
//! - a line starting with a space or tab as the continuation of the previous value,
//! - otherwise `name = value` or `name: value`, split at the first `=` or `:`,
//!   with the name and the value stripped of (Unicode) whitespace,
//! - section names other than `DEFAULT` case-insensitively.
//!
//! Hence:
//!
//! - **Names** (sections and options) are ASCII letters, digits, `_`, `-` and `.`
//!   only. That is every oslo.config group and option name (Python identifiers,
//!   `-` read as `_`) and every Cinder back end (a DNS label); it excludes `[`, `]`,
//!   `=`, `:`, a leading `#`/`;`, whitespace anywhere and control characters, and,
//!   being ASCII, Unicode case tricks (`\u{212A}` lower-cases to `k`).
//! - **Values** may hold any text on one line: no control character (U+0000–U+001F,
//!   U+007F–U+009F, so no newline, carriage return or tab), no line or paragraph
//!   separator (U+2028, U+2029), and no leading or trailing whitespace (oslo.config
//!   strips it, so the value read would differ from the one written). An empty
//!   value is allowed.
//!
//! oslo.config still interprets two things inside an admitted value, by design and
//! without changing the file's structure: a value both starting and ending with
//! the same quote (`"` or `'`) loses them, and `$name` / `${group.name}` is
//! replaced by another option's value (`$$` is a literal `$`).
//!
//! An option whose value comes from a Secret is not written into the file: it
//! reaches the process as an environment variable, which oslo.config reads
//! before the files (`oslo_config/sources/_environment.py`). It looks up, for
//! the option `dest` of group `group`, only `OS_<group upper-cased>__<dest
//! upper-cased>` (`dest` is the option's name with `-` read as `_`; the group's
//! name is kept as it is, `-` and `.` included; `DEFAULT` for the default
//! group). Hence, for a section and option to take a value from a Secret:
//!
//! - **One variable, one option**: a name holding `__`, a section ending with
//!   `_` or an option starting with `_` or `-` would give two pairs the same
//!   variable (`[a] b__c` and `[a__b] c` are both `OS_A__B__C`); such names are
//!   refused. Sections are words of letters, digits, `-` and `.` joined by
//!   single `_`; options words of letters, digits and `.` joined by single `_`
//!   or `-`.
//! - **`DEFAULT` in capitals**: a file's `[default]` is a group of its own, but
//!   its variable would be `OS_DEFAULT__…`, read by `[DEFAULT]`; other
//!   spellings are refused.
//! - Letter case is otherwise free (the variable is upper-cased either way, and
//!   oslo.config lower-cases the other sections of a file).
//!
//! What no rule here can see: oslo.config reads no deprecated name or group
//! from the environment (an option under its old name stays unset), and it
//! applies `$` substitution to a variable's value as to a file's (a Secret
//! holding a `$` must write `$$`).

use schemars::json_schema;
use serde_json::json;

/// A section or option name, as an RE2 pattern (CEL `matches`).
pub const NAME_PATTERN: &str = "^[A-Za-z0-9_.-]+$";

/// A value, as an RE2 pattern (OpenAPI `pattern`): no control characters or
/// line/paragraph separators, and no whitespace (`\p{Z}` or a control) at
/// either end.
pub const VALUE_PATTERN: &str = r"^([^\p{Z}\p{Cc}]([^\p{Cc}\x{2028}\x{2029}]*[^\p{Z}\p{Cc}])?)?$";

/// At most this many sections in an `extraConfig`, and options in a section.
/// The bounds let the API server afford the CEL rules on the names: without
/// them it estimates the cost of checking every name of every section as
/// beyond its budget and refuses the CRD.
pub const MAX_SECTIONS: u32 = 128;
pub const MAX_OPTIONS: u32 = 512;

/// What a name may hold, for messages.
pub const NAME_RULE: &str = "may contain only ASCII letters, digits, '_', '-' and '.' (oslo.config reads '[', ']', '=', ':', a leading '#' or ';', whitespace and control characters as file structure)";

/// What a value may hold, for messages.
pub const VALUE_RULE: &str = "may not contain control characters (newline, carriage return, tab, ...) or line separators, nor begin or end with whitespace (oslo.config would read further lines or strip it)";

/// Whether `name` is a section or option name oslo.config reads back as written.
pub fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Whether `value` is a value oslo.config reads back, on its line, as written
/// (quotes and `$` substitution aside, see the module documentation).
pub fn is_value(value: &str) -> bool {
    let edge = |c: Option<char>| c.is_none_or(|c| !c.is_whitespace());
    value
        .chars()
        .all(|c| !c.is_control() && c != '\u{2028}' && c != '\u{2029}')
        && edge(value.chars().next())
        && edge(value.chars().next_back())
}

/// The environment variable prefix oslo.config reads options from.
pub const ENV_PREFIX: &str = "OS_";

/// A section whose option may come from a Secret, as an RE2 pattern: words of
/// ASCII letters, digits, `-` and `.`, joined by single `_`.
pub const SECRET_SECTION_PATTERN: &str = "^[A-Za-z0-9.-]+(_[A-Za-z0-9.-]+)*$";

/// An option that may come from a Secret, as an RE2 pattern: words of ASCII
/// letters, digits and `.`, joined by single `_` or `-`.
pub const SECRET_OPTION_PATTERN: &str = "^[A-Za-z0-9.]+([_-][A-Za-z0-9.]+)*$";

/// The CEL rule on a secret option (an object with `section`): `DEFAULT` is
/// spelled so.
pub const SECRET_DEFAULT_RULE: &str =
    "self.section == 'DEFAULT' || !self.section.matches('(?i)^default$')";

/// Why a section cannot take an option from a Secret, for messages.
pub const SECRET_SECTION_RULE: &str = "must be words of ASCII letters, digits, '-' and '.' joined by single '_', and DEFAULT in capitals (oslo.config reads the option from the variable OS_<SECTION>__<OPTION>; a '__' or a '_' at the end would make one variable name two options)";

/// Why an option cannot come from a Secret, for messages.
pub const SECRET_OPTION_RULE: &str = "must be words of ASCII letters, digits and '.' joined by single '_' or '-' (oslo.config reads the option from the variable OS_<SECTION>__<OPTION>, '-' read as '_'; a '__' or a '_' at the start would make one variable name two options)";

/// Whether options of `section` can be set through the environment, one
/// variable for one option.
pub fn is_secret_section(section: &str) -> bool {
    words(section, |b| b == b'-' || b == b'.', |b| b == b'_')
        && (section == "DEFAULT" || !section.eq_ignore_ascii_case("default"))
}

/// Whether `option` can be set through the environment, one variable for one
/// option.
pub fn is_secret_option(option: &str) -> bool {
    words(option, |b| b == b'.', |b| b == b'_' || b == b'-')
}

/// `text` is non-empty words of ASCII letters, digits and `extra` bytes,
/// joined by single `separator` bytes.
fn words(text: &str, extra: impl Fn(u8) -> bool, separator: impl Fn(u8) -> bool) -> bool {
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || extra(b);
    bytes.first().is_some_and(|&b| word(b))
        && bytes.last().is_some_and(|&b| word(b))
        && bytes.iter().all(|&b| word(b) || separator(b))
        && bytes
            .windows(2)
            .all(|w| !(separator(w[0]) && separator(w[1])))
}

/// The environment variable oslo.config reads `[section] option` from, as its
/// environment source names it: `OS_`, the group name upper-cased (a `-` or `.`
/// in it kept), `__`, the option's `dest` upper-cased (its name with `-` read
/// as `_`). `None` when the pair has no variable of its own
/// ([`is_secret_section`], [`is_secret_option`]).
pub fn env_name(section: &str, option: &str) -> Option<String> {
    (is_secret_section(section) && is_secret_option(option)).then(|| {
        format!(
            "{ENV_PREFIX}{}__{}",
            section.to_ascii_uppercase(),
            option.to_ascii_uppercase().replace('-', "_")
        )
    })
}

/// The CEL rule on a map whose keys are names.
fn names_rule(what: &str) -> serde_json::Value {
    json!([{
        "rule": format!("self.all(k, k.matches('{NAME_PATTERN}'))"),
        "message": format!("{what} {NAME_RULE}"),
    }])
}

/// Options of one section: option name → value.
fn options_json() -> serde_json::Value {
    json!({
        "type": "object",
        "maxProperties": MAX_OPTIONS,
        "additionalProperties": { "type": "string", "pattern": VALUE_PATTERN },
        "x-kubernetes-validations": names_rule("option names"),
    })
}

/// The schema of an `extraConfig` field: section → option → value.
pub fn sections_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    json_schema!({
        "type": "object",
        "maxProperties": MAX_SECTIONS,
        "additionalProperties": options_json(),
        "x-kubernetes-validations": names_rule("section names"),
    })
}

/// The schema of one section's options (a back end's `options`).
pub fn options_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    match options_json() {
        serde_json::Value::Object(map) => schemars::Schema::from(map),
        _ => schemars::Schema::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_oslo_identifiers() {
        for ok in ["DEFAULT", "keystone_authtoken", "lvm-1", "a.b", "_x", "9"] {
            assert!(is_name(ok), "{ok}");
        }
        for bad in [
            "",
            "weird]\n[keystone_authtoken",
            "a[b",
            "a]b",
            "a=b",
            "a:b",
            "#x",
            ";x",
            " x",
            "x ",
            "a b",
            "a\tb",
            "a\u{7f}",
            "\u{212A}eystone_authtoken",
            "é",
        ] {
            assert!(!is_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn values_stay_on_their_line_as_written() {
        for ok in [
            "",
            "true",
            "a = b",
            "[database]",
            "#not a comment",
            "x y",
            "\"quoted\"",
            "ünïcode ☃",
            "a\u{a0}b",
        ] {
            assert!(is_value(ok), "{ok:?}");
        }
        for bad in [
            "true\n[database]\nconnection = x",
            "a\rb",
            "a\tb",
            "\u{0}",
            "a\u{7f}",
            "a\u{85}b",
            "a\u{2028}b",
            "a\u{2029}b",
            " leading",
            "trailing ",
            "\u{a0}x",
            "x\u{3000}",
        ] {
            assert!(!is_value(bad), "{bad:?}");
        }
    }

    #[test]
    fn secret_options_name_the_variable_oslo_config_reads() {
        assert_eq!(
            env_name("keystone_authtoken", "password").as_deref(),
            Some("OS_KEYSTONE_AUTHTOKEN__PASSWORD")
        );
        // A group name keeps its '-' and '.'; an option's '-' is read as '_'.
        assert_eq!(
            env_name("lvm-1", "san-password").as_deref(),
            Some("OS_LVM-1__SAN_PASSWORD")
        );
        assert_eq!(env_name("a.b", "x.y").as_deref(), Some("OS_A.B__X.Y"));
        assert_eq!(
            env_name("DEFAULT", "Transport-URL").as_deref(),
            Some("OS_DEFAULT__TRANSPORT_URL")
        );
        for (section, option) in [
            // One variable would name two options (OS_A__B__C).
            ("a__b", "c"),
            ("a", "b__c"),
            ("a", "b-_c"),
            ("a_", "b"),
            ("a", "_b"),
            ("a", "-b"),
            ("_a", "b"),
            // Read from a file as a group of its own, from the environment as DEFAULT.
            ("default", "debug"),
            ("Default", "debug"),
            // Not names at all.
            ("", "x"),
            ("x", ""),
            ("a b", "c"),
            ("a", "b]"),
            ("é", "x"),
        ] {
            assert_eq!(env_name(section, option), None, "[{section}] {option}");
        }
    }

    /// The patterns the schema carries decide as the predicates do.
    mod patterns_agree {
        use proptest::prelude::*;

        use super::super::*;

        fn text() -> impl Strategy<Value = String> {
            let interesting = prop::sample::select(vec![
                ' ', '\t', '\n', '\r', '\u{0}', '\u{7f}', '\u{85}', '\u{a0}', '\u{2028}',
                '\u{2029}', '\u{3000}', '\u{212A}', '[', ']', '=', ':', '#', ';', '_', '-', '.',
                'a', 'Z', '0', 'é',
            ]);
            let any = any::<char>();
            prop::collection::vec(prop_oneof![3 => interesting, 1 => any], 0..8)
                .prop_map(|chars| chars.into_iter().collect())
        }

        proptest! {
            #[test]
            fn name_pattern(s in text()) {
                let re = regex::Regex::new(NAME_PATTERN).expect("pattern compiles");
                prop_assert_eq!(re.is_match(&s), is_name(&s), "{:?}", s);
            }

            #[test]
            fn secret_section_pattern(s in text()) {
                let re = regex::Regex::new(SECRET_SECTION_PATTERN).expect("pattern compiles");
                let default = regex::Regex::new("(?i)^default$").expect("pattern compiles");
                let cel = re.is_match(&s) && (s == "DEFAULT" || !default.is_match(&s));
                prop_assert_eq!(cel, is_secret_section(&s), "{:?}", s);
            }

            #[test]
            fn secret_option_pattern(s in text()) {
                let re = regex::Regex::new(SECRET_OPTION_PATTERN).expect("pattern compiles");
                prop_assert_eq!(re.is_match(&s), is_secret_option(&s), "{:?}", s);
            }

            #[test]
            fn value_pattern(s in text()) {
                let re = regex::Regex::new(VALUE_PATTERN).expect("pattern compiles");
                prop_assert_eq!(re.is_match(&s), is_value(&s), "{:?}", s);
            }
        }
    }
}
