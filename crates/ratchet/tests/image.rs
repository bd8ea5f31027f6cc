//! The operator image (`scripts/image`): built from the debug `ratchet` that
//! cargo already built for these tests (a second, release build would double
//! CI's compile time), then read back as a registry and a runtime would — every
//! digest from index.json down, the config's entrypoint, command and user — and
//! run from its own files only, as its own user.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use ratchet_testenv::binaries::ensure_umoci;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const TAG: &str = "test";
const BINARY: &str = env!("CARGO_BIN_EXE_ratchet");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(command: &mut Command) -> Result<String> {
    let out = command
        .output()
        .with_context(|| format!("running {command:?}"))?;
    ensure!(
        out.status.success(),
        "{command:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

/// The blob a descriptor names, after checking its size and sha256 digest.
fn blob(layout: &Path, descriptor: &Value) -> Result<Vec<u8>> {
    let digest = descriptor["digest"].as_str().context("descriptor digest")?;
    let hex = digest
        .strip_prefix("sha256:")
        .with_context(|| format!("not a sha256 digest: {digest}"))?;
    let bytes = std::fs::read(layout.join("blobs/sha256").join(hex))
        .with_context(|| format!("blob {digest}"))?;
    ensure!(
        descriptor["size"].as_u64() == Some(bytes.len() as u64),
        "blob {digest} is {} bytes, its descriptor says {}",
        bytes.len(),
        descriptor["size"]
    );
    let actual = hex::encode(Sha256::digest(&bytes));
    ensure!(actual == hex, "blob {digest} hashes to sha256:{actual}");
    Ok(bytes)
}

fn json_blob(layout: &Path, descriptor: &Value, media_type: &str) -> Result<Value> {
    ensure!(
        descriptor["mediaType"] == media_type,
        "expected {media_type}: {descriptor}"
    );
    Ok(serde_json::from_slice(&blob(layout, descriptor)?)?)
}

fn oci_arch() -> Result<&'static str> {
    Ok(match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => bail!("no OCI name for {other} here"),
    })
}

#[test]
fn image_layout_config_and_binary_run_from_the_image() -> Result<()> {
    let umoci = ensure_umoci()?;
    let tmp = tempfile::tempdir()?;
    let layout = tmp.path().join("oci");
    let archive = tmp.path().join("ratchet.tar");
    let printed = run(Command::new("bash")
        .arg(repo().join("scripts/image"))
        .args(["--binary", BINARY, "--tag", TAG])
        .arg("--out")
        .arg(&layout)
        .arg("--archive")
        .arg(&archive)
        .env("RATCHET_UMOCI", &umoci))?;
    ensure!(
        printed.trim() == format!("{}:{TAG}", layout.display()),
        "scripts/image printed {printed:?}"
    );

    let oci_layout: Value = serde_json::from_slice(&std::fs::read(layout.join("oci-layout"))?)?;
    ensure!(oci_layout["imageLayoutVersion"] == "1.0.0", "{oci_layout}");
    let index: Value = serde_json::from_slice(&std::fs::read(layout.join("index.json"))?)?;
    ensure!(index["schemaVersion"] == 2, "{index}");
    let manifests = index["manifests"].as_array().context("index manifests")?;
    ensure!(manifests.len() == 1, "one image in {index}");
    ensure!(
        manifests[0]["annotations"]["org.opencontainers.image.ref.name"] == TAG,
        "tagged {TAG}: {index}"
    );
    let manifest = json_blob(
        &layout,
        &manifests[0],
        "application/vnd.oci.image.manifest.v1+json",
    )?;
    ensure!(manifest["schemaVersion"] == 2, "{manifest}");
    let config = json_blob(
        &layout,
        &manifest["config"],
        "application/vnd.oci.image.config.v1+json",
    )?;
    let layers = manifest["layers"].as_array().context("manifest layers")?;
    ensure!(!layers.is_empty(), "no layers: {manifest}");
    for layer in layers {
        ensure!(
            layer["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip",
            "{layer}"
        );
        blob(&layout, layer)?;
    }
    // Nothing but the one image: no blobs left over from building it.
    let blobs = std::fs::read_dir(layout.join("blobs/sha256"))?.count();
    ensure!(blobs == layers.len() + 2, "{blobs} blobs in the layout");

    ensure!(config["os"] == "linux", "{config}");
    ensure!(config["architecture"] == oci_arch()?, "{config}");
    ensure!(
        config["rootfs"]["diff_ids"].as_array().map(Vec::len) == Some(layers.len()),
        "one diff_id per layer: {config}"
    );
    let image_config = &config["config"];
    ensure!(
        image_config["Entrypoint"] == json!(["/usr/local/bin/ratchet"]),
        "{image_config}"
    );
    ensure!(image_config["Cmd"] == json!(["operator"]), "{image_config}");
    ensure!(image_config["User"] == "65532:65532", "{image_config}");
    let labels = &image_config["Labels"];
    ensure!(
        labels["org.opencontainers.image.version"] == env!("CARGO_PKG_VERSION"),
        "{labels}"
    );
    if let Some(revision) = labels["org.opencontainers.image.revision"].as_str() {
        let commit = revision.trim_end_matches("-dirty");
        ensure!(
            commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
            "revision label {revision:?}"
        );
    }

    // The runtime's view: umoci unpacks the layers into a bundle's rootfs and
    // writes the process it would start.
    let bundle = tmp.path().join("bundle");
    run(Command::new(&umoci)
        .args(["unpack", "--rootless", "--image"])
        .arg(format!("{}:{TAG}", layout.display()))
        .arg(&bundle))?;
    let runtime: Value = serde_json::from_slice(&std::fs::read(bundle.join("config.json"))?)?;
    ensure!(
        runtime["process"]["args"] == json!(["/usr/local/bin/ratchet", "operator"]),
        "{}",
        runtime["process"]
    );
    ensure!(
        runtime["process"]["user"]["uid"] == 65532 && runtime["process"]["user"]["gid"] == 65532,
        "{}",
        runtime["process"]
    );
    let rootfs = bundle.join("rootfs");
    let packaged = std::fs::read(rootfs.join("usr/local/bin/ratchet"))?;
    ensure!(
        Sha256::digest(&packaged) == Sha256::digest(std::fs::read(BINARY)?),
        "the image's ratchet is not the binary it was built from"
    );
    let passwd = std::fs::read_to_string(rootfs.join("etc/passwd"))?;
    ensure!(passwd.contains(":65532:65532:"), "{passwd}");

    // The image's root as the whole filesystem, as its user: the binary runs
    // only if its loader and every library it links are in the image.
    let version = run(Command::new("/usr/bin/bwrap")
        .arg("--ro-bind")
        .arg(&rootfs)
        .arg("/")
        .args([
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
        ])
        .args(["--uid", "65532", "--gid", "65532", "--clearenv"])
        .args(["/usr/local/bin/ratchet", "--version"]))?;
    ensure!(
        version.trim() == format!("ratchet {}", env!("CARGO_PKG_VERSION")),
        "ratchet --version in the image printed {version:?}"
    );

    // The oci-archive is the same layout, tarred.
    let listing = run(Command::new("tar").arg("-tf").arg(&archive))?;
    for entry in ["./oci-layout", "./index.json"] {
        ensure!(
            listing.lines().any(|l| l == entry),
            "{entry} not in {listing}"
        );
    }
    Ok(())
}
