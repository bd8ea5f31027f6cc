//! Where the control plane's binaries come from.
//!
//! They are built from Go modules by `testenv/kube-bins/build.sh` into a cache
//! directory outside the repository, keyed by the Kubernetes version; a warm cache
//! makes the script return at once. `RATCHET_KUBE_BIN_DIR` points at an existing
//! directory instead (for machines that built them elsewhere).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::error::{Result, TestEnvError};

/// The directory holding `etcd`, `kube-apiserver`, `kube-controller-manager`, `kubectl`.
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
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .map_err(|source| TestEnvError::Io {
            path: script.clone(),
            source,
        })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        return Err(TestEnvError::BuildFailed {
            script,
            detail: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        });
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let dir = stdout.lines().last().unwrap_or_default().trim().to_string();
    if dir.is_empty() {
        return Err(TestEnvError::BuildFailed {
            script,
            detail: "the script printed no output directory".into(),
        });
    }
    Ok(PathBuf::from(dir))
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
            let out = Command::new("bash")
                .arg(&script)
                .output()
                .map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(String::from_utf8_lossy(&out.stderr).into_owned());
            }
            let path = String::from_utf8_lossy(&out.stdout)
                .lines()
                .last()
                .unwrap_or_default()
                .trim()
                .to_string();
            Ok(PathBuf::from(path))
        })
        .clone()
        .map_err(|detail| TestEnvError::BuildFailed { script, detail })
}
