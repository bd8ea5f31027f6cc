//! Starting one container as a real process: Debian's `bubblewrap` builds its
//! filesystem and namespaces, util-linux's `setpriv` its identity.
//!
//! Why these tools: bubblewrap is a small, audited sandbox builder already
//! packaged by Debian; as root it makes a private mount, UTS, IPC and PID
//! namespace, a tmpfs root with the host's `/usr`, `/etc`, … bound read-only,
//! the pod's volumes bound at their `mountPath`s, and `--as-pid-1` makes the
//! command PID 1 of its own PID namespace, as in a real container (no default
//! signal handlers; every process of the container dies with it). It creates
//! mount points only inside its tmpfs, so no bind ever writes to the host's
//! directories: a host directory that holds a mount point is rebuilt in the
//! tmpfs from its children. `setpriv` then sets uid, gid, groups,
//! `no_new_privs` and the capability bounding set, and re-arms the parent-death
//! signal the uid change clears. The network namespace is the pod's, entered
//! with `setns` between fork and exec.
//!
//! Lifetime: bubblewrap is forked from the long-lived spawner thread with
//! `PR_SET_PDEATHSIG=SIGKILL` (see `process.rs`) and runs with
//! `--die-with-parent`. That alone kills only containers of bubblewrap's own
//! user: the parent-death signal is permission-checked and bubblewrap's monitor
//! holds no `CAP_KILL`, so a container running as another user would outlive
//! it. The container's guard in `container.rs` kills it when its pod goes, and
//! at the test process's exit; a test process killed outright leaves its
//! containers to the next process kubelet, which kills them (`reaper.rs`).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::spec::{self, Identity, Mount};
use crate::error::{Result, TestEnvError};
use crate::process::spawn_tied_to_process;

/// Host top-level entries a container sees (read-only). Everything else at `/`
/// (home directories, `/work`, `/tmp`, …) stays out.
const ROOT_ENTRIES: &[&str] = &[
    "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "var",
];
/// Directories bubblewrap makes fresh, never bound from the host.
const FRESH: &[&str] = &["/dev", "/proc", "/tmp", "/run"];

/// Everything needed to start one container process.
#[derive(Clone, Debug)]
pub struct LaunchSpec {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub working_dir: Option<String>,
    pub hostname: String,
    pub identity: Identity,
    /// Image, volume and kubelet-managed mounts (termination log, /etc/hosts).
    pub mounts: Vec<Mount>,
    pub netns: PathBuf,
    pub log: PathBuf,
}

/// A started container: bubblewrap (our child) and the container's PID 1.
pub struct Started {
    pub child: Child,
    /// The container process as this process sees it (signal this one).
    pub pid: i32,
}

fn ancestors_of(dest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut path = String::new();
    let parts: Vec<&str> = dest.split('/').filter(|p| !p.is_empty()).collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        path.push('/');
        path.push_str(part);
        out.push(path.clone());
    }
    out
}

fn push(args: &mut Vec<String>, items: &[&str]) {
    args.extend(items.iter().map(|s| s.to_string()));
}

/// Binds the children of the host directory `dir`, rebuilding the ones that
/// hold mount points (`expand`) as fresh directories.
fn layout_dir(dir: &str, expand: &BTreeSet<String>, args: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(if dir.is_empty() { "/" } else { dir }) else {
        return;
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        if dir.is_empty() && !ROOT_ENTRIES.contains(&name.as_str()) {
            continue;
        }
        let path = format!("{dir}/{name}");
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(target) = std::fs::read_link(&path) {
                push(args, &["--symlink", &target.to_string_lossy(), &path]);
            }
        } else if meta.is_dir() {
            if expand.contains(&path) {
                push(args, &["--dir", &path]);
                layout_dir(&path, expand, args);
            } else {
                push(args, &["--ro-bind", &path, &path]);
            }
        } else if meta.is_file() {
            push(args, &["--ro-bind", &path, &path]);
        }
    }
}

/// A mount destination with the symlinks of the host directories the
/// container sees resolved (`/var/run/…` → `/run/…`). bubblewrap builds the
/// root before it pivots into it, so an absolute symlink on the way to a mount
/// point would otherwise resolve against the host's root.
pub fn resolve_dest(dest: &str) -> String {
    let mut parts: Vec<String> = dest
        .split('/')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    let mut i = 0;
    let mut hops = 0;
    while i < parts.len() && hops < 40 {
        let top = parts.first().map(String::as_str).unwrap_or_default();
        if !ROOT_ENTRIES.contains(&top) {
            break;
        }
        let prefix = format!("/{}", parts[..=i].join("/"));
        match std::fs::read_link(&prefix) {
            Ok(target) => {
                hops += 1;
                let target = target.to_string_lossy().into_owned();
                let base: Vec<String> = if target.starts_with('/') {
                    Vec::new()
                } else {
                    parts[..i].to_vec()
                };
                let mut resolved = base;
                for part in target.split('/').filter(|p| !p.is_empty()) {
                    match part {
                        "." => {}
                        ".." => {
                            resolved.pop();
                        }
                        other => resolved.push(other.to_string()),
                    }
                }
                let rest = parts[i + 1..].to_vec();
                resolved.extend(rest);
                parts = resolved;
                i = 0;
            }
            Err(_) => i += 1,
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether `dir` is a directory in the container's view before bubblewrap
/// makes anything: under a mount, or one of the host directories it sees.
fn visible_dir(dir: &str, mounts: &[Mount]) -> bool {
    let top = dir.split('/').find(|p| !p.is_empty()).unwrap_or_default();
    let mounted = mounts
        .iter()
        .any(|m| dir == m.dest || dir.starts_with(&format!("{}/", m.dest.trim_end_matches('/'))));
    (mounted || ROOT_ENTRIES.contains(&top)) && spec::host_path(dir, mounts).is_dir()
}

/// bubblewrap's arguments for the container's filesystem (pure apart from
/// listing host directories). A `working_dir` that does not exist is made, as
/// runc makes it.
pub fn filesystem_args(
    mounts: &[Mount],
    read_only_root: bool,
    working_dir: Option<&str>,
) -> Vec<String> {
    let mounts: Vec<Mount> = mounts
        .iter()
        .map(|m| Mount {
            dest: resolve_dest(&m.dest),
            ..m.clone()
        })
        .collect();
    let mut ancestors: BTreeSet<String> =
        mounts.iter().flat_map(|m| ancestors_of(&m.dest)).collect();
    if let Some(dir) = working_dir.map(resolve_dest)
        && dir != "/"
        && !visible_dir(&dir, &mounts)
    {
        ancestors.extend(ancestors_of(&format!("{dir}/.")));
    }
    let expand: BTreeSet<String> = ancestors
        .iter()
        .filter(|a| {
            !FRESH
                .iter()
                .any(|f| *a == f || a.starts_with(&format!("{f}/")))
        })
        .cloned()
        .collect();
    let mut args = Vec::new();
    layout_dir("", &expand, &mut args);
    // /dev/shm is a world-writable tmpfs, as container runtimes give every
    // container: POSIX semaphores live there (Python's multiprocessing locks).
    push(
        &mut args,
        &[
            "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm", "--proc", "/proc",
            "--tmpfs", "/run",
        ],
    );
    if read_only_root {
        push(&mut args, &["--dir", "/tmp"]);
    } else {
        // Sticky and world-writable, as images ship /tmp (Python's tempfile
        // needs it for any non-root user).
        push(&mut args, &["--perms", "1777", "--tmpfs", "/tmp"]);
    }
    // bubblewrap makes missing parents of a mount point 0700, which a non-root
    // container could not cross: make every one explicitly, 0755, parents first.
    let laid_out: BTreeSet<String> = args
        .windows(2)
        .filter(|w| w[0] == "--dir")
        .map(|w| w[1].clone())
        .collect();
    let mut missing: Vec<&String> = ancestors
        .iter()
        .filter(|a| !laid_out.contains(*a) && !FRESH.contains(&a.as_str()))
        .collect();
    missing.sort_by_key(|a| a.matches('/').count());
    for dir in missing {
        push(&mut args, &["--perms", "0755", "--dir", dir]);
    }
    let mut sorted: Vec<&Mount> = mounts.iter().collect();
    sorted.sort_by_key(|m| m.dest.split('/').filter(|p| !p.is_empty()).count());
    let mut bound: Vec<&str> = Vec::new();
    for m in sorted {
        // A parent inside a volume bound before (a mount nested two levels
        // into an emptyDir) would be made 0700 too: make it 0755 in that
        // volume, as a container runtime makes a mount point's parents.
        for dir in ancestors_of(&m.dest) {
            if bound.iter().any(|b| dir.starts_with(&format!("{b}/"))) {
                push(&mut args, &["--perms", "0755", "--dir", &dir]);
            }
        }
        let flag = if m.read_only { "--ro-bind" } else { "--bind" };
        push(&mut args, &[flag, &m.source.to_string_lossy(), &m.dest]);
        bound.push(&m.dest);
    }
    if read_only_root {
        push(&mut args, &["--remount-ro", "/"]);
    }
    args
}

/// `setpriv`'s arguments for the identity, ending with `--`.
pub fn identity_args(id: &Identity) -> Vec<String> {
    let mut args = vec![
        "--reuid".to_string(),
        id.uid.to_string(),
        "--regid".to_string(),
        id.gid.to_string(),
    ];
    if id.groups.is_empty() {
        args.push("--clear-groups".into());
    } else {
        args.push("--groups".into());
        args.push(
            id.groups
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    if id.no_new_privs {
        args.push("--nnp".into());
    }
    if id.capabilities != ["all"] {
        args.push("--inh-caps=-all".into());
        let mut set = "-all".to_string();
        for cap in &id.capabilities {
            set.push_str(",+");
            set.push_str(cap);
        }
        args.push(format!("--bounding-set={set}"));
    }
    args.push("--pdeathsig=keep".into());
    args.push("--".into());
    args
}

/// The full command line: `bwrap … -- setpriv … -- argv`.
pub fn command_line(spec: &LaunchSpec) -> Vec<String> {
    let mut args = vec![
        "--die-with-parent".to_string(),
        "--new-session".into(),
        "--unshare-uts".into(),
        "--unshare-ipc".into(),
        "--unshare-pid".into(),
        "--as-pid-1".into(),
        "--hostname".into(),
        spec.hostname.clone(),
        "--info-fd".into(),
        "3".into(),
    ];
    args.extend(filesystem_args(
        &spec.mounts,
        spec.identity.read_only_root,
        spec.working_dir.as_deref(),
    ));
    if let Some(dir) = &spec.working_dir {
        push(&mut args, &["--chdir", dir]);
    }
    args.push("--".into());
    args.push("/usr/bin/setpriv".into());
    args.extend(identity_args(&spec.identity));
    args.extend(spec.argv.iter().cloned());
    args
}

fn io_err(path: &Path, source: std::io::Error) -> TestEnvError {
    TestEnvError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Starts the container; blocks until bubblewrap reports the container's pid
/// (or exits). Call from a blocking context.
pub fn start(spec: &LaunchSpec) -> Result<Started> {
    use std::os::unix::process::CommandExt;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.log)
        .map_err(|e| io_err(&spec.log, e))?;
    let log_err = log.try_clone().map_err(|e| io_err(&spec.log, e))?;
    let netns = File::open(&spec.netns).map_err(|e| io_err(&spec.netns, e))?;
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io_err(Path::new("pipe"), std::io::Error::last_os_error()));
    }
    // SAFETY: both descriptors were just created and are owned here only.
    let (info_read, info_write) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };

    let mut command = Command::new("/usr/bin/bwrap");
    command
        .args(command_line(spec))
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(super::reaper::OWNER_VAR, super::reaper::owner_mark())
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log_err));
    let netns_fd = netns.as_raw_fd();
    let write_fd = info_write.as_raw_fd();
    // SAFETY: between fork and exec only async-signal-safe calls (setns, dup2).
    unsafe {
        command.pre_exec(move || {
            if libc::setns(netns_fd, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::dup2(write_fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = spawn_tied_to_process(command).map_err(|source| TestEnvError::Spawn {
        component: "bwrap (container)",
        source,
    })?;
    drop(info_write);
    drop(netns);
    let mut info = String::new();
    let mut reader = File::from(info_read);
    let _ = reader.read_to_string(&mut info);
    let pid = serde_json::from_str::<serde_json::Value>(&info)
        .ok()
        .and_then(|v| v.get("child-pid").and_then(|p| p.as_i64()))
        .map(|p| p as i32)
        .unwrap_or(child.id() as i32);
    Ok(Started { child, pid })
}

/// An exec probe's command line: enter the container's namespaces and root,
/// take its identity, run `command`.
pub fn exec_command_line(pid: i32, identity: &Identity, command: &[String]) -> Vec<String> {
    let mut args = vec![
        format!("--target={pid}"),
        "--mount".to_string(),
        "--uts".into(),
        "--ipc".into(),
        "--net".into(),
        "--pid".into(),
        "--root".into(),
        "--wd".into(),
        "--".into(),
        "/usr/bin/setpriv".into(),
    ];
    args.extend(identity_args(identity));
    args.extend(command.iter().cloned());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_under_a_host_directory_rebuilds_that_directory_from_its_children() {
        let mounts = vec![Mount {
            source: PathBuf::from("/tmp/x"),
            dest: "/etc/ratchet-test/app.conf".into(),
            read_only: true,
        }];
        let args = filesystem_args(&mounts, false, None);
        let joined = args.join(" ");
        assert!(joined.contains("--dir /etc "), "{joined}");
        assert!(!joined.contains("--ro-bind /etc /etc"), "{joined}");
        assert!(joined.contains("--ro-bind /usr /usr"), "{joined}");
        assert!(
            joined.ends_with("--ro-bind /tmp/x /etc/ratchet-test/app.conf"),
            "{joined}"
        );
        assert!(!joined.contains("/work"), "{joined}");
    }

    #[test]
    fn missing_parents_of_mount_points_are_made_traversable() {
        let mounts = vec![Mount {
            source: PathBuf::from("/tmp/venv"),
            dest: "/opt/venv".into(),
            read_only: true,
        }];
        let joined = filesystem_args(&mounts, false, None).join(" ");
        assert!(
            joined.contains("--perms 0755 --dir /opt --ro-bind /tmp/venv /opt/venv"),
            "{joined}"
        );
    }

    #[test]
    fn parents_inside_a_bound_volume_are_made_traversable_before_the_nested_bind() {
        let mount = |source: &str, dest: &str| Mount {
            source: PathBuf::from(source),
            dest: dest.into(),
            read_only: false,
        };
        let mounts = vec![
            mount("/tmp/claim", "/var/lib/cinder/backends/files-a"),
            mount("/tmp/state", "/var/lib/cinder"),
        ];
        let joined = filesystem_args(&mounts, false, None).join(" ");
        assert!(
            joined.ends_with(
                "--bind /tmp/state /var/lib/cinder \
                 --perms 0755 --dir /var/lib/cinder/backends \
                 --bind /tmp/claim /var/lib/cinder/backends/files-a"
            ),
            "{joined}"
        );
    }

    #[test]
    fn a_missing_working_dir_is_made_and_an_existing_one_left_alone() {
        let made = filesystem_args(&[], false, Some("/srv/app/work")).join(" ");
        assert!(made.contains("--perms 0755 --dir /srv/app/work"), "{made}");
        let existing = filesystem_args(&[], false, Some("/usr/bin")).join(" ");
        assert!(!existing.contains("--dir /usr"), "{existing}");
    }

    #[test]
    fn symlinked_destinations_resolve_inside_the_container_root() {
        // Debian: /bin -> usr/bin (relative), /var/run -> /run (absolute).
        if std::fs::read_link("/bin").is_ok() {
            assert_eq!(resolve_dest("/bin/x"), "/usr/bin/x");
        }
        if std::fs::read_link("/var/run").is_ok() {
            assert_eq!(resolve_dest("/var/run/secrets/token"), "/run/secrets/token");
        }
        assert_eq!(resolve_dest("/etc/app/x.conf"), "/etc/app/x.conf");
        assert_eq!(resolve_dest("/scratch"), "/scratch");
    }

    #[test]
    fn identity_becomes_setpriv_flags() {
        let id = Identity {
            uid: 1000,
            gid: 1000,
            groups: vec![2000],
            no_new_privs: true,
            capabilities: vec!["net_bind_service".into()],
            read_only_root: false,
        };
        assert_eq!(
            identity_args(&id).join(" "),
            "--reuid 1000 --regid 1000 --groups 2000 --nnp --inh-caps=-all --bounding-set=-all,+net_bind_service --pdeathsig=keep --"
        );
    }
}
