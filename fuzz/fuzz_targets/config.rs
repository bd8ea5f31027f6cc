//! Configuration rendering with arbitrary `extraConfig`, back ends and secret
//! options: the renderer either refuses (exactly when an entry breaks the rules
//! of `ratchet_api::oslo`, or a secret option has no variable of its own, shares
//! one, names an option Ratchet sets itself, or is set in the file too) or
//! writes a file that, read as oslo.config reads it, holds exactly the given
//! sections and options: no injected section, no option moved into another
//! section, no option Ratchet sets itself, none set from a Secret.
#![no_main]

use std::collections::{BTreeMap, BTreeSet};

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use ratchet_api::common::SecretOption;
use ratchet_api::oslo::{is_name, is_value};
use ratchet_fuzz::{name, oslo_value, read_oslo, text};
use ratchet_operator::service::ini::{self, Sections};
use ratchet_services::cinder::v1beta1::{CinderSpec, VolumeBackend};
use ratchet_services::ironic::v1alpha1::IronicSpec;
use serde_json::json;

fn options(u: &mut Unstructured) -> Result<BTreeMap<String, String>> {
    let mut options = BTreeMap::new();
    for _ in 0..u.int_in_range(0..=3)? {
        let value = if u.ratio(1, 2)? {
            "true".to_string()
        } else {
            text(u)?
        };
        options.insert(name(u)?, value);
    }
    Ok(options)
}

fn sections(u: &mut Unstructured) -> Result<Sections> {
    let mut sections = Sections::new();
    for _ in 0..u.int_in_range(0..=3)? {
        sections.insert(name(u)?, options(u)?);
    }
    Ok(sections)
}

fn unsafe_sections(sections: &Sections) -> bool {
    sections.iter().any(|(section, options)| {
        !is_name(section) || options.iter().any(|(o, v)| !is_name(o) || !is_value(v))
    })
}

/// Which service renders: Ironic also sets the pin itself.
#[derive(Clone, Copy, PartialEq)]
enum Service {
    Cinder,
    Ironic,
}

/// Whether oslo.config would read this section/option as one Ratchet sets
/// itself for `service` (written out here, not taken from the code under test).
fn managed(service: Service, section: &str, option: &str) -> bool {
    let option = option.to_ascii_lowercase().replace('-', "_");
    let ironic_owns = [
        ("deploy", "http_root"),
        ("pxe", "tftp_root"),
        ("api", "api_workers"),
    ];
    (service == Service::Ironic
        && ironic_owns
            .iter()
            .any(|&(s, o)| section.eq_ignore_ascii_case(s) && option == o))
        || (section.eq_ignore_ascii_case("database") && option == "connection")
        || (section.eq_ignore_ascii_case("DEFAULT")
            && (option == "transport_url"
                || (service == Service::Ironic && option == "pin_release_version")
                || (service == Service::Cinder
                    && (option == "host" || option == "api_paste_config"))))
}

/// Whether two section/option pairs are one option to oslo.config (written out
/// here, not taken from the code under test).
fn same(a: (&str, &str), b: (&str, &str)) -> bool {
    let normal = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    a.0.eq_ignore_ascii_case(b.0) && normal(a.1) == normal(b.1)
}

/// The variable oslo.config reads `[section] option` from, if it is one
/// variable for one option: words joined by single separators ('_' in a
/// section; '_' or '-' in an option), DEFAULT in capitals.
fn variable(section: &str, option: &str) -> Option<String> {
    let words = |s: &str, extra: &[u8], separators: &[u8]| {
        let b = s.as_bytes();
        let word = |c: &u8| c.is_ascii_alphanumeric() || extra.contains(c);
        b.first().is_some_and(word)
            && b.last().is_some_and(word)
            && b.iter().all(|c| word(c) || separators.contains(c))
            && b.windows(2)
                .all(|w| !(separators.contains(&w[0]) && separators.contains(&w[1])))
    };
    let section_ok = words(section, b"-.", b"_")
        && (section == "DEFAULT" || !section.eq_ignore_ascii_case("default"));
    (section_ok && words(option, b".", b"_-")).then(|| {
        format!(
            "OS_{}__{}",
            section.to_ascii_uppercase(),
            option.to_ascii_uppercase().replace('-', "_")
        )
    })
}

/// A few secret options, often naming a section or option the spec has.
fn secret_options(u: &mut Unstructured, known: &[(String, String)]) -> Result<Vec<SecretOption>> {
    let mut options = Vec::new();
    for _ in 0..u.int_in_range(0..=2)? {
        let (section, option) = if !known.is_empty() && u.ratio(1, 2)? {
            u.choose(known)?.clone()
        } else {
            (name(u)?, name(u)?)
        };
        options.push(SecretOption {
            section,
            option,
            secret_name: "s".into(),
            key: "k".into(),
        });
    }
    Ok(options)
}

/// Whether the secret options break a rule, given the file entries of the spec
/// and the options Ratchet sets through the environment.
fn secret_options_break_rules(
    options: &[SecretOption],
    file: &[(String, String)],
    environment: &[(&str, &str)],
) -> bool {
    let mut seen = BTreeSet::new();
    options.iter().any(|o| {
        let pair = (o.section.as_str(), o.option.as_str());
        match variable(pair.0, pair.1) {
            None => true,
            Some(v) => {
                !seen.insert(v)
                    || environment.iter().any(|&m| same(pair, m))
                    || file.iter().any(|(s, f)| same(pair, (s, f)))
            }
        }
    })
}

/// The file's entries as (section, option) pairs.
fn entries(sections: &Sections) -> Vec<(String, String)> {
    sections
        .iter()
        .flat_map(|(s, options)| options.keys().map(move |o| (s.clone(), o.clone())))
        .collect()
}

/// `text` read back holds exactly `expected` (values as oslo.config reads them).
fn reads_back_as(text: &str, expected: &Sections) {
    let read = read_oslo(text).unwrap_or_else(|e| panic!("unreadable file ({e}):\n{text}"));
    let expected: BTreeMap<String, BTreeMap<String, Vec<String>>> = expected
        .iter()
        .map(|(s, options)| {
            let options = options
                .iter()
                .map(|(o, v)| (o.clone(), vec![oslo_value(v)]))
                .collect();
            (s.clone(), options)
        })
        .collect();
    let mut expected = expected;
    expected.entry("DEFAULT".into()).or_default();
    assert_eq!(
        read, expected,
        "the file reads otherwise than written:\n{text}"
    );
}

fn fuzz_writer(u: &mut Unstructured) -> Result<()> {
    let sections = sections(u)?;
    let header = vec![text(u)?];
    match ini::write(&header, sections.clone()) {
        Ok(text) => {
            assert!(!unsafe_sections(&sections) && is_value(&header[0]));
            reads_back_as(&text, &sections);
        }
        Err(refused) => {
            assert!(!refused.is_empty());
            assert!(unsafe_sections(&sections) || !is_value(&header[0]));
        }
    }
    Ok(())
}

fn base() -> serde_json::Value {
    json!({
        "openStackRelease": "2026.1",
        "image": { "repository": "cinder", "reference": { "tag": "2026.1" } },
        "database": { "secretName": "db", "key": "connection" },
        "transport": { "secretName": "mq", "key": "url" },
    })
}

/// What a rendered file may hold beyond the resource's own entries.
const OWN: [(&str, &str); 10] = [
    ("DEFAULT", "enabled_backends"),
    ("deploy", "http_root"),
    ("pxe", "tftp_root"),
    ("api", "api_workers"),
    ("DEFAULT", "use_stderr"),
    ("DEFAULT", "api_paste_config"),
    ("DEFAULT", "resource_query_filters_file"),
    ("oslo_concurrency", "lock_path"),
    ("", "volume_backend_name"),
    ("", "backend_host"),
];

fn check_rendered(
    service: Service,
    text: &str,
    extra: &Sections,
    backends: &[VolumeBackend],
    secret: &[SecretOption],
) {
    let read = read_oslo(text).unwrap_or_else(|e| panic!("unreadable file ({e}):\n{text}"));
    for (section, options) in &read {
        for option in options.keys() {
            assert!(
                !secret
                    .iter()
                    .any(|o| same((&o.section, &o.option), (section, option))),
                "[{section}] {option} is set from a Secret but written:\n{text}"
            );
        }
    }
    let backend_names: BTreeSet<&str> = backends.iter().map(|b| b.name.as_str()).collect();
    for (section, options) in &read {
        for (option, values) in options {
            assert_eq!(
                values.len(),
                1,
                "[{section}] {option} written twice:\n{text}"
            );
            let own = OWN.iter().any(|&(s, o)| {
                o == option.as_str()
                    && (s == section.as_str()
                        || (s.is_empty() && backend_names.contains(section.as_str())))
            });
            // Managed options are Ratchet's: in the file only when Ratchet writes them.
            assert!(
                own || !managed(service, section, option),
                "[{section}] {option} in the file:\n{text}"
            );
            let from_extra = extra.get(section).and_then(|o| o.get(option));
            let from_backend = backends
                .iter()
                .find(|b| b.name == *section)
                .and_then(|b| b.options.get(option));
            match (from_extra, from_backend) {
                (Some(v), _) => assert_eq!(values[0], oslo_value(v), "[{section}] {option}"),
                (None, Some(v)) if !own => assert_eq!(values[0], oslo_value(v)),
                _ => assert!(own, "[{section}] {option} comes from nowhere:\n{text}"),
            }
        }
    }
    // Every entry given is there (managed ones left out).
    for (section, options) in extra {
        for (option, value) in options {
            if !managed(service, section, option) {
                let read = read.get(section).and_then(|o| o.get(option));
                assert_eq!(
                    read,
                    Some(&vec![oslo_value(value)]),
                    "[{section}] {option} lost"
                );
            }
        }
    }
}

fn fuzz_cinder(u: &mut Unstructured) -> Result<()> {
    let Ok(mut spec) = serde_json::from_value::<CinderSpec>(base()) else {
        return Ok(());
    };
    spec.extra_config = sections(u)?;
    for _ in 0..u.int_in_range(0..=2)? {
        spec.volume_backends.push(VolumeBackend {
            name: name(u)?,
            options: options(u)?,
            ..VolumeBackend::default()
        });
    }
    let mut file = entries(&spec.extra_config);
    for b in &spec.volume_backends {
        file.extend(b.options.keys().map(|o| (b.name.clone(), o.clone())));
    }
    spec.secret_options = secret_options(u, &file)?;
    let environment = [
        ("database", "connection"),
        ("DEFAULT", "transport_url"),
        ("DEFAULT", "enabled_backends"),
        ("DEFAULT", "host"),
        ("DEFAULT", "api_paste_config"),
    ];
    let breaks_rules = unsafe_sections(&spec.extra_config)
        || spec.volume_backends.iter().any(|b| {
            !is_name(&b.name)
                || b.options.iter().any(|(o, v)| {
                    !is_name(o) || !is_value(v) || managed(Service::Cinder, &b.name, o)
                })
        })
        || secret_options_break_rules(&spec.secret_options, &file, &environment);
    let rendered = ratchet_services::cinder::config::render("ns", "c", &spec);
    match &rendered {
        Ok(text) => {
            assert!(!breaks_rules, "rendered what the rules refuse:\n{text}");
            // Back ends by name, the first of a repeated name winning.
            let mut first = Vec::<VolumeBackend>::new();
            for b in &spec.volume_backends {
                if !first.iter().any(|f| f.name == b.name) {
                    first.push(b.clone());
                }
            }
            check_rendered(
                Service::Cinder,
                text,
                &spec.extra_config,
                &first,
                &spec.secret_options,
            );
        }
        Err(refused) => {
            assert!(breaks_rules, "refused a valid spec: {refused:?}");
            assert!(
                refused
                    .iter()
                    .all(|m| m.starts_with("spec.") || m.starts_with("configuration"))
            );
        }
    }
    assert_eq!(
        rendered,
        ratchet_services::cinder::config::render("ns", "c", &spec)
    );
    Ok(())
}

fn fuzz_ironic(u: &mut Unstructured) -> Result<()> {
    let Ok(mut spec) = serde_json::from_value::<IronicSpec>(json!({
        "openStackRelease": "2026.1",
        "image": { "repository": "ironic", "tag": "2026.1" },
        "database": { "secretName": "db", "key": "connection" },
        "transport": { "secretName": "mq", "key": "url" },
    })) else {
        return Ok(());
    };
    spec.extra_config = sections(u)?;
    let file = entries(&spec.extra_config);
    spec.secret_options = secret_options(u, &file)?;
    let environment = [
        ("database", "connection"),
        ("DEFAULT", "transport_url"),
        ("DEFAULT", "pin_release_version"),
        ("deploy", "http_root"),
        ("pxe", "tftp_root"),
        ("api", "api_workers"),
    ];
    let breaks_rules = unsafe_sections(&spec.extra_config)
        || secret_options_break_rules(&spec.secret_options, &file, &environment);
    match ratchet_services::ironic::config::render("ns", "i", &spec) {
        Ok(text) => {
            assert!(!breaks_rules, "rendered what the rules refuse:\n{text}");
            check_rendered(
                Service::Ironic,
                &text,
                &spec.extra_config,
                &[],
                &spec.secret_options,
            );
        }
        Err(refused) => assert!(breaks_rules, "refused a valid spec: {refused:?}"),
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = match u.int_in_range(0..=2).unwrap_or(0) {
        0 => fuzz_writer(&mut u),
        1 => fuzz_cinder(&mut u),
        _ => fuzz_ironic(&mut u),
    };
});
