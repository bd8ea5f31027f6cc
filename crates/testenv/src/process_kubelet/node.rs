//! The process kubelet's node as a real cluster's node runs it: the kubelet,
//! with kube-proxy and CoreDNS for it ([`super::cluster_services`]), so its
//! pods get the cluster DNS in their resolv.conf and reach Services by name
//! and ClusterIP. The tests' shared environment, `ratchet local up
//! --processes`, `ratchet demo --real` and the pod benchmark all start it so.

use std::net::SocketAddr;
use std::time::Duration;

use super::cluster_services::{CLUSTER_DNS_IP, ClusterServices, ClusterServicesConfig};
use super::{ProcessKubelet, ProcessKubeletOptions};
use crate::cluster::LocalCluster;
use crate::error::{Result, TestEnvError};

/// How long kube-proxy and CoreDNS may take to answer their health checks.
const SERVICES_START_TIMEOUT: Duration = Duration::from_secs(60);

/// The process kubelet and its node's kube-proxy and CoreDNS.
pub struct RealNode {
    // Field order is drop order: kube-proxy and CoreDNS stop before the
    // kubelet takes the node's network namespace away.
    pub services: ClusterServices,
    pub kubelet: ProcessKubelet,
}

impl RealNode {
    /// Starts the kubelet (its `cluster_dns` set to the kube-dns Service's
    /// address), then kube-proxy and CoreDNS in its node namespace. Either
    /// failing to start fails the whole start with its log's tail.
    pub async fn start(cluster: &LocalCluster, options: ProcessKubeletOptions) -> Result<RealNode> {
        let kubelet = ProcessKubelet::start(
            cluster.client()?,
            ProcessKubeletOptions {
                cluster_dns: Some(CLUSTER_DNS_IP),
                ..options
            },
        )
        .await?;
        let apiserver = cluster
            .apiserver_url()
            .strip_prefix("https://")
            .and_then(|addr| addr.parse::<SocketAddr>().ok())
            .ok_or_else(|| {
                TestEnvError::Kubeconfig(format!(
                    "the API server's URL {} is no https://<ip>:<port>",
                    cluster.apiserver_url()
                ))
            })?;
        let services = ClusterServices::start(
            &cluster.client()?,
            &kubelet.network(),
            ClusterServicesConfig {
                kube_proxy: cluster.binaries().kube_proxy(),
                coredns: crate::binaries::ensure_coredns()?,
                kubeconfig: cluster.kubeconfig_path().to_path_buf(),
                apiserver,
                node_name: kubelet.node_name().to_string(),
                dir: kubelet.dir().join("node"),
                start_timeout: SERVICES_START_TIMEOUT,
            },
        )
        .await?;
        Ok(RealNode { services, kubelet })
    }
}
