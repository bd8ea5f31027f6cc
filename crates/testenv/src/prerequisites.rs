//! What real pods need of this machine before anything starts: root, the
//! Debian packages of `testenv/debian-packages.txt` (the one list, which
//! `scripts/test` reads too) and room for the images in the cache.
//!
//! [`missing`] and [`verdict`] are pure, so every answer is tested with
//! fixtures; [`Machine::inspect`] looks at this machine and [`install`] runs
//! `apt-get` as root.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The checked-in list (read at build time, so an installed binary carries it).
const LIST: &str = include_str!("../../../testenv/debian-packages.txt");

/// What a virtualenv image takes in the cache once built: cinder 28.0.0's
/// measured 487 MiB (bytecode included; the largest of the service images),
/// rounded up.
pub const VENV_IMAGE_BYTES: u64 = 600 << 20;

/// How a package is seen to be installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// An executable file at this path.
    File(PathBuf),
    /// A command on `PATH` (where its path differs between releases).
    Command(String),
    /// The interpreter imports the module (`python3.11-venv`: `ensurepip`).
    PythonModule { python: PathBuf, module: String },
}

/// Who needs a package.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// Real pods: the process kubelet, the real tests, `ratchet demo --real`.
    Pods,
    /// `scripts/test`'s own tools.
    Scripts,
}

/// One line of the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub package: String,
    pub probe: Probe,
    pub purpose: Purpose,
}

/// Parses the list's format: `PACKAGE PROBE FOR` a line, `#` comments.
pub fn parse(text: &str) -> Result<Vec<Requirement>, String> {
    let mut requirements = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [package, probe, purpose] = fields[..] else {
            return Err(format!("line {}: {line:?} is not PACKAGE PROBE FOR", n + 1));
        };
        let probe = match probe.split_once(':') {
            Some((python, module)) if python.starts_with('/') => Probe::PythonModule {
                python: python.into(),
                module: module.into(),
            },
            _ if probe.starts_with('/') => Probe::File(probe.into()),
            _ => Probe::Command(probe.into()),
        };
        let purpose = match purpose {
            "pods" => Purpose::Pods,
            "scripts" => Purpose::Scripts,
            other => {
                return Err(format!(
                    "line {}: {other:?} is neither pods nor scripts",
                    n + 1
                ));
            }
        };
        requirements.push(Requirement {
            package: package.into(),
            probe,
            purpose,
        });
    }
    Ok(requirements)
}

/// The checked-in list.
pub fn requirements() -> Result<Vec<Requirement>, String> {
    parse(LIST).map_err(|e| format!("testenv/debian-packages.txt: {e}"))
}

/// The packages for `purposes` whose probe `present` denies, each once, in
/// the list's order.
pub fn missing(
    requirements: &[Requirement],
    purposes: &[Purpose],
    present: impl Fn(&Probe) -> bool,
) -> Vec<String> {
    let mut seen = BTreeSet::new();
    requirements
        .iter()
        .filter(|r| purposes.contains(&r.purpose) && !present(&r.probe))
        .filter(|r| seen.insert(r.package.clone()))
        .map(|r| r.package.clone())
        .collect()
}

/// Whether a probe holds on this machine.
pub fn present_here(probe: &Probe) -> bool {
    match probe {
        Probe::File(path) => is_executable(path),
        Probe::Command(name) => std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|d| is_executable(&d.join(name)))
        }),
        Probe::PythonModule { python, module } => Command::new(python)
            .args(["-c", &format!("import {module}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success()),
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What the checks found on a machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    pub root: bool,
    /// Debian packages missing, in the list's order.
    pub missing: Vec<String>,
    /// The cache directory, and the bytes free on its filesystem (`None`
    /// when that could not be read: then nothing is claimed).
    pub cache_dir: PathBuf,
    pub free_bytes: Option<u64>,
}

impl Machine {
    /// This machine, for `purposes`, with the cache at `cache_dir`.
    pub fn inspect(purposes: &[Purpose], cache_dir: &Path) -> Result<Machine, String> {
        Ok(Machine {
            // SAFETY: geteuid has no preconditions.
            root: unsafe { libc::geteuid() } == 0,
            missing: missing(&requirements()?, purposes, present_here),
            cache_dir: cache_dir.to_path_buf(),
            free_bytes: free_bytes(cache_dir),
        })
    }
}

/// What to do before starting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Everything is in place.
    Ready,
    /// Install these packages (as root, which the process is), then go on.
    Install(Vec<String>),
    /// Stop: one line saying why and what to run.
    Stop(String),
}

/// Decides from what was found: `needed_bytes` is what the run will write
/// into the cache (images not built yet); `as_root` the command line to run
/// again as root.
pub fn verdict(machine: &Machine, needed_bytes: u64, as_root: &str) -> Verdict {
    let mut problems = Vec::new();
    if !machine.root {
        let packages = match machine.missing.is_empty() {
            true => String::new(),
            false => format!(
                " and Debian packages that are missing here ({}), which it installs as root",
                machine.missing.join(" ")
            ),
        };
        problems.push(format!(
            "needs root (real pods need network namespaces, bind mounts and other uids){packages}: run `{as_root}`"
        ));
    }
    if let Some(free) = machine.free_bytes
        && free < needed_bytes
    {
        problems.push(format!(
            "needs {} free under {} for the images it builds and has {}: free some space, or point RATCHET_CACHE_DIR at a roomier filesystem",
            gib(needed_bytes),
            machine.cache_dir.display(),
            gib(free)
        ));
    }
    match (problems.is_empty(), machine.missing.is_empty()) {
        (false, _) => Verdict::Stop(problems.join("; ")),
        (true, true) => Verdict::Ready,
        (true, false) => Verdict::Install(machine.missing.clone()),
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// Bytes free for an unprivileged writer on the filesystem that holds
/// `path`, or would once it is made (its nearest existing ancestor).
pub fn free_bytes(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let c_path = CString::new(existing.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a NUL-terminated path and a buffer statvfs fills on success.
    if unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled the buffer.
    let stat = unsafe { stat.assume_init() };
    // The field types differ between targets (u32 on some 32-bit ones).
    #[allow(clippy::useless_conversion)]
    let free = u64::from(stat.f_bavail).saturating_mul(u64::from(stat.f_frsize));
    Some(free)
}

/// Installs `packages` with apt-get (as root), printing one progress line
/// and, on failure, apt's own last words.
pub fn install(packages: &[String], who: &str) -> Result<(), String> {
    println!("{who}: installing Debian packages: {}", packages.join(" "));
    let steps: [Vec<&str>; 2] = [
        vec!["update", "-qq"],
        ["install", "-y", "-qq", "--no-install-recommends"]
            .into_iter()
            .chain(packages.iter().map(String::as_str))
            .collect(),
    ];
    for args in steps {
        let out = Command::new("apt-get")
            .args(&args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                format!(
                    "could not run apt-get ({e}); install {} by hand",
                    packages.join(" ")
                )
            })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            return Err(format!(
                "apt-get {} failed ({}): {last}",
                args.first().copied().unwrap_or_default(),
                out.status
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Vec<Requirement> {
        parse(
            "# comment\n\
             bubblewrap /usr/bin/bwrap pods\n\
             util-linux /usr/bin/setpriv pods\n\
             util-linux /usr/bin/nsenter pods\n\
             iproute2 ip pods\n\
             python3.11-venv /usr/bin/python3.11:ensurepip pods\n\
             jq /usr/bin/jq scripts\n",
        )
        .expect("the fixture parses")
    }

    #[test]
    fn the_checked_in_list_parses_and_names_what_real_pods_run() {
        let list = requirements().expect("testenv/debian-packages.txt parses");
        for package in [
            "bubblewrap",
            "util-linux",
            "iproute2",
            "python3.11-venv",
            "mariadb-server",
        ] {
            assert!(
                list.iter()
                    .any(|r| r.package == package && r.purpose == Purpose::Pods),
                "{package}"
            );
        }
        assert!(
            list.iter()
                .any(|r| r.package == "jq" && r.purpose == Purpose::Scripts)
        );
    }

    #[test]
    fn probes_of_each_kind_are_read_from_the_list() {
        let list = fixture();
        assert_eq!(list[0].probe, Probe::File("/usr/bin/bwrap".into()));
        assert_eq!(list[3].probe, Probe::Command("ip".into()));
        assert_eq!(
            list[4].probe,
            Probe::PythonModule {
                python: "/usr/bin/python3.11".into(),
                module: "ensurepip".into()
            }
        );
        assert!(parse("bubblewrap /usr/bin/bwrap\n").is_err());
        assert!(parse("bubblewrap /usr/bin/bwrap everyone\n").is_err());
    }

    #[test]
    fn what_is_missing_is_each_package_once_for_the_purposes_asked() {
        let list = fixture();
        // A fresh machine: nothing there.
        assert_eq!(
            missing(&list, &[Purpose::Pods], |_| false),
            ["bubblewrap", "util-linux", "iproute2", "python3.11-venv"]
        );
        assert_eq!(
            missing(&list, &[Purpose::Pods, Purpose::Scripts], |_| false)
                .last()
                .map(String::as_str),
            Some("jq")
        );
        // One probe of a package failing is enough; venv support without bwrap.
        let there = |p: &Probe| {
            !matches!(p, Probe::File(f) if f.ends_with("nsenter"))
                && !matches!(p, Probe::PythonModule { .. })
        };
        assert_eq!(
            missing(&list, &[Purpose::Pods], there),
            ["util-linux", "python3.11-venv"]
        );
        assert!(missing(&list, &[Purpose::Pods], |_| true).is_empty());
    }

    fn machine(root: bool, missing: &[&str], free_gib: u64) -> Machine {
        Machine {
            root,
            missing: missing.iter().map(|p| p.to_string()).collect(),
            cache_dir: "/root/.cache/ratchet/images".into(),
            free_bytes: Some(free_gib << 30),
        }
    }

    #[test]
    fn root_installs_what_is_missing_and_anyone_else_is_told_what_to_run() {
        let rerun = "sudo -E env \"PATH=$PATH\" ratchet demo --real";
        assert_eq!(
            verdict(&machine(true, &[], 10), 1 << 30, rerun),
            Verdict::Ready
        );
        assert_eq!(
            verdict(
                &machine(true, &["bubblewrap", "iproute2"], 10),
                1 << 30,
                rerun
            ),
            Verdict::Install(vec!["bubblewrap".into(), "iproute2".into()])
        );
        let Verdict::Stop(line) = verdict(&machine(false, &["bubblewrap"], 10), 1 << 30, rerun)
        else {
            panic!("not root: stop");
        };
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.contains("needs root") && line.contains("bubblewrap"),
            "{line}"
        );
        assert!(line.ends_with(&format!("run `{rerun}`")), "{line}");
        // Not root, nothing missing: root is still needed.
        assert!(matches!(
            verdict(&machine(false, &[], 10), 0, rerun),
            Verdict::Stop(_)
        ));
    }

    #[test]
    fn too_little_room_for_the_images_stops_before_installing_anything() {
        let Verdict::Stop(line) = verdict(&machine(true, &["jq"], 1), 3 * VENV_IMAGE_BYTES, "x")
        else {
            panic!("1 GiB free for 3 images: stop");
        };
        assert!(
            line.contains("1.8 GiB free under /root/.cache/ratchet/images"),
            "{line}"
        );
        assert!(
            line.contains("has 1.0 GiB") && line.contains("RATCHET_CACHE_DIR"),
            "{line}"
        );
        // Unknown free space claims nothing.
        let unknown = Machine {
            free_bytes: None,
            ..machine(true, &[], 0)
        };
        assert_eq!(verdict(&unknown, u64::MAX, "x"), Verdict::Ready);
    }

    #[test]
    fn free_space_is_read_from_the_nearest_existing_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let free = free_bytes(&dir.path().join("not/yet/made")).expect("statvfs");
        assert!(free > 0);
        assert_eq!(free_bytes(Path::new("")), None);
    }
}
