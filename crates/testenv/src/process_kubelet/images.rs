//! Images for real pods: an image reference resolves through the checked-in
//! catalogue (`testenv/images/catalogue.json`) to a runtime root on this machine.
//!
//! - `host` images run the host's binaries (Debian packages `scripts/test`
//!   installs): the container sees the host's `/usr`, `/etc`, … read-only.
//! - `venv` images add a Python virtualenv with pinned PyPI packages at
//!   `/opt/venv`, built once by `testenv/images/build-venv.sh` into
//!   `${RATCHET_CACHE_DIR:-~/.cache/ratchet}/images/<name>-<hash>`; the hash
//!   covers the catalogue entry and the build script, so changing either
//!   rebuilds, and a warm cache costs one `stat`.
//!
//! An image missing from the catalogue is an `ErrImagePull`, never a silent
//! success.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{Result, TestEnvError};

/// Where a venv image's root is mounted in its containers.
pub const VENV_MOUNT: &str = "/opt/venv";

/// Where the catalogue's images live: `ratchet.test/<name>:<tag>`.
pub const REPOSITORY_HOST: &str = "ratchet.test";

/// The catalogue's repository of `name`'s images (`ratchet.test/cinder`).
pub fn repository(name: &str) -> String {
    format!("{REPOSITORY_HOST}/{name}")
}

/// One catalogue entry.
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ImageEntry {
    pub kind: ImageKind,
    #[serde(default)]
    pub description: String,
    /// Debian packages providing a host image's binaries (documentation; `scripts/test` installs them).
    #[serde(default)]
    pub debian_packages: Vec<String>,
    /// The interpreter a venv is made with.
    #[serde(default)]
    pub python: Option<String>,
    /// PyPI requirements of a venv: pinned here, or by `constraints`.
    #[serde(default)]
    pub packages: Vec<String>,
    /// A pip constraints file every package of the venv is held to (the
    /// release's upper-constraints), relative to `testenv/images` (its content
    /// is part of the hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<String>,
    /// The project's own Python modules a venv adds to its site-packages, as
    /// paths relative to `testenv/images` (their content is part of the hash).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<String>,
    /// The image's entrypoint, used when a container gives no `command`.
    #[serde(default)]
    pub entrypoint: Vec<String>,
    /// The user the image runs as unless the pod says otherwise (0 when unset).
    #[serde(default)]
    pub user: Option<u32>,
}

#[derive(Clone, Copy, Debug, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ImageKind {
    Host,
    Venv,
}

#[derive(Debug, Deserialize)]
struct CatalogueFile {
    images: BTreeMap<String, ImageEntry>,
}

/// The images a process kubelet can run.
#[derive(Clone, Debug)]
pub struct Catalogue {
    images: BTreeMap<String, ImageEntry>,
    cache_dir: PathBuf,
}

/// A resolved image: what a container's root is made of.
#[derive(Clone, Debug)]
pub struct ImageRoot {
    pub reference: String,
    pub entry: ImageEntry,
    /// The built virtualenv (venv images), mounted at [`VENV_MOUNT`].
    pub venv: Option<PathBuf>,
}

impl ImageRoot {
    /// `PATH` for the image's containers.
    pub fn path_env(&self) -> String {
        let base = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        match self.venv {
            Some(_) => format!("{VENV_MOUNT}/bin:{base}"),
            None => base.to_string(),
        }
    }
}

/// Why an image reference does not resolve, worded for the pod's waiting message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullError(pub String);

/// The catalogue checked into this repository.
pub fn catalogue_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testenv/images/catalogue.json")
}

fn images_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testenv/images")
}

fn build_script() -> PathBuf {
    images_dir().join("build-venv.sh")
}

/// `${RATCHET_CACHE_DIR:-~/.cache/ratchet}/images`.
pub fn default_cache_dir() -> PathBuf {
    let base = std::env::var_os("RATCHET_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
            PathBuf::from(home).join(".cache/ratchet")
        });
    base.join("images")
}

impl Catalogue {
    /// The repository's catalogue with the default cache directory.
    pub fn load() -> Result<Catalogue> {
        let path = catalogue_path();
        let text = std::fs::read_to_string(&path).map_err(|source| TestEnvError::Io {
            path: path.clone(),
            source,
        })?;
        Catalogue::from_json(&text, default_cache_dir())
            .map_err(|e| TestEnvError::Image(format!("{}: {e}", path.display())))
    }

    /// A catalogue from JSON text (`{"images": {reference: entry}}`).
    pub fn from_json(text: &str, cache_dir: PathBuf) -> Result<Catalogue, String> {
        let file: CatalogueFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        for (reference, entry) in &file.images {
            if entry.kind == ImageKind::Venv
                && (entry.python.is_none() || entry.packages.is_empty())
            {
                return Err(format!("venv image {reference} needs python and packages"));
            }
            if let Some(missing) = entry
                .modules
                .iter()
                .find(|module| !images_dir().join(module).is_file())
            {
                return Err(format!(
                    "image {reference}: module {missing:?} is not a file under {}",
                    images_dir().display()
                ));
            }
        }
        Ok(Catalogue {
            images: file.images,
            cache_dir,
        })
    }

    pub fn references(&self) -> impl Iterator<Item = &str> {
        self.images.keys().map(String::as_str)
    }

    pub fn entry(&self, reference: &str) -> Result<&ImageEntry, PullError> {
        self.images.get(reference).ok_or_else(|| {
            PullError(format!(
                "Failed to pull image \"{reference}\": not in the process kubelet's image catalogue ({}); known images: {}",
                catalogue_path().display(),
                self.images.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// Where an entry's root is cached: `<cache>/<name>-<hash>`.
    pub fn cache_path(&self, reference: &str, entry: &ImageEntry) -> PathBuf {
        let mut hasher = Sha256::new();
        hasher.update(serde_json::to_vec(entry).unwrap_or_default());
        hasher.update(std::fs::read(build_script()).unwrap_or_default());
        for file in entry.modules.iter().chain(&entry.constraints) {
            hasher.update(std::fs::read(images_dir().join(file)).unwrap_or_default());
        }
        let hash = format!("{:x}", hasher.finalize());
        let name: String = reference
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.cache_dir.join(format!("{name}-{}", &hash[..12]))
    }

    /// Whether the image's root is ready without a build.
    pub fn is_cached(&self, reference: &str) -> bool {
        match self.images.get(reference) {
            Some(entry) if entry.kind == ImageKind::Venv => {
                self.cache_path(reference, entry).join(".built").is_file()
            }
            Some(_) => true,
            None => false,
        }
    }

    /// Resolves a reference, building a venv on first use (blocking; minutes
    /// for a large package set, with progress on stderr).
    pub fn resolve(&self, reference: &str) -> Result<ImageRoot, PullError> {
        let entry = self.entry(reference)?.clone();
        let venv = match entry.kind {
            ImageKind::Host => None,
            ImageKind::Venv => Some(self.build_venv(reference, &entry)?),
        };
        Ok(ImageRoot {
            reference: reference.to_string(),
            entry,
            venv,
        })
    }

    fn build_venv(&self, reference: &str, entry: &ImageEntry) -> Result<PathBuf, PullError> {
        let dest = self.cache_path(reference, entry);
        if dest.join(".built").is_file() {
            return Ok(dest);
        }
        let python = entry.python.clone().unwrap_or_default();
        eprintln!(
            "process kubelet: building image {reference} into {}",
            dest.display()
        );
        let status = Command::new("bash")
            .arg(build_script())
            .arg(&dest)
            .arg(&python)
            .args(entry.modules.iter().flat_map(|module| {
                [
                    std::ffi::OsString::from("--module"),
                    images_dir().join(module).into_os_string(),
                ]
            }))
            .args(entry.constraints.iter().flat_map(|constraints| {
                [
                    std::ffi::OsString::from("--constraints"),
                    images_dir().join(constraints).into_os_string(),
                ]
            }))
            .args(&entry.packages)
            .stdin(Stdio::null())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .status();
        match status {
            Ok(s) if s.success() && dest.join(".built").is_file() => Ok(dest),
            Ok(s) => Err(PullError(format!(
                "Failed to pull image \"{reference}\": building its virtualenv failed ({s}); see the build output above ({})",
                build_script().display()
            ))),
            Err(e) => Err(PullError(format!(
                "Failed to pull image \"{reference}\": could not run {}: {e}",
                build_script().display()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_in_catalogue_parses_and_names_the_service_images() {
        let catalogue = Catalogue::load().expect("catalogue");
        for reference in [
            "ratchet.test/shell:1",
            "ratchet.test/python3:3.11",
            "ratchet.test/cinder:2026.1",
            "ratchet.test/cinder:2026.2",
            "ratchet.test/ironic:2026.1",
            "ratchet.test/ironic:2026.2",
        ] {
            assert!(catalogue.entry(reference).is_ok(), "{reference}");
        }
        let cinder = catalogue
            .entry("ratchet.test/cinder:2026.1")
            .expect("cinder");
        assert!(cinder.packages.iter().any(|p| p == "cinder==28.0.0"));
        assert_eq!(
            cinder.constraints.as_deref(),
            Some("constraints/2026.1.txt")
        );
    }

    /// Every package of a venv has one version: pinned in the entry, or by
    /// the constraints file it names (which exists); a 2026.1 image is held
    /// to 2026.1's constraints.
    #[test]
    fn every_venv_package_is_pinned_by_its_entry_or_its_constraints() {
        let catalogue = Catalogue::load().expect("catalogue");
        for (reference, entry) in &catalogue.images {
            if entry.kind != ImageKind::Venv {
                continue;
            }
            let constraints = entry
                .constraints
                .as_ref()
                .map(|file| std::fs::read_to_string(images_dir().join(file)).expect(file))
                .unwrap_or_default()
                .to_lowercase();
            for package in &entry.packages {
                let pinned_here = package.contains("==");
                let held = constraints
                    .lines()
                    .any(|line| line.starts_with(&format!("{}===", package.to_lowercase())));
                assert!(pinned_here || held, "{reference}: {package}");
            }
            if reference.ends_with(":2026.1") {
                assert_eq!(
                    entry.constraints.as_deref(),
                    Some("constraints/2026.1.txt"),
                    "{reference}"
                );
            }
        }
    }

    #[test]
    fn unknown_images_are_pull_errors_naming_the_catalogue() {
        let catalogue =
            Catalogue::from_json(r#"{"images": {}}"#, PathBuf::from("/x")).expect("parse");
        let err = catalogue.resolve("nginx:latest").expect_err("unknown");
        assert!(
            err.0.contains("nginx:latest") && err.0.contains("catalogue"),
            "{}",
            err.0
        );
    }

    #[test]
    fn a_module_that_is_not_there_is_refused() {
        let text = r#"{"images": {"a/b:1": {"kind": "venv", "python": "/usr/bin/python3.11", "packages": ["six==1.17.0"], "modules": ["python/none.py"]}}}"#;
        let err = Catalogue::from_json(text, PathBuf::from("/c")).expect_err("refused");
        assert!(err.contains("python/none.py"), "{err}");
    }

    #[test]
    fn the_cache_path_changes_with_the_entry() {
        let text = |pkg: &str| {
            format!(
                r#"{{"images": {{"a/b:1": {{"kind": "venv", "python": "/usr/bin/python3.11", "packages": ["{pkg}"]}}}}}}"#
            )
        };
        let one = Catalogue::from_json(&text("six==1.16.0"), PathBuf::from("/c")).expect("parse");
        let two = Catalogue::from_json(&text("six==1.17.0"), PathBuf::from("/c")).expect("parse");
        let path = |c: &Catalogue| {
            let entry = c.entry("a/b:1").expect("entry").clone();
            c.cache_path("a/b:1", &entry)
        };
        assert_ne!(path(&one), path(&two));
        assert!(path(&one).to_string_lossy().starts_with("/c/a_b_1-"));
    }
}
