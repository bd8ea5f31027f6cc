//! Real pods on the process kubelet: start latency of an instant-ready process
//! (created → bound → Running → Ready) and the cost of one image build, cold
//! and cached. Needs root, like the process kubelet.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use ratchet_testenv::process_kubelet::images::{Catalogue, catalogue_path};
use ratchet_testenv::process_kubelet::node::RealNode;
use ratchet_testenv::{LocalCluster, ProcessKubeletOptions};
use serde_json::json;

use crate::stats::summary;

#[derive(Args)]
pub struct PodsArgs {
    /// Pods to start one after another.
    #[arg(long, default_value_t = 10)]
    pods: usize,
    /// The image whose build is measured (cold into a temporary cache, then cached).
    #[arg(long, default_value = "ratchet.test/six:1.17")]
    image: String,
}

fn ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub async fn run(args: PodsArgs) -> anyhow::Result<()> {
    image_build(&args.image)?;
    let cluster = LocalCluster::start().await?;
    let client = cluster.client()?;
    let node = RealNode::start(&cluster, ProcessKubeletOptions::default()).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({
        "metadata": { "name": "bench-pods", "labels": { "ratchet.dev/kubelet": "process" } }
    }))?;
    namespaces.create(&PostParams::default(), &ns).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "bench-pods");
    let (mut bound, mut running, mut ready_at) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..args.pods {
        let name = format!("p{i}");
        let pod: Pod = serde_json::from_value(json!({
            "metadata": { "name": name },
            "spec": { "terminationGracePeriodSeconds": 0,
                "containers": [{ "name": "main", "image": "ratchet.test/shell:1", "command": ["sleep", "1000"] }] }
        }))?;
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut stream = watcher::watcher(pods.clone(), config)
            .default_backoff()
            .applied_objects()
            .boxed();
        let start = Instant::now();
        pods.create(&PostParams::default(), &pod).await?;
        let (mut b, mut r) = (None, None);
        let done = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(Ok(p)) = stream.next().await {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                if b.is_none() && p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some() {
                    b = Some(start.elapsed());
                }
                if r.is_none() && phase == Some("Running") {
                    r = Some(start.elapsed());
                }
                if ready(&p) {
                    return Some(start.elapsed());
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
        .with_context(|| format!("pod {name} did not become Ready"))?;
        let (b, r) = (b.unwrap_or(done), r.unwrap_or(done));
        println!(
            "pod {name}: bound {:.3}s, Running {:.3}s, Ready {:.3}s",
            b.as_secs_f64(),
            r.as_secs_f64(),
            done.as_secs_f64()
        );
        bound.push(b);
        running.push(r);
        ready_at.push(done);
        pods.delete(&name, &DeleteParams::default()).await?;
    }
    println!("created → bound:   {}", summary(&bound));
    println!("created → Running: {}", summary(&running));
    println!("created → Ready:   {}", summary(&ready_at));
    drop(node);
    Ok(())
}

fn image_build(reference: &str) -> anyhow::Result<()> {
    let cache = tempfile::tempdir()?;
    let text = std::fs::read_to_string(catalogue_path())?;
    let catalogue =
        Catalogue::from_json(&text, cache.path().to_path_buf()).map_err(anyhow::Error::msg)?;
    let cold = Instant::now();
    catalogue
        .resolve(reference)
        .map_err(|e| anyhow::anyhow!(e.0))?;
    let cold = cold.elapsed();
    let warm = Instant::now();
    catalogue
        .resolve(reference)
        .map_err(|e| anyhow::anyhow!(e.0))?;
    let warm = warm.elapsed();
    println!(
        "image {reference}: cold build {:.1}s, cached {:.1}ms",
        cold.as_secs_f64(),
        warm.as_secs_f64() * 1000.0
    );
    Ok(())
}
