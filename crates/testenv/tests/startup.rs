//! Starting and stopping clusters: side by side without collisions, and clear
//! errors (component and log file named) instead of hangs when a part fails.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use ratchet_testenv::binaries::check_go;
use ratchet_testenv::{
    ClusterOptions, EtcdClient, EtcdTls, KubeBinaries, LocalCluster, TestEnvError,
};

#[tokio::test]
async fn two_clusters_run_side_by_side_and_stop_on_drop() -> Result<()> {
    let (a, b) = tokio::try_join!(LocalCluster::start(), LocalCluster::start())?;
    ensure!(a.apiserver_url() != b.apiserver_url());
    let (ca, cb) = (a.client()?, b.client()?);
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": "only-in-a" } }))?;
    Api::<Namespace>::all(ca.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    ensure!(
        Api::<Namespace>::all(cb)
            .get_opt("only-in-a")
            .await?
            .is_none(),
        "clusters share state"
    );
    ensure!(
        Api::<Namespace>::all(ca)
            .get_opt("only-in-a")
            .await?
            .is_some()
    );

    let dir = a.dir().to_path_buf();
    let url = a.apiserver_url().to_string();
    drop(a);
    ensure!(!dir.exists(), "working directory left behind");
    let port = url.rsplit(':').next().unwrap_or_default();
    ensure!(
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err(),
        "API server still listening after drop"
    );
    Ok(())
}

/// A directory of stand-in binaries: `etcd` runs `etcd_script`, the others exit.
fn fake_binaries(dir: &Path, etcd_script: &str) -> Result<KubeBinaries> {
    for (name, body) in [
        ("etcd", etcd_script),
        ("kube-apiserver", "exit 1"),
        ("kube-controller-manager", "exit 1"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n"))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(KubeBinaries::at(dir))
}

fn options(binaries: KubeBinaries) -> ClusterOptions {
    ClusterOptions {
        start_timeout: Duration::from_secs(2),
        binaries: Some(binaries),
        ..ClusterOptions::default()
    }
}

#[tokio::test]
async fn a_component_that_exits_is_named_with_its_log() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let bins = fake_binaries(dir.path(), "echo 'etcd: corrupt data dir' >&2; exit 7")?;
    match LocalCluster::start_with(options(bins)).await {
        Err(e @ TestEnvError::ExitedEarly { .. }) => {
            let text = e.to_string();
            ensure!(text.contains("etcd exited"), "{text}");
            ensure!(text.contains("etcd.log"), "{text}");
            ensure!(text.contains("corrupt data dir"), "{text}");
            Ok(())
        }
        Err(other) => bail!("unexpected error: {other}"),
        Ok(_) => bail!("a failing etcd started"),
    }
}

#[tokio::test]
async fn a_port_in_use_is_reported_as_such() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let bins = fake_binaries(
        dir.path(),
        "echo 'listen tcp 127.0.0.1:2379: bind: address already in use' >&2; exit 1",
    )?;
    match LocalCluster::start_with(options(bins)).await {
        Err(e @ TestEnvError::PortInUse { .. }) => {
            let text = e.to_string();
            ensure!(
                text.contains("etcd") && text.contains("address already in use"),
                "{text}"
            );
            Ok(())
        }
        Err(other) => bail!("unexpected error: {other}"),
        Ok(_) => bail!("started despite the port clash"),
    }
}

#[tokio::test]
async fn a_component_that_never_gets_ready_times_out_with_its_log() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let bins = fake_binaries(dir.path(), "echo 'waiting for peers'; sleep 30")?;
    let started = std::time::Instant::now();
    match LocalCluster::start_with(options(bins)).await {
        Err(e @ TestEnvError::NotReady { .. }) => {
            let text = e.to_string();
            ensure!(text.contains("etcd was not ready within 2s"), "{text}");
            ensure!(text.contains("waiting for peers"), "{text}");
            ensure!(
                started.elapsed() < Duration::from_secs(20),
                "took {:?}",
                started.elapsed()
            );
            Ok(())
        }
        Err(other) => bail!("unexpected error: {other}"),
        Ok(_) => bail!("a silent etcd counted as ready"),
    }
}

#[tokio::test]
async fn missing_binaries_and_missing_go_are_named() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let err = LocalCluster::start_with(options(KubeBinaries::at(dir.path())))
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    ensure!(err.contains("etcd binary not found"), "{err}");

    let err = check_go(Path::new("/nonexistent/go"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    ensure!(
        err.contains("Go toolchain is missing") && err.contains("/nonexistent/go"),
        "{err}"
    );
    Ok(())
}

#[tokio::test]
async fn etcd_with_tls_serves_the_cluster_and_refuses_clients_without_a_trusted_certificate()
-> Result<()> {
    let cluster = LocalCluster::start_with(ClusterOptions {
        etcd_tls: true,
        ..ClusterOptions::default()
    })
    .await?;
    let url = cluster.etcd().base_url().to_string();
    ensure!(url.starts_with("https://"), "{url}");
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": "over-tls" } }))?;
    Api::<Namespace>::all(cluster.client()?)
        .create(&PostParams::default(), &ns)
        .await?;
    ensure!(
        cluster
            .etcd()
            .get("/registry/namespaces/over-tls")
            .await?
            .is_some(),
        "the API server stored it through TLS, the client identity reads it"
    );

    let files = cluster.etcd_client_files().context("TLS files")?;
    let trusted = EtcdTls::from_files(&files.ca, &files.cert, &files.key)?;
    let stranger = ratchet_pki::CertificateAuthority::new("stranger")?.issue_client("x", &[])?;
    let untrusted = EtcdTls {
        cert_pem: stranger.cert_pem,
        key_pem: stranger.key_pem,
        ..trusted
    };
    ensure!(
        EtcdClient::with_tls(&url, &untrusted)?
            .get("/registry/namespaces/over-tls")
            .await
            .is_err(),
        "a certificate from another CA is refused"
    );
    ensure!(
        EtcdClient::new(&url)?
            .get("/registry/namespaces/over-tls")
            .await
            .is_err(),
        "no certificate is refused"
    );
    Ok(())
}
