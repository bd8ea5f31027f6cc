//! From a container's spec to what to launch (pure): environment, command,
//! identity, capabilities and mounts, or the waiting reason a real kubelet
//! would report instead (`CreateContainerConfigError`, …).

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, Secret};

use super::images::{ImageRoot, VENV_MOUNT};

/// Why a container cannot start (yet): the waiting reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    pub reason: String,
    pub message: String,
}

impl Waiting {
    pub fn new(reason: &str, message: impl Into<String>) -> Waiting {
        Waiting {
            reason: reason.to_string(),
            message: message.into(),
        }
    }
    fn config(message: impl Into<String>) -> Waiting {
        Waiting::new("CreateContainerConfigError", message)
    }
}

/// The ConfigMaps and Secrets of the pod's namespace a container refers to
/// (`None`: read and not found).
#[derive(Clone, Debug, Default)]
pub struct Sources {
    pub config_maps: BTreeMap<String, Option<ConfigMap>>,
    pub secrets: BTreeMap<String, Option<Secret>>,
    /// Service-account tokens for projected volumes, by `<volume>/<path>`.
    pub tokens: BTreeMap<String, String>,
    /// PersistentVolumeClaims by name: the node-local directory that is the
    /// claim's storage, or `None` when the claim does not exist.
    pub claims: BTreeMap<String, Option<std::path::PathBuf>>,
}

impl Sources {
    pub(crate) fn config_map_data(&self, name: &str) -> Option<BTreeMap<String, Vec<u8>>> {
        let cm = self.config_maps.get(name)?.as_ref()?;
        Some(
            cm.data
                .clone()
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.into_bytes()))
                .chain(
                    cm.binary_data
                        .clone()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.0)),
                )
                .collect(),
        )
    }

    pub(crate) fn secret_data(&self, name: &str) -> Option<BTreeMap<String, Vec<u8>>> {
        let secret = self.secrets.get(name)?.as_ref()?;
        Some(
            secret
                .data
                .clone()
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect(),
        )
    }

    fn config_map_value(&self, name: &str, key: &str) -> Result<Option<String>, String> {
        match self.config_maps.get(name).and_then(Option::as_ref) {
            None => Err(format!("configmap \"{name}\" not found")),
            Some(cm) => Ok(cm
                .data
                .as_ref()
                .and_then(|d| d.get(key).cloned())
                .or_else(|| {
                    cm.binary_data
                        .as_ref()
                        .and_then(|d| d.get(key))
                        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                })),
        }
    }

    fn secret_value(&self, name: &str, key: &str) -> Result<Option<String>, String> {
        match self.secrets.get(name).and_then(Option::as_ref) {
            None => Err(format!("secret \"{name}\" not found")),
            Some(secret) => Ok(secret
                .data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                .or_else(|| {
                    secret
                        .string_data
                        .as_ref()
                        .and_then(|d| d.get(key).cloned())
                })),
        }
    }

    fn config_map_all(&self, name: &str) -> Option<Vec<(String, String)>> {
        let cm = self.config_maps.get(name)?.as_ref()?;
        Some(cm.data.clone().unwrap_or_default().into_iter().collect())
    }

    fn secret_all(&self, name: &str) -> Option<Vec<(String, String)>> {
        let secret = self.secrets.get(name)?.as_ref()?;
        Some(
            secret
                .data
                .clone()
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
                .collect(),
        )
    }
}

/// The names of the ConfigMaps and Secrets a pod refers to (env, envFrom, volumes).
pub fn referenced_sources(pod: &Pod) -> (Vec<String>, Vec<String>) {
    let mut config_maps = Vec::new();
    let mut secrets = Vec::new();
    let Some(spec) = pod.spec.as_ref() else {
        return (config_maps, secrets);
    };
    for c in &spec.containers {
        for env in c.env.iter().flatten() {
            if let Some(from) = &env.value_from {
                if let Some(r) = &from.config_map_key_ref {
                    config_maps.push(r.name.clone());
                }
                if let Some(r) = &from.secret_key_ref {
                    secrets.push(r.name.clone());
                }
            }
        }
        for from in c.env_from.iter().flatten() {
            if let Some(r) = &from.config_map_ref {
                config_maps.push(r.name.clone());
            }
            if let Some(r) = &from.secret_ref {
                secrets.push(r.name.clone());
            }
        }
    }
    for v in spec.volumes.iter().flatten() {
        if let Some(cm) = &v.config_map {
            config_maps.push(cm.name.clone());
        }
        for source in v.projected.iter().flat_map(|p| p.sources.iter().flatten()) {
            if let Some(cm) = &source.config_map {
                config_maps.push(cm.name.clone());
            }
            if let Some(secret) = &source.secret {
                secrets.push(secret.name.clone());
            }
        }
        if let Some(s) = &v.secret
            && let Some(name) = &s.secret_name
        {
            secrets.push(name.clone());
        }
    }
    config_maps.sort();
    config_maps.dedup();
    secrets.sort();
    secrets.dedup();
    (config_maps, secrets)
}

/// Facts about the pod's placement that `fieldRef`s read.
#[derive(Clone, Debug)]
pub struct PodFacts {
    pub pod_ip: String,
    pub host_ip: String,
    pub node_name: String,
}

pub(crate) fn field_value(pod: &Pod, facts: &PodFacts, path: &str) -> Result<String, String> {
    let meta = &pod.metadata;
    match path {
        "metadata.name" => Ok(meta.name.clone().unwrap_or_default()),
        "metadata.namespace" => Ok(meta.namespace.clone().unwrap_or_default()),
        "metadata.uid" => Ok(meta.uid.clone().unwrap_or_default()),
        "status.podIP" => Ok(facts.pod_ip.clone()),
        "status.hostIP" => Ok(facts.host_ip.clone()),
        "spec.nodeName" => Ok(facts.node_name.clone()),
        "spec.serviceAccountName" => Ok(pod
            .spec
            .as_ref()
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default()),
        other => {
            let label = |map: &Option<BTreeMap<String, String>>, prefix: &str| {
                other
                    .strip_prefix(prefix)
                    .and_then(|k| k.strip_prefix("['"))
                    .and_then(|k| k.strip_suffix("']"))
                    .map(|k| {
                        map.as_ref()
                            .and_then(|m| m.get(k).cloned())
                            .unwrap_or_default()
                    })
            };
            label(&meta.labels, "metadata.labels")
                .or_else(|| label(&meta.annotations, "metadata.annotations"))
                .ok_or_else(|| format!("unsupported fieldRef {other}"))
        }
    }
}

/// Expands `$(NAME)` with earlier variables as the kubelet does; `$$` is a
/// literal `$`, unknown references stay as written.
pub fn expand(text: &str, vars: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match vars.iter().rev().find(|(k, _)| k == name) {
                Some((_, v)) => out.push_str(v),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The container's environment: `envFrom` first, then `env` (which wins).
pub fn environment(
    pod: &Pod,
    container: &Container,
    facts: &PodFacts,
    sources: &Sources,
) -> Result<Vec<(String, String)>, Waiting> {
    let mut vars: Vec<(String, String)> = Vec::new();
    let set = |vars: &mut Vec<(String, String)>, k: String, v: String| {
        vars.retain(|(name, _)| *name != k);
        vars.push((k, v));
    };
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.clone().unwrap_or_default();
        if let Some(r) = &from.config_map_ref {
            match sources.config_map_all(&r.name) {
                Some(all) => all
                    .into_iter()
                    .for_each(|(k, v)| set(&mut vars, format!("{prefix}{k}"), v)),
                None if r.optional == Some(true) => {}
                None => {
                    return Err(Waiting::config(format!(
                        "configmap \"{}\" not found",
                        r.name
                    )));
                }
            }
        }
        if let Some(r) = &from.secret_ref {
            match sources.secret_all(&r.name) {
                Some(all) => all
                    .into_iter()
                    .for_each(|(k, v)| set(&mut vars, format!("{prefix}{k}"), v)),
                None if r.optional == Some(true) => {}
                None => return Err(Waiting::config(format!("secret \"{}\" not found", r.name))),
            }
        }
    }
    for env in container.env.iter().flatten() {
        let value = match (&env.value, &env.value_from) {
            (_, Some(from)) => {
                if let Some(r) = &from.config_map_key_ref {
                    let found = sources.config_map_value(&r.name, &r.key);
                    match (found, r.optional == Some(true)) {
                        (Ok(Some(v)), _) => v,
                        (_, true) => continue,
                        (Ok(None), false) => {
                            return Err(Waiting::config(format!(
                                "couldn't find key {} in ConfigMap {}/{}",
                                r.key,
                                pod.metadata.namespace.as_deref().unwrap_or_default(),
                                r.name
                            )));
                        }
                        (Err(e), false) => return Err(Waiting::config(e)),
                    }
                } else if let Some(r) = &from.secret_key_ref {
                    let found = sources.secret_value(&r.name, &r.key);
                    match (found, r.optional == Some(true)) {
                        (Ok(Some(v)), _) => v,
                        (_, true) => continue,
                        (Ok(None), false) => {
                            return Err(Waiting::config(format!(
                                "couldn't find key {} in Secret {}/{}",
                                r.key,
                                pod.metadata.namespace.as_deref().unwrap_or_default(),
                                r.name
                            )));
                        }
                        (Err(e), false) => return Err(Waiting::config(e)),
                    }
                } else if let Some(r) = &from.field_ref {
                    field_value(pod, facts, &r.field_path).map_err(Waiting::config)?
                } else {
                    return Err(Waiting::config(format!(
                        "env {}: only value, configMapKeyRef, secretKeyRef and fieldRef are supported",
                        env.name
                    )));
                }
            }
            (Some(v), None) => expand(v, &vars),
            (None, None) => String::new(),
        };
        set(&mut vars, env.name.clone(), value);
    }
    Ok(vars)
}

/// Who the process runs as and what it may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    pub no_new_privs: bool,
    /// The capability bounding set, as setpriv names them (`net_bind_service`).
    pub capabilities: Vec<String>,
    pub read_only_root: bool,
}

/// The capabilities a container runtime grants by default (containerd's set).
const DEFAULT_CAPS: &[&str] = &[
    "chown",
    "dac_override",
    "fsetid",
    "fowner",
    "mknod",
    "net_raw",
    "setgid",
    "setuid",
    "setfcap",
    "setpcap",
    "net_bind_service",
    "sys_chroot",
    "kill",
    "audit_write",
];

fn cap_name(kube: &str) -> String {
    kube.trim_start_matches("CAP_").to_ascii_lowercase()
}

/// The pod's and container's security contexts merged (the container wins),
/// with the image's default user; refuses root when `runAsNonRoot` is set.
pub fn identity(pod: &Pod, container: &Container, image: &ImageRoot) -> Result<Identity, Waiting> {
    let pod_sc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let sc = container.security_context.as_ref();
    let uid = sc
        .and_then(|s| s.run_as_user)
        .or_else(|| pod_sc.and_then(|s| s.run_as_user))
        .map(|u| u as u32)
        .or(image.entry.user)
        .unwrap_or(0);
    // Without runAsGroup a runtime takes the user's primary group from the
    // image's /etc/passwd (the host's, for these images), else group 0.
    let gid = sc
        .and_then(|s| s.run_as_group)
        .or_else(|| pod_sc.and_then(|s| s.run_as_group))
        .map(|g| g as u32)
        .unwrap_or_else(|| primary_gid(uid).unwrap_or(0));
    let non_root = sc
        .and_then(|s| s.run_as_non_root)
        .or_else(|| pod_sc.and_then(|s| s.run_as_non_root))
        .unwrap_or(false);
    if non_root && uid == 0 {
        return Err(Waiting::config(format!(
            "container has runAsNonRoot and image will run as root (pod: \"{}_{}({})\", container: {})",
            pod.metadata.name.as_deref().unwrap_or_default(),
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.uid.as_deref().unwrap_or_default(),
            container.name
        )));
    }
    let mut groups: Vec<u32> = pod_sc
        .and_then(|s| s.supplemental_groups.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|g| g as u32)
        .collect();
    if let Some(fs_group) = pod_sc.and_then(|s| s.fs_group) {
        groups.push(fs_group as u32);
    }
    groups.sort();
    groups.dedup();
    let privileged = sc.and_then(|s| s.privileged).unwrap_or(false);
    let mut capabilities: Vec<String> = if privileged {
        Vec::new()
    } else {
        DEFAULT_CAPS.iter().map(|c| c.to_string()).collect()
    };
    if let Some(caps) = sc.and_then(|s| s.capabilities.as_ref()) {
        for drop in caps.drop.iter().flatten() {
            if drop.eq_ignore_ascii_case("ALL") {
                capabilities.clear();
            } else {
                let name = cap_name(drop);
                capabilities.retain(|c| *c != name);
            }
        }
        for add in caps.add.iter().flatten() {
            let name = cap_name(add);
            if !capabilities.contains(&name) {
                capabilities.push(name);
            }
        }
    }
    if privileged {
        capabilities = vec!["all".to_string()];
    }
    Ok(Identity {
        uid,
        gid,
        groups,
        no_new_privs: sc.and_then(|s| s.allow_privilege_escalation) == Some(false),
        capabilities,
        read_only_root: sc
            .and_then(|s| s.read_only_root_filesystem)
            .unwrap_or(false),
    })
}

/// The primary group of `uid` in `/etc/passwd`.
pub fn primary_gid(uid: u32) -> Option<u32> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.get(2)?.parse::<u32>().ok()? == uid)
            .then(|| fields.get(3)?.parse::<u32>().ok())
            .flatten()
    })
}

/// The argv to exec: `command` (or the image's entrypoint) then `args`, with
/// `$(VAR)` references expanded.
pub fn argv(
    container: &Container,
    image: &ImageRoot,
    env: &[(String, String)],
) -> Result<Vec<String>, Waiting> {
    let mut argv: Vec<String> = match &container.command {
        Some(command) if !command.is_empty() => command.clone(),
        _ => image.entry.entrypoint.clone(),
    };
    argv.extend(container.args.clone().unwrap_or_default());
    if argv.is_empty() {
        return Err(Waiting::new(
            "RunContainerError",
            format!(
                "no command specified: container {} gives none and image {} has no entrypoint",
                container.name, image.reference
            ),
        ));
    }
    Ok(argv.iter().map(|a| expand(a, env)).collect())
}

/// A host path bound into the container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub source: PathBuf,
    pub dest: String,
    pub read_only: bool,
}

/// Where the image's own files go (a venv at [`VENV_MOUNT`]).
pub fn image_mounts(image: &ImageRoot) -> Vec<Mount> {
    image
        .venv
        .iter()
        .map(|venv| Mount {
            source: venv.clone(),
            dest: VENV_MOUNT.to_string(),
            read_only: true,
        })
        .collect()
}

/// The host path a container path shows: through the longest mount above it,
/// else the host's own path (the container sees the host's system directories).
pub fn host_path(container_path: &str, mounts: &[Mount]) -> PathBuf {
    let best = mounts
        .iter()
        .filter(|m| {
            container_path == m.dest
                || container_path.starts_with(&format!("{}/", m.dest.trim_end_matches('/')))
        })
        .max_by_key(|m| m.dest.len());
    match best {
        Some(m) => m
            .source
            .join(container_path[m.dest.len()..].trim_start_matches('/')),
        None => PathBuf::from(container_path),
    }
}

/// Looks `program` up as `execvp` would inside the container, answering with
/// the host path it maps to (or `None`: not found).
pub fn find_program(program: &str, path_env: &str, mounts: &[Mount]) -> Option<PathBuf> {
    let host = |container_path: &str| host_path(container_path, mounts);
    let executable = |p: &PathBuf| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = host(program);
        return executable(&p).then_some(p);
    }
    path_env
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|dir| host(&format!("{}/{program}", dir.trim_end_matches('/'))))
        .find(executable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process_kubelet::images::{ImageEntry, ImageKind};

    fn image(user: Option<u32>) -> ImageRoot {
        ImageRoot {
            reference: "ratchet.test/shell:1".into(),
            entry: ImageEntry {
                kind: ImageKind::Host,
                description: String::new(),
                debian_packages: vec![],
                python: None,
                packages: vec![],
                modules: vec![],
                constraints: None,
                entrypoint: vec!["/bin/sh".into()],
                user,
            },
            venv: None,
        }
    }

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).expect("pod")
    }

    fn facts() -> PodFacts {
        PodFacts {
            pod_ip: "10.245.1.2".into(),
            host_ip: "10.245.0.1".into(),
            node_name: "process-node-0".into(),
        }
    }

    #[test]
    fn expansion_follows_the_kubelet() {
        let vars = vec![("A".to_string(), "x".to_string())];
        assert_eq!(expand("$(A)-$(B)-$$(A)-$", &vars), "x-$(B)-$(A)-$");
    }

    #[test]
    fn env_reads_every_source_and_reports_missing_keys() {
        let p = pod(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c",
                "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
                "env": [
                    {"name": "PLAIN", "value": "v"},
                    {"name": "REF", "value": "$(PLAIN)!"},
                    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "s", "key": "password"}}},
                    {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}
                ]}]}
        }));
        let mut sources = Sources::default();
        sources.config_maps.insert(
            "cm".into(),
            Some(
                serde_json::from_value(serde_json::json!({"data": {"k": "from-cm"}})).expect("cm"),
            ),
        );
        sources.secrets.insert(
            "s".into(),
            Some(
                serde_json::from_value(serde_json::json!({"data": {"password": "aHVudGVyMg=="}}))
                    .expect("s"),
            ),
        );
        let container = &p.spec.as_ref().expect("spec").containers[0];
        let env = environment(&p, container, &facts(), &sources).expect("env");
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("CM_k"), Some("from-cm"));
        assert_eq!(get("REF"), Some("v!"));
        assert_eq!(get("IP"), Some("10.245.1.2"));
        assert_eq!(get("NAME"), Some("p"));
        assert_eq!(get("PASS"), Some("hunter2"));
        assert_eq!(get("CM"), Some("from-cm"));

        sources.secrets.insert(
            "s".into(),
            Some(serde_json::from_value(serde_json::json!({"data": {}})).expect("s")),
        );
        let err = environment(&p, container, &facts(), &sources).expect_err("missing key");
        assert_eq!(err.reason, "CreateContainerConfigError");
        assert_eq!(err.message, "couldn't find key password in Secret ns/s");
    }

    #[test]
    fn run_as_non_root_refuses_a_root_image_and_capabilities_follow_drop_and_add() {
        let p = pod(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"securityContext": {"runAsNonRoot": true},
                "containers": [{"name": "c"}]}
        }));
        let container = &p.spec.as_ref().expect("spec").containers[0];
        let err = identity(&p, container, &image(None)).expect_err("root refused");
        assert_eq!(err.reason, "CreateContainerConfigError");
        assert!(err.message.contains("runAsNonRoot"), "{}", err.message);
        let ok = identity(&p, container, &image(Some(1000))).expect("non-root image");
        assert_eq!((ok.uid, ok.gid), (1000, primary_gid(1000).unwrap_or(0)));
        assert_eq!(primary_gid(0), Some(0));

        let p = pod(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"securityContext": {"fsGroup": 2000},
                "containers": [{"name": "c", "securityContext": {"runAsUser": 1001, "runAsGroup": 1002,
                "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}]}
        }));
        let container = &p.spec.as_ref().expect("spec").containers[0];
        let id = identity(&p, container, &image(None)).expect("identity");
        assert_eq!(
            id,
            Identity {
                uid: 1001,
                gid: 1002,
                groups: vec![2000],
                no_new_privs: true,
                capabilities: vec!["net_bind_service".into()],
                read_only_root: true,
            }
        );
    }

    #[test]
    fn programs_are_found_through_path_and_mounts() {
        assert!(find_program("sh", "/usr/bin:/bin", &[]).is_some());
        assert!(find_program("no-such-program-here", "/usr/bin:/bin", &[]).is_none());
        let mounts = vec![Mount {
            source: PathBuf::from("/usr/bin"),
            dest: "/opt/tools".into(),
            read_only: true,
        }];
        assert!(find_program("/opt/tools/sh", "", &mounts).is_some());
    }
}
