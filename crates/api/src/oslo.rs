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
            fn value_pattern(s in text()) {
                let re = regex::Regex::new(VALUE_PATTERN).expect("pattern compiles");
                prop_assert_eq!(re.is_match(&s), is_value(&s), "{:?}", s);
            }
        }
    }
}
