//! Helpers the fuzz targets share: structure-aware JSON (valid resources and
//! mutations of them, so the fuzzer gets past deserialisation), hostile text,
//! and a reader of oslo.config files that reads as oslo.config does.

use std::collections::BTreeMap;

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Value, json};

/// Text fragments worth combining: what breaks INI files, releases, image
/// references and the conversion's annotation records.
const FRAGMENTS: &[&str] = &[
    "",
    "2026.1",
    "2026.2",
    "2025.2",
    "2010.1",
    "9999.2",
    "-p1",
    "DEFAULT",
    "database",
    "connection",
    "transport_url",
    "pin_release_version",
    "Pin-Release-Version",
    "keystone_authtoken",
    "password",
    "enabled_backends",
    "OS_",
    "__",
    "default",
    "true",
    "\n",
    "\r",
    "\r\n",
    "\t",
    " ",
    "\u{0}",
    "\u{7f}",
    "\u{85}",
    "\u{a0}",
    "\u{2028}",
    "\u{3000}",
    "\u{212A}",
    "[",
    "]",
    "=",
    ":",
    "#",
    ";",
    "\"",
    "'",
    "$",
    "${database.connection}",
    "true\n[database]\nconnection = mysql://x",
    "weird]\n[keystone_authtoken",
    "lvm",
    "ceph",
    "cinder",
    "registry.example:5000/openstack/cinder",
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "@",
    "/",
    ".",
    "_",
    "-",
    "cinder.openstack.c5c3.io/v1alpha1",
    "cinder.openstack.c5c3.io/v1beta1",
    "cinder.openstack.c5c3.io/conversion-v1beta1",
    "cinder.openstack.c5c3.io/conversion-v1alpha1",
    r#"{"volumeBackends":[{"name":"lvm"}]}"#,
    r#"{"volumeBackends":[{"repeat":{"name":"lvm"}}]}"#,
    r#"{"unknownFields":{"fields":{"x":1}}}"#,
    r#"{"displacedAnnotation":"x"}"#,
    "2026-12-01T10:00:00Z",
    "2026-12-01T10:00:00.5+01:00",
];

/// Field names of the resources, and a few they do not have.
const KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "annotations",
    "labels",
    "generation",
    "resourceVersion",
    "spec",
    "openStackRelease",
    "image",
    "repository",
    "tag",
    "digest",
    "reference",
    "database",
    "transport",
    "secretName",
    "key",
    "api",
    "scheduler",
    "backup",
    "conductor",
    "replicas",
    "resources",
    "limits",
    "requests",
    "claims",
    "cpu",
    "volumes",
    "volumeBackends",
    "options",
    "rolloutDeadlineSeconds",
    "extraConfig",
    "status",
    "installedRelease",
    "targetRelease",
    "upgradePhase",
    "upgradePhaseStartedAt",
    "rollingWorkload",
    "pinnedRelease",
    "conditions",
    "observedGeneration",
    "type",
    "status",
    "reason",
    "message",
    "lastTransitionTime",
    "futureField",
    "DEFAULT",
    "lvm",
    "cinder.openstack.c5c3.io/conversion-v1beta1",
    "cinder.openstack.c5c3.io/conversion-v1alpha1",
];

/// A string built from fragments and arbitrary characters.
pub fn text(u: &mut Unstructured) -> Result<String> {
    let mut out = String::new();
    for _ in 0..u.int_in_range(0..=4)? {
        match u.int_in_range(0..=3)? {
            0 => out.push(u.arbitrary::<char>()?),
            1 => out.push_str(
                &u.arbitrary::<String>()?
                    .chars()
                    .take(16)
                    .collect::<String>(),
            ),
            _ => out.push_str(u.choose(FRAGMENTS)?),
        }
    }
    Ok(out)
}

/// A name: mostly a plausible one, sometimes hostile.
pub fn name(u: &mut Unstructured) -> Result<String> {
    if u.ratio(3, 4)? {
        let plain = [
            "DEFAULT", "database", "lvm", "ceph", "debug", "a-b", "x.y", "_z",
        ];
        Ok(u.choose(&plain)?.to_string())
    } else {
        text(u)
    }
}

fn number(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=5)? {
        0 => json!(u.arbitrary::<i64>()?),
        1 => json!(u.arbitrary::<u64>()?),
        2 => json!(u.arbitrary::<f64>()?),
        3 => json!(u.int_in_range(-2..=101)?),
        4 => json!(1.5),
        _ => json!(u.arbitrary::<i32>()?),
    })
}

/// An arbitrary JSON value, at most `depth` levels deep.
pub fn value(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let top = if depth == 0 { 3 } else { 5 };
    Ok(match u.int_in_range(0..=top)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => number(u)?,
        3 => Value::String(text(u)?),
        4 => {
            let mut items = Vec::new();
            for _ in 0..u.int_in_range(0..=3)? {
                items.push(value(u, depth - 1)?);
            }
            Value::Array(items)
        }
        _ => {
            let mut fields = Map::new();
            for _ in 0..u.int_in_range(0..=3)? {
                let key = if u.ratio(2, 3)? {
                    u.choose(KEYS)?.to_string()
                } else {
                    text(u)?
                };
                fields.insert(key, value(u, depth - 1)?);
            }
            Value::Object(fields)
        }
    })
}

/// Every place in `value` as a JSON pointer.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                pointers(field, format!("{at}/{escaped}"), out);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                pointers(item, format!("{at}/{index}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// One change to `object`: replace, add or remove a field or list item.
fn mutate(u: &mut Unstructured, object: &mut Value) -> Result<()> {
    let mut places = Vec::new();
    pointers(object, String::new(), &mut places);
    let at = u.choose(&places)?.clone();
    let replacement = value(u, 3)?;
    let op = u.int_in_range(0..=3)?;
    let key = if u.ratio(3, 4)? {
        u.choose(KEYS)?.to_string()
    } else {
        text(u)?
    };
    let Some(target) = object.pointer_mut(&at) else {
        return Ok(());
    };
    match (op, target) {
        (0, target) => *target = replacement,
        (1, Value::Object(fields)) => {
            fields.insert(key, replacement);
        }
        (1, Value::Array(items)) => items.push(replacement),
        (2, Value::Object(fields)) => {
            fields.remove(&key);
            if let Some(first) = fields.keys().next().cloned()
                && u.arbitrary::<bool>()?
            {
                fields.remove(&first);
            }
        }
        (2, Value::Array(items)) => {
            items.pop();
        }
        (_, Value::String(s)) => s.push_str(&text(u)?),
        _ => {}
    }
    Ok(())
}

/// A valid v1alpha1 Cinder.
pub fn cinder_v1alpha1() -> Value {
    json!({
        "apiVersion": "cinder.openstack.c5c3.io/v1alpha1",
        "kind": "Cinder",
        "metadata": { "name": "c", "namespace": "ns", "annotations": { "team": "storage" } },
        "spec": {
            "openStackRelease": "2026.1",
            "image": { "repository": "cinder", "tag": "2026.1" },
            "database": { "secretName": "db", "key": "connection" },
            "transport": { "secretName": "mq", "key": "url" },
            "api": { "replicas": 2 },
            "volumes": { "lvm": { "options": { "volume_driver": "lvm" } }, "ceph": {} },
            "extraConfig": { "DEFAULT": { "debug": "true" } },
        },
        "status": {
            "installedRelease": "2026.1",
            "conditions": [{
                "type": "Ready", "status": "True", "reason": "AllWorkloadsReady",
                "message": "", "lastTransitionTime": "2026-12-01T10:00:00Z",
            }],
        },
    })
}

/// A valid v1beta1 Cinder.
pub fn cinder_v1beta1() -> Value {
    json!({
        "apiVersion": "cinder.openstack.c5c3.io/v1beta1",
        "kind": "Cinder",
        "metadata": { "name": "c", "namespace": "ns" },
        "spec": {
            "openStackRelease": "2026.2",
            "image": { "repository": "registry.example/cinder", "reference": { "tag": "2026.2" } },
            "database": { "secretName": "db", "key": "connection" },
            "transport": { "secretName": "mq", "key": "url" },
            "volumeBackends": [
                { "name": "lvm", "options": { "volume_driver": "lvm" }, "privileged": true },
                { "name": "ceph", "replicas": 2 },
            ],
            "extraConfig": { "DEFAULT": { "debug": "true" } },
            "secretOptions": [
                { "section": "keystone_authtoken", "option": "password", "secretName": "ks", "key": "password" },
            ],
            "securityContext": { "runAsUser": 42407, "fsGroup": 42407 },
        },
        "status": { "installedRelease": "2026.1", "upgradePhase": "Migrating" },
    })
}

/// A valid Ironic.
pub fn ironic() -> Value {
    json!({
        "apiVersion": "ironic.openstack.c5c3.io/v1alpha1",
        "kind": "Ironic",
        "metadata": { "name": "i", "namespace": "ns" },
        "spec": {
            "openStackRelease": "2026.1",
            "image": { "repository": "ironic", "tag": "2026.1" },
            "database": { "secretName": "db", "key": "connection" },
            "transport": { "secretName": "mq", "key": "url" },
            "conductor": { "replicas": 2 },
            "extraConfig": { "conductor": { "automated_clean": "false" } },
            "secretOptions": [
                { "section": "json_rpc", "option": "password", "secretName": "rpc", "key": "password" },
            ],
            "securityContext": { "runAsUser": 42422 },
        },
        "status": { "installedRelease": "2026.1", "pinnedRelease": "" },
    })
}

/// An object: one of `templates` with a few mutations, or (sometimes) the raw
/// input as JSON, or a random value.
pub fn object(u: &mut Unstructured, templates: &[Value]) -> Result<Value> {
    match u.int_in_range(0..=9)? {
        0 => {
            let bytes: &[u8] = u.arbitrary()?;
            Ok(serde_json::from_slice(bytes).unwrap_or(Value::Null))
        }
        1 => value(u, 4),
        _ => {
            let mut object = u.choose(templates)?.clone();
            for _ in 0..u.int_in_range(0..=6)? {
                mutate(u, &mut object)?;
            }
            Ok(object)
        }
    }
}

/// Python's `str.isspace`, which oslo.config strips with.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Every line boundary Python knows (`str.splitlines`), a superset of what a
/// file read in text mode splits on: a reader that splits here is at least as
/// strict as oslo.config.
fn line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{b}'
            | '\u{c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// What oslo.config makes of a value as written after `=`: stripped, and a
/// pair of equal quotes around it dropped.
pub fn oslo_value(raw: &str) -> String {
    let value = raw.trim_matches(py_space);
    let mut chars = value.chars();
    match (chars.next(), chars.next_back()) {
        (Some(first), Some(last)) if first == last && (first == '"' || first == '\'') => {
            chars.as_str().to_string()
        }
        _ => value.to_string(),
    }
}

/// Sections as oslo.config reads them.
pub type Read = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// Reads a file the way oslo.config's parser does: section headers, comments,
/// `name = value` / `name: value` split at the first separator, both stripped.
/// Continuation lines and anything oslo.config would refuse are errors here
/// (Ratchet never writes them). Repeated options keep every value.
pub fn read_oslo(text: &str) -> std::result::Result<Read, String> {
    let mut sections = Read::new();
    let mut section: Option<String> = None;
    for raw in text.split(line_break) {
        let line = raw.trim_end_matches(py_space);
        if line.is_empty() {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(format!("continuation line {line:?}"));
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| format!("unterminated section {line:?}"))?;
            if name.is_empty() {
                return Err("empty section name".into());
            }
            sections.entry(name.to_string()).or_default();
            section = Some(name.to_string());
        } else if line.starts_with(['#', ';']) {
            continue;
        } else {
            let at = line
                .find([':', '='])
                .ok_or_else(|| format!("no assignment in {line:?}"))?;
            let key = line[..at].trim_matches(py_space);
            if key.is_empty() {
                return Err(format!("empty key in {line:?}"));
            }
            let current = section
                .as_ref()
                .ok_or_else(|| format!("option outside a section: {line:?}"))?;
            sections
                .entry(current.clone())
                .or_default()
                .entry(key.to_string())
                .or_default()
                .push(oslo_value(&line[at + 1..]));
        }
    }
    Ok(sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_reads_as_oslo_config_does() {
        let read = read_oslo("# c\n\n[DEFAULT]\na = 1\nb: \"x\"\n[s]\nc=d=e\n").expect("reads");
        assert_eq!(read["DEFAULT"]["a"], ["1"]);
        assert_eq!(read["DEFAULT"]["b"], ["x"]);
        assert_eq!(read["s"]["c"], ["d=e"]);
        assert!(read_oslo("a = 1\n").is_err());
        assert!(read_oslo("[x]\n a = 1\n").is_err());
        // The injection the rules exist for, read as oslo.config reads it.
        let injected =
            read_oslo("[DEFAULT]\ndebug = true\n[database]\nconnection = x\n").expect("reads");
        assert!(injected.contains_key("database"));
    }
}
