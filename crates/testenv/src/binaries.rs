//! Where the control plane's binaries come from.
//!
//! They are built from Go modules by `testenv/kube-bins/build.sh` into a cache
//! directory outside the repository, keyed by the Kubernetes version; a warm cache
//! makes the script return at once. `RATCHET_KUBE_BIN_DIR` points at an existing
//! directory instead (for machines that built them elsewhere).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::error::{Result, TestEnvError};

/// The directory holding `etcd`, `kube-apiserver`, `kube-controller-manager`,
/// `kubectl` and `kube-proxy`.
#[derive(Clone, Debug)]
pub struct KubeBinaries {
    dir: PathBuf,
}

impl KubeBinaries {
    /// Binaries in a given directory, as they are (no build).
    pub fn at(dir: impl Into<PathBuf>) -> KubeBinaries {
        KubeBinaries { dir: dir.into() }
    }

    pub fn etcd(&self) -> PathBuf {
        self.dir.join("etcd")
    }
    pub fn kube_apiserver(&self) -> PathBuf {
        self.dir.join("kube-apiserver")
    }
    pub fn kube_controller_manager(&self) -> PathBuf {
        self.dir.join("kube-controller-manager")
    }
    pub fn kubectl(&self) -> PathBuf {
        self.dir.join("kubectl")
    }
    /// Only the process kubelet's node runs it; [`KubeBinaries::check`] does not
    /// ask for it, so a control plane alone starts without it.
    pub fn kube_proxy(&self) -> PathBuf {
        self.dir.join("kube-proxy")
    }
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Finds the binaries, building them on first use. The build runs once per
    /// process even when many tests ask at the same time.
    pub fn ensure() -> Result<KubeBinaries> {
        static BUILT: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
        let dir = BUILT
            .get_or_init(|| locate_or_build().map_err(|e| e.to_string()))
            .clone()
            .map_err(|detail| TestEnvError::BuildFailed {
                script: build_script(),
                detail,
            })?;
        let binaries = KubeBinaries { dir };
        binaries.check()?;
        Ok(binaries)
    }

    /// An error naming the first component whose binary is missing.
    pub fn check(&self) -> Result<()> {
        for (component, path) in [
            ("etcd", self.etcd()),
            ("kube-apiserver", self.kube_apiserver()),
            ("kube-controller-manager", self.kube_controller_manager()),
        ] {
            if !path.is_file() {
                return Err(TestEnvError::BinaryMissing { component, path });
            }
        }
        Ok(())
    }
}

/// An error unless `go` runs: the binaries are built from Go modules.
pub fn check_go(go: &Path) -> Result<()> {
    match Command::new(go).arg("version").output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(TestEnvError::GoMissing(format!(
            "`{} version` failed: {}",
            go.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
        Err(e) => Err(TestEnvError::GoMissing(format!(
            "`{}` could not run ({e}); install Go 1.26 or set RATCHET_KUBE_BIN_DIR to prebuilt binaries",
            go.display()
        ))),
    }
}

/// The build script in this repository (found from this crate's source location).
pub fn build_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testenv/kube-bins/build.sh")
}

fn locate_or_build() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("RATCHET_KUBE_BIN_DIR") {
        return Ok(PathBuf::from(dir));
    }
    check_go(Path::new("go"))?;
    let script = build_script();
    tracing::info!(script = %script.display(), "ensuring Kubernetes binaries (first build takes several minutes)");
    run_build_script(&script).map_err(|detail| TestEnvError::BuildFailed { script, detail })
}

/// Runs a build script with its progress on this process's stderr (a cold
/// build takes minutes and must not look hung) and returns the path it prints
/// last. On failure the script has printed its log's tail and the log's name.
fn run_build_script(script: &Path) -> std::result::Result<PathBuf, String> {
    let out = Command::new("bash")
        .arg(script)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not run it: {e}"))?;
    if !out.status.success() {
        return Err(format!("{}; its output above names the log", out.status));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let path = stdout.lines().last().unwrap_or_default().trim();
    if path.is_empty() {
        return Err("the script printed no path".into());
    }
    Ok(PathBuf::from(path))
}

/// The helm binary, built from the Go module proxy on first use
/// (`testenv/helm-bin/build.sh`, cached like the Kubernetes binaries).
/// `RATCHET_HELM` points at an existing binary instead.
pub fn ensure_helm() -> Result<PathBuf> {
    static BUILT: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    ensure_go_tool(&BUILT, "RATCHET_HELM", "helm-bin")
}

/// The umoci binary, which writes and reads the operator's OCI image
/// (`scripts/image`), built like helm by `testenv/umoci-bin/build.sh`.
/// `RATCHET_UMOCI` points at an existing binary instead.
pub fn ensure_umoci() -> Result<PathBuf> {
    static BUILT: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    ensure_go_tool(&BUILT, "RATCHET_UMOCI", "umoci-bin")
}

/// The CoreDNS binary serving the process kubelet's cluster DNS, built with
/// only the plugins `testenv/coredns-bin/main.go` links, by its `build.sh`
/// like helm. `RATCHET_COREDNS` points at an existing binary instead.
pub fn ensure_coredns() -> Result<PathBuf> {
    static BUILT: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    ensure_go_tool(&BUILT, "RATCHET_COREDNS", "coredns-bin")
}

/// A single-binary Go tool: the path in `env_var`, or the one
/// `testenv/<dir>/build.sh` prints, built once per process (`built` holds it).
fn ensure_go_tool(
    built: &'static OnceLock<std::result::Result<PathBuf, String>>,
    env_var: &str,
    dir: &str,
) -> Result<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testenv")
        .join(dir)
        .join("build.sh");
    built
        .get_or_init(|| {
            if let Some(path) = std::env::var_os(env_var) {
                return Ok(PathBuf::from(path));
            }
            check_go(Path::new("go")).map_err(|e| e.to_string())?;
            run_build_script(&script)
        })
        .clone()
        .map_err(|detail| TestEnvError::BuildFailed { script, detail })
}
