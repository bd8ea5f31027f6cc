//! Pod volumes on disk, laid out as the kubelet lays them out, and the bind
//! mounts that put them at each container's `mountPath`.
//!
//! ConfigMap and Secret volumes use the kubelet's atomic-writer layout: the
//! files live in a timestamped directory `..<time>`, `..data` is a symlink to
//! it, and every top-level key is a symlink through `..data` (so a program sees
//! exactly what it would on a node, `..data` included). `items` choose and
//! rename keys, `defaultMode`/`mode` set file modes, `fsGroup` owns them.
//! Projected volumes (the service-account token volume every pod gets) and
//! `downwardAPI` use the same layout. `emptyDir` is a plain 0777 directory. Everything lives under the pod's
//! directory (`<kubelet dir>/pods/<namespace>/<pod>/volumes-<uid>/`).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, KeyToPath, Pod};

use super::spec::{self, Mount, PodFacts, Sources, Waiting};

/// A prepared volume: where it is on the host and whether it is always read-only.
#[derive(Clone, Debug)]
pub struct VolumeDir {
    pub path: PathBuf,
    pub always_read_only: bool,
    pub empty_dir: bool,
}

fn mount_failed(volume: &str, detail: impl std::fmt::Display) -> Waiting {
    Waiting::new(
        "ContainerCreating",
        format!("MountVolume.SetUp failed for volume \"{volume}\" : {detail}"),
    )
}

fn timestamp_dir() -> String {
    let now = k8s_openapi::jiff::Zoned::now().with_time_zone(k8s_openapi::jiff::tz::TimeZone::UTC);
    format!("..{}", now.strftime("%Y_%m_%d_%H_%M_%S.%f"))
}

/// Writes `files` (relative path → content, mode) in the atomic-writer layout.
fn write_atomic(
    dir: &Path,
    files: &[(String, Vec<u8>, u32)],
    group: Option<u32>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let ts = timestamp_dir();
    let data_dir = dir.join(&ts);
    std::fs::create_dir_all(&data_dir)?;
    let mut top_level = std::collections::BTreeSet::new();
    for (rel, content, mode) in files {
        let path = data_dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, content)?;
        let mode = if group.is_some() { mode | 0o040 } else { *mode };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))?;
        if let Some(gid) = group {
            std::os::unix::fs::chown(&path, None, Some(gid))?;
        }
        if let Some(first) = Path::new(rel).components().next() {
            top_level.insert(first.as_os_str().to_string_lossy().into_owned());
        }
    }
    let data_link = dir.join("..data");
    let _ = std::fs::remove_file(&data_link);
    std::os::unix::fs::symlink(&ts, &data_link)?;
    for entry in top_level {
        let link = dir.join(&entry);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(format!("..data/{entry}"), &link)?;
    }
    Ok(())
}

fn select_items(
    all: BTreeMap<String, Vec<u8>>,
    items: Option<&Vec<KeyToPath>>,
    default_mode: u32,
    kind: &str,
) -> Result<Vec<(String, Vec<u8>, u32)>, String> {
    match items {
        None => Ok(all.into_iter().map(|(k, v)| (k, v, default_mode)).collect()),
        Some(items) => items
            .iter()
            .map(|item| {
                let content = all.get(&item.key).cloned().ok_or_else(|| {
                    format!("{kind} references non-existent config key: {}", item.key)
                })?;
                if item.path.split('/').any(|c| c == "..") || item.path.starts_with('/') {
                    return Err(format!("invalid item path {}", item.path));
                }
                let mode = item.mode.map(|m| m as u32).unwrap_or(default_mode);
                Ok((item.path.clone(), content, mode))
            })
            .collect(),
    }
}

/// The files of a projected volume (ConfigMaps, Secrets, the downward API,
/// service-account tokens), as (path, content, mode).
fn projected_files(
    pod: &Pod,
    facts: &PodFacts,
    volume: &k8s_openapi::api::core::v1::Volume,
    projected: &k8s_openapi::api::core::v1::ProjectedVolumeSource,
    sources: &Sources,
) -> Result<Vec<(String, Vec<u8>, u32)>, String> {
    let mode = projected.default_mode.map(|m| m as u32).unwrap_or(0o644);
    let mut files = Vec::new();
    for source in projected.sources.iter().flatten() {
        if let Some(cm) = &source.config_map {
            match sources.config_map_data(&cm.name) {
                Some(all) => files.extend(select_items(all, cm.items.as_ref(), mode, "configMap")?),
                None if cm.optional == Some(true) => {}
                None => return Err(format!("configmap \"{}\" not found", cm.name)),
            }
        }
        if let Some(secret) = &source.secret {
            match sources.secret_data(&secret.name) {
                Some(all) => {
                    files.extend(select_items(all, secret.items.as_ref(), mode, "secret")?)
                }
                None if secret.optional == Some(true) => {}
                None => return Err(format!("secret \"{}\" not found", secret.name)),
            }
        }
        if let Some(downward) = &source.downward_api {
            files.extend(downward_files(pod, facts, downward.items.as_ref(), mode)?);
        }
        if let Some(token) = &source.service_account_token {
            let key = format!("{}/{}", volume.name, token.path);
            let value = sources
                .tokens
                .get(&key)
                .ok_or_else(|| format!("no service account token for {key}"))?;
            files.push((token.path.clone(), value.clone().into_bytes(), mode));
        }
    }
    Ok(files)
}

fn downward_files(
    pod: &Pod,
    facts: &PodFacts,
    items: Option<&Vec<k8s_openapi::api::core::v1::DownwardAPIVolumeFile>>,
    mode: u32,
) -> Result<Vec<(String, Vec<u8>, u32)>, String> {
    items
        .into_iter()
        .flatten()
        .map(|item| {
            let value = match &item.field_ref {
                Some(field) => spec::field_value(pod, facts, &field.field_path)?,
                None => {
                    return Err(format!(
                        "downwardAPI item {}: only fieldRef is supported",
                        item.path
                    ));
                }
            };
            let mode = item.mode.map(|m| m as u32).unwrap_or(mode);
            Ok((item.path.clone(), value.into_bytes(), mode))
        })
        .collect()
}

/// Writes every volume of the pod under `root` and says where each is.
pub fn prepare(
    pod: &Pod,
    facts: &PodFacts,
    root: &Path,
    sources: &Sources,
) -> Result<BTreeMap<String, VolumeDir>, Waiting> {
    let mut out = BTreeMap::new();
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(out);
    };
    let fs_group = spec
        .security_context
        .as_ref()
        .and_then(|s| s.fs_group)
        .map(|g| g as u32);
    for volume in spec.volumes.iter().flatten() {
        let dir = root.join(&volume.name);
        let io = |e: std::io::Error| mount_failed(&volume.name, e);
        if let Some(cm) = &volume.config_map {
            let found = sources.config_maps.get(&cm.name).and_then(Option::as_ref);
            let all: BTreeMap<String, Vec<u8>> = match found {
                Some(found) => found
                    .data
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .chain(
                        found
                            .binary_data
                            .clone()
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(k, v)| (k, v.0)),
                    )
                    .collect(),
                None if cm.optional == Some(true) => BTreeMap::new(),
                None => {
                    return Err(mount_failed(
                        &volume.name,
                        format!("configmap \"{}\" not found", cm.name),
                    ));
                }
            };
            let mode = cm.default_mode.map(|m| m as u32).unwrap_or(0o644);
            let files = select_items(all, cm.items.as_ref(), mode, "configMap")
                .map_err(|e| mount_failed(&volume.name, e))?;
            write_atomic(&dir, &files, fs_group).map_err(io)?;
            out.insert(
                volume.name.clone(),
                VolumeDir {
                    path: dir,
                    always_read_only: true,
                    empty_dir: false,
                },
            );
        } else if let Some(secret) = &volume.secret {
            let name = secret.secret_name.clone().unwrap_or_default();
            let found = sources.secrets.get(&name).and_then(Option::as_ref);
            let all: BTreeMap<String, Vec<u8>> = match found {
                Some(found) => found
                    .data
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect(),
                None if secret.optional == Some(true) => BTreeMap::new(),
                None => {
                    return Err(mount_failed(
                        &volume.name,
                        format!("secret \"{name}\" not found"),
                    ));
                }
            };
            let mode = secret.default_mode.map(|m| m as u32).unwrap_or(0o644);
            let files = select_items(all, secret.items.as_ref(), mode, "secret")
                .map_err(|e| mount_failed(&volume.name, e))?;
            write_atomic(&dir, &files, fs_group).map_err(io)?;
            out.insert(
                volume.name.clone(),
                VolumeDir {
                    path: dir,
                    always_read_only: true,
                    empty_dir: false,
                },
            );
        } else if let Some(projected) = &volume.projected {
            let files = projected_files(pod, facts, volume, projected, sources)
                .map_err(|e| mount_failed(&volume.name, e))?;
            write_atomic(&dir, &files, fs_group).map_err(io)?;
            out.insert(
                volume.name.clone(),
                VolumeDir {
                    path: dir,
                    always_read_only: true,
                    empty_dir: false,
                },
            );
        } else if let Some(downward) = &volume.downward_api {
            let mode = downward.default_mode.map(|m| m as u32).unwrap_or(0o644);
            let files = downward_files(pod, facts, downward.items.as_ref(), mode)
                .map_err(|e| mount_failed(&volume.name, e))?;
            write_atomic(&dir, &files, fs_group).map_err(io)?;
            out.insert(
                volume.name.clone(),
                VolumeDir {
                    path: dir,
                    always_read_only: true,
                    empty_dir: false,
                },
            );
        } else if volume.empty_dir.is_some() {
            std::fs::create_dir_all(&dir).map_err(io)?;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).map_err(io)?;
            if let Some(gid) = fs_group {
                std::os::unix::fs::chown(&dir, None, Some(gid)).map_err(io)?;
            }
            out.insert(
                volume.name.clone(),
                VolumeDir {
                    path: dir,
                    always_read_only: false,
                    empty_dir: true,
                },
            );
        } else if let Some(claim) = &volume.persistent_volume_claim {
            let Some(Some(dir)) = sources.claims.get(&claim.claim_name) else {
                return Err(mount_failed(
                    &volume.name,
                    format!("persistentvolumeclaim \"{}\" not found", claim.claim_name),
                ));
            };
            std::fs::create_dir_all(dir).map_err(io)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).map_err(io)?;
            if let Some(gid) = fs_group {
                std::os::unix::fs::chown(dir, None, Some(gid)).map_err(io)?;
            }
            out.insert(
                volume.name.clone(),
                VolumeDir {
                    path: dir.clone(),
                    always_read_only: claim.read_only == Some(true),
                    empty_dir: false,
                },
            );
        } else {
            return Err(mount_failed(
                &volume.name,
                "the process kubelet supports configMap, secret, projected, downwardAPI, emptyDir and persistentVolumeClaim volumes",
            ));
        }
    }
    Ok(out)
}

/// The container's volume mounts as bind mounts (`subPath` resolved to the
/// file or directory it names, as the kubelet binds it).
pub fn container_mounts(
    container: &Container,
    volumes: &BTreeMap<String, VolumeDir>,
) -> Result<Vec<Mount>, Waiting> {
    let mut mounts = Vec::new();
    for vm in container.volume_mounts.iter().flatten() {
        let Some(volume) = volumes.get(&vm.name) else {
            return Err(Waiting::new(
                "CreateContainerConfigError",
                format!(
                    "cannot find volume \"{}\" to mount into container \"{}\"",
                    vm.name, container.name
                ),
            ));
        };
        let mut source = volume.path.clone();
        if let Some(sub) = vm.sub_path.as_deref().filter(|s| !s.is_empty()) {
            if sub.split('/').any(|c| c == "..") || sub.starts_with('/') {
                return Err(Waiting::new(
                    "CreateContainerConfigError",
                    format!("invalid subPath {sub}"),
                ));
            }
            let path = volume.path.join(sub);
            if !path.exists() && volume.empty_dir {
                std::fs::create_dir_all(&path).map_err(|e| {
                    Waiting::new(
                        "CreateContainerConfigError",
                        format!("failed to create subPath directory {sub}: {e}"),
                    )
                })?;
            }
            source = std::fs::canonicalize(&path).map_err(|e| {
                Waiting::new(
                    "CreateContainerConfigError",
                    format!(
                        "failed to prepare subPath for volumeMount \"{}\" of container \"{}\": {e}",
                        vm.name, container.name
                    ),
                )
            })?;
        }
        mounts.push(Mount {
            source,
            dest: vm.mount_path.clone(),
            read_only: volume.always_read_only || vm.read_only == Some(true),
        });
    }
    Ok(mounts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> PodFacts {
        PodFacts {
            pod_ip: "10.245.1.2".into(),
            host_ip: "10.245.0.1".into(),
            node_name: "process-node-0".into(),
        }
    }

    #[test]
    fn config_maps_get_the_kubelet_layout_with_items_and_modes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "volumeMounts": [
                    {"name": "conf", "mountPath": "/etc/app"},
                    {"name": "conf", "mountPath": "/etc/one.conf", "subPath": "nested/one.conf"}]}],
                "volumes": [{"name": "conf", "configMap": {"name": "cm", "defaultMode": 0o600,
                    "items": [{"key": "a", "path": "nested/one.conf"}, {"key": "b", "path": "two", "mode": 0o644}]}}]}
        }))
        .expect("pod");
        let mut sources = Sources::default();
        sources.config_maps.insert(
            "cm".into(),
            Some(
                serde_json::from_value(serde_json::json!({"data": {"a": "A", "b": "B", "c": "C"}}))
                    .expect("cm"),
            ),
        );
        let volumes = prepare(&pod, &facts(), dir.path(), &sources).expect("prepare");
        let conf = dir.path().join("conf");
        let data = std::fs::read_link(conf.join("..data")).expect("..data");
        assert!(data.to_string_lossy().starts_with("..20"), "{data:?}");
        assert_eq!(
            std::fs::read_link(conf.join("two")).expect("link"),
            PathBuf::from("..data/two")
        );
        assert_eq!(
            std::fs::read_to_string(conf.join("nested/one.conf")).expect("read"),
            "A"
        );
        assert!(!conf.join("c").exists());
        let mode = |p: &str| {
            std::fs::metadata(conf.join(p))
                .expect("meta")
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!((mode("nested/one.conf"), mode("two")), (0o600, 0o644));

        let container = &pod.spec.as_ref().expect("spec").containers[0];
        let mounts = container_mounts(container, &volumes).expect("mounts");
        assert!(mounts.iter().all(|m| m.read_only));
        assert!(mounts[1].source.ends_with("nested/one.conf"));
        assert!(mounts[1].source.to_string_lossy().contains("..20"));
    }

    #[test]
    fn a_missing_key_in_items_fails_the_mount() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c"}],
                "volumes": [{"name": "conf", "secret": {"secretName": "s", "items": [{"key": "nope", "path": "x"}]}}]}
        }))
        .expect("pod");
        let mut sources = Sources::default();
        sources.secrets.insert("s".into(), Some(Default::default()));
        let err = prepare(&pod, &facts(), dir.path(), &sources).expect_err("missing key");
        assert!(
            err.message.contains("non-existent config key: nope"),
            "{}",
            err.message
        );
    }
}
