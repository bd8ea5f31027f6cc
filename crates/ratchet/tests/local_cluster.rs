//! A person's own local cluster (`ratchet local up`) and the documented CRD
//! upgrade step (`ratchet crds --apply`), run as the built binary.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use ratchet_operator::webhooks::registration::ensure_conversion;
use ratchet_operator::webhooks::{ConversionTarget, Endpoint};
use ratchet_services::Services;
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_services::testing::settled_at;
use ratchet_testenv::wait::until;
use ratchet_testenv::{KubeBinaries, LocalCluster};

const CINDER_CRD: &str = "cinders.cinder.openstack.c5c3.io";

/// The Cinder CRD's conversion endpoint as JSON (url or service, and caBundle).
async fn conversion_endpoint(api: &Api<CustomResourceDefinition>) -> Result<serde_json::Value> {
    let crd = api.get(CINDER_CRD).await?;
    let config = crd
        .spec
        .conversion
        .and_then(|c| c.webhook)
        .and_then(|w| w.client_config)
        .context("the CRD has no conversion webhook")?;
    Ok(serde_json::to_value(config)?)
}

#[tokio::test]
async fn crds_apply_keeps_the_conversion_endpoint_whichever_kind_the_operator_registered()
-> Result<()> {
    let cluster = LocalCluster::start().await?;
    let client = cluster.client()?;
    ratchet_operator::install::install_crds::<Services>(&client, common::TIMEOUT).await?;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let ca_pem = ratchet_pki::CertificateAuthority::new("conversion test")?.cert_pem();
    let endpoints = [
        Endpoint::Url("https://127.0.0.1:9443".into()),
        Endpoint::Service {
            namespace: "ratchet-system".into(),
            name: "ratchet-webhook".into(),
            port: 443,
        },
        Endpoint::Url("https://127.0.0.1:9444".into()),
    ];
    for endpoint in endpoints {
        let target = ConversionTarget {
            endpoint: endpoint.clone(),
            ca_pem: ca_pem.clone(),
        };
        ensure_conversion::<Services>(&client, &target).await?;
        let registered = conversion_endpoint(&api).await?;
        let out = common::ratchet(cluster.kubeconfig_path(), &["crds", "--apply"]);
        ensure!(
            out.status.success(),
            "ratchet crds --apply over {endpoint:?}: {}",
            common::text(&out)
        );
        ensure!(
            common::text(&out).contains(&format!("applied {CINDER_CRD}")),
            "{}",
            common::text(&out)
        );
        let after = conversion_endpoint(&api).await?;
        ensure!(
            after == registered,
            "the endpoint changed: {registered} → {after}"
        );
        ensure!(
            after["caBundle"].is_string(),
            "the caBundle is gone: {after}"
        );
    }
    Ok(())
}

/// The lines a child prints, read on a thread so a wait can time out.
fn lines_of(child: &mut Child) -> Result<mpsc::Receiver<String>> {
    let stdout = child.stdout.take().context("stdout is piped")?;
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    Ok(lines)
}

/// Reads lines until one holds `label`, returning what follows it; all lines
/// read go to `seen`.
fn value_after(
    lines: &mpsc::Receiver<String>,
    label: &str,
    timeout: Duration,
    seen: &mut Vec<String>,
) -> Result<String> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(line) = lines.recv_timeout(left) else {
            bail!(
                "no {label:?} within {timeout:?}; printed:\n{}",
                seen.join("\n")
            );
        };
        seen.push(line.clone());
        if let Some((_, value)) = line.split_once(label) {
            return Ok(value.trim().to_string());
        }
    }
}

fn kubectl_apply(kubeconfig: &Path, file: &Path) -> Result<()> {
    let out = Command::new(KubeBinaries::ensure()?.kubectl())
        .args(["apply", "-f"])
        .arg(file)
        .env("KUBECONFIG", kubeconfig)
        .output()?;
    ensure!(
        out.status.success(),
        "kubectl apply: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[tokio::test]
async fn local_up_serves_a_cluster_whose_operator_installs_an_example_until_interrupted()
-> Result<()> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(["local", "up", "--ready-delay-ms", "50"])
        .stdout(Stdio::piped())
        .spawn()?;
    let lines = lines_of(&mut child)?;
    let mut seen = Vec::new();
    value_after(
        &lines,
        "Serving until Ctrl-C",
        Duration::from_secs(180),
        &mut seen,
    )?;
    let printed = |label: &str, ending: &str| {
        seen.iter()
            .filter_map(|l| l.split_once(label))
            .map(|(_, value)| PathBuf::from(value.trim()))
            .find(|path| path.to_string_lossy().ends_with(ending))
            .with_context(|| format!("no {label} …{ending} in {seen:?}"))
    };
    let example = printed("example:", "cinder.yaml")?;
    let kubeconfig = printed("kubeconfig:", "")?;
    ensure!(
        seen.iter().any(|l| l.contains("Operator running")),
        "{seen:?}"
    );

    kubectl_apply(&kubeconfig, &example)?;
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig)?,
        &Default::default(),
    )
    .await?;
    let cinders: Api<Cinder> = Api::namespaced(kube::Client::try_from(config)?, "default");
    until(
        &cinders,
        "cinder",
        common::TIMEOUT,
        "the example Cinder Ready",
        settled_at("2026.1"),
    )
    .await?;

    let pid = i32::try_from(child.id())?;
    // SAFETY: signalling a child we started and have not reaped.
    unsafe { libc::kill(pid, libc::SIGINT) };
    value_after(&lines, "Stopping.", common::TIMEOUT, &mut seen)?;
    let status = child.wait()?;
    ensure!(status.success(), "local up exited {status}: {seen:?}");
    ensure!(
        !kubeconfig.exists(),
        "the cluster's directory outlived it: {}",
        kubeconfig.display()
    );
    Ok(())
}
