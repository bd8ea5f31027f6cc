//! Services and DNS for the process kubelet's pods, as in a real cluster:
//! kube-proxy (nftables mode) programs every Service's ClusterIP, and CoreDNS
//! answers for `cluster.local` behind the `kube-dns` Service at
//! [`CLUSTER_DNS_IP`]. Both are the real programs, built from Go modules
//! (`testenv/kube-bins`, `testenv/coredns-bin`), and both run as processes in
//! the node's network namespace, never in the host's:
//!
//! ```text
//!  host namespace   kube-apiserver on 127.0.0.1:<port>
//!        ▲ (loopback)
//!        │ relay: a socket listening in the node namespace, its connections
//!        │ forwarded to the API server by a task of this process
//!  node namespace   127.0.0.1:6443 ◀── kube-proxy, CoreDNS (ip netns exec)
//!                   nftables rules of kube-proxy (this namespace's tables only)
//!                   CoreDNS on :53, the kube-dns EndpointSlice's 10.245.0.1
//!     └─ br0 ── pods: default route via 10.245.0.1 takes ClusterIPs there
//! ```
//!
//! Why these choices (docs/testenv.md has the long form):
//! - The API server listens on the host's loopback, which a process in the node
//!   namespace cannot reach; the relay's listening socket is made in the node
//!   namespace and its outgoing one in the host's, so both ends are loopback.
//! - CoreDNS is a process, not a pod: it is up before any pod starts, needs no
//!   image, and reaches the API server through the same relay; the `kube-dns`
//!   Service has no selector and an EndpointSlice written here names the node
//!   address it listens on.
//! - The return path: a pod's packet to a ClusterIP is routed to the node
//!   namespace and DNATed to another pod on the same bridge; that pod's answer
//!   would go straight back over the bridge, unseen by conntrack, and the client
//!   would drop it (it came from the pod address, not the ClusterIP). Bridge
//!   netfilter (`net.bridge.bridge-nf-call-iptables=1`, per namespace since
//!   Linux 5.3) passes bridged packets through the node namespace's netfilter
//!   hooks, so conntrack rewrites the answer, as on a node with a bridge CNI.
//!   `net.ipv4.ip_forward=1` lets the node namespace route the DNATed packet
//!   back onto the bridge; it has no other interface, so nothing leaves.
//! - Starting fails with the component's log tail if kube-proxy or CoreDNS
//!   exits or is not ready, and a DNS query for the `kube-dns` Service through
//!   its ClusterIP from a client namespace must succeed before the start
//!   returns: nothing falls back silently to pod addresses.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hickory_proto::ProtoError;
use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::PostParams;
use kube::{Api, Client};
use tokio::task::JoinHandle;

use super::network::{NetnsRuntime, POD_CIDR, PodNetwork, SERVICE_CIDR};
use crate::error::{IoContext, Result, TestEnvError};
use crate::process::ManagedProcess;

/// The `kube-dns` Service's ClusterIP, the tenth address of the cluster's
/// service range (10.0.0.0/16), as kubeadm chooses it.
pub const CLUSTER_DNS_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 10);
/// The cluster's DNS domain (the kubelet's `--cluster-domain`).
pub const CLUSTER_DOMAIN: &str = "cluster.local";
/// Where the API server relay listens inside the node namespace.
const RELAY_PORT: u16 = 6443;
const PROXY_HEALTHZ_PORT: u16 = 10256;
const PROXY_METRICS_PORT: u16 = 10249;
const COREDNS_HEALTH_PORT: u16 = 8080;
const COREDNS_READY_PORT: u16 = 8181;
const MANAGER: &str = "ratchet-testenv";

/// What [`ClusterServices::start`] needs from the control plane.
#[derive(Clone, Debug)]
pub struct ClusterServicesConfig {
    pub kube_proxy: PathBuf,
    pub coredns: PathBuf,
    /// The cluster's admin kubeconfig; a copy pointing at the relay is written.
    pub kubeconfig: PathBuf,
    /// The API server's address in the host namespace (loopback).
    pub apiserver: SocketAddr,
    /// The process kubelet's node.
    pub node_name: String,
    /// Where configuration and logs go.
    pub dir: PathBuf,
    pub start_timeout: Duration,
}

/// kube-proxy, CoreDNS and the API server relay; stopped when dropped.
pub struct ClusterServices {
    // Field order is drop order: the programs stop before the relay and the
    // node namespace's thread go.
    kube_proxy: ManagedProcess,
    coredns: ManagedProcess,
    relay: JoinHandle<()>,
    _node: NetnsRuntime,
}

impl Drop for ClusterServices {
    fn drop(&mut self) {
        self.relay.abort();
    }
}

impl ClusterServices {
    /// Starts both for the node behind `network`, on the caller's runtime (the
    /// relay's tasks live on it).
    pub async fn start(
        client: &Client,
        network: &PodNetwork,
        config: ClusterServicesConfig,
    ) -> Result<ClusterServices> {
        for (component, path) in [
            ("kube-proxy", &config.kube_proxy),
            ("coredns", &config.coredns),
        ] {
            if !path.is_file() {
                return Err(TestEnvError::BinaryMissing {
                    component,
                    path: path.clone(),
                });
            }
        }
        require_nft()?;
        std::fs::create_dir_all(&config.dir).at(&config.dir)?;
        let netns = network.node_netns().to_string();
        let node = NetnsRuntime::start(&netns)?;
        node.run(node_sysctls()).await??;
        // The node has no uplink, so no route covers the Service range: a
        // connection to a ClusterIP without endpoints would end in the routing
        // table ("network unreachable") before kube-proxy's reject rule in the
        // forward hook. A route onto the bridge (where nothing answers for a
        // ClusterIP) lets the rule refuse it, as on a node with a default route.
        super::network::ip(&["-n", &netns, "route", "replace", SERVICE_CIDR, "dev", "br0"])?;
        let relay = start_relay(&node, config.apiserver).await?;

        let kubeconfig = config.dir.join("node-kubeconfig.json");
        write_relay_kubeconfig(&config.kubeconfig, &kubeconfig)?;

        let corefile = config.dir.join("Corefile");
        std::fs::write(&corefile, corefile_text(&kubeconfig)).at(&corefile)?;
        let node_program = NodeProgram {
            node: &node,
            netns: &netns,
            timeout: config.start_timeout,
        };
        let coredns = node_program
            .start(
                "coredns",
                &config.coredns,
                &["-conf".into(), corefile.display().to_string()],
                config.dir.join("coredns.log"),
                (COREDNS_READY_PORT, "/ready"),
            )
            .await?;
        publish_kube_dns(client, network.bridge_ip(), &config.node_name).await?;

        let proxy_config = config.dir.join("kube-proxy.json");
        let text = serde_json::to_vec_pretty(&kube_proxy_config(&kubeconfig, &config.node_name))
            .map_err(|e| TestEnvError::Kubeconfig(e.to_string()))?;
        std::fs::write(&proxy_config, text).at(&proxy_config)?;
        let kube_proxy = node_program
            .start(
                "kube-proxy",
                &config.kube_proxy,
                &[format!("--config={}", proxy_config.display())],
                config.dir.join("kube-proxy.log"),
                (PROXY_HEALTHZ_PORT, "/healthz"),
            )
            .await?;

        let services = ClusterServices {
            kube_proxy,
            coredns,
            relay,
            _node: node,
        };
        services.check_dns(network, config.start_timeout).await?;
        Ok(services)
    }

    /// Log files, to print when a test fails.
    pub fn logs(&self) -> [(&'static str, PathBuf); 2] {
        [
            ("kube-proxy", self.kube_proxy.log().to_path_buf()),
            ("coredns", self.coredns.log().to_path_buf()),
        ]
    }

    /// Asks the cluster DNS, through its ClusterIP from a client namespace (as
    /// a pod would), for the `kube-dns` Service itself, until it answers with
    /// its address: kube-proxy's rules and CoreDNS's view of the API are both
    /// in place. Fails with both logs' tails otherwise.
    async fn check_dns(&self, network: &PodNetwork, timeout: Duration) -> Result<()> {
        let client = network.attach_client()?;
        let runtime = NetnsRuntime::start(&client.netns)?;
        let name = format!("kube-dns.kube-system.svc.{CLUSTER_DOMAIN}");
        let deadline = Instant::now() + timeout;
        loop {
            let query = name.clone();
            let answer = runtime
                .run(async move {
                    resolve_a(
                        SocketAddr::from((CLUSTER_DNS_IP, 53)),
                        &query,
                        Duration::from_secs(1),
                    )
                    .await
                })
                .await?;
            let last = match answer {
                Ok(addresses) if addresses.contains(&CLUSTER_DNS_IP) => return Ok(()),
                Ok(addresses) => format!("answered {addresses:?}"),
                Err(e) => e.to_string(),
            };
            if Instant::now() >= deadline {
                return Err(TestEnvError::Network(format!(
                    "the cluster DNS at {CLUSTER_DNS_IP} did not answer for {name} within {}s (last: {last}); kube-proxy's log {}:\n{}\nCoreDNS's log {}:\n{}",
                    timeout.as_secs(),
                    self.kube_proxy.log().display(),
                    self.kube_proxy.log_tail(20),
                    self.coredns.log().display(),
                    self.coredns.log_tail(20),
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// How a program of the node is started: in its network namespace, ready
/// once its health endpoint on the namespace's loopback answers 200.
struct NodeProgram<'a> {
    node: &'a NetnsRuntime,
    netns: &'a str,
    timeout: Duration,
}

impl NodeProgram<'_> {
    async fn start(
        &self,
        component: &'static str,
        binary: &Path,
        args: &[String],
        log: PathBuf,
        (port, path): (u16, &'static str),
    ) -> Result<ManagedProcess> {
        let mut process = ManagedProcess::start(
            component,
            Path::new("ip"),
            &in_netns(self.netns, binary, args),
            log,
        )?;
        let handle = self.node.handle();
        let healthy = move || {
            let handle = handle.clone();
            async move {
                let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
                let get = handle.spawn(async move {
                    tokio::time::timeout(
                        Duration::from_secs(2),
                        super::probes::http_get(addr, path),
                    )
                    .await
                });
                matches!(get.await, Ok(Ok(Ok((200, _)))))
            }
        };
        process.wait_ready(self.timeout, healthy).await?;
        Ok(process)
    }
}

/// kube-proxy's nftables mode runs the `nft` command.
fn require_nft() -> Result<()> {
    match Command::new("nft").arg("--version").output() {
        Ok(out) if out.status.success() => Ok(()),
        _ => Err(TestEnvError::BinaryMissing {
            component: "nft, which kube-proxy's nftables mode runs (apt-get install nftables)",
            path: PathBuf::from("nft"),
        }),
    }
}

/// `ip netns exec <netns> <binary> <args…>`: the program runs in the node's
/// network namespace (and a private mount namespace with that namespace's
/// `/sys`); its sysctl writes under `/proc/sys/net` land there too.
fn in_netns(netns: &str, binary: &Path, args: &[String]) -> Vec<String> {
    let mut argv = vec![
        "netns".to_string(),
        "exec".to_string(),
        netns.to_string(),
        binary.display().to_string(),
    ];
    argv.extend(args.iter().cloned());
    argv
}

/// Routing and bridge netfilter in the node namespace (module docs: the
/// return path). Runs on a thread inside it: `/proc/sys/net` is per namespace.
///
/// No ICMP redirects: a pod's packet to a ClusterIP enters and leaves the node
/// on br0, for which the kernel would tell the pod to reach the ClusterIP
/// directly (which a pod namespace, accepting redirects, would then do,
/// bypassing kube-proxy), and the redirects use up the per-host ICMP budget,
/// so the port-unreachable of kube-proxy's reject rule (a Service without
/// endpoints) would be suppressed and the client left waiting.
async fn node_sysctls() -> Result<()> {
    for (key, value) in [
        ("net/ipv4/ip_forward", "1"),
        ("net/bridge/bridge-nf-call-iptables", "1"),
        ("net/ipv4/conf/all/send_redirects", "0"),
        ("net/ipv4/conf/default/send_redirects", "0"),
        ("net/ipv4/conf/br0/send_redirects", "0"),
    ] {
        let path = PathBuf::from("/proc/sys").join(key);
        std::fs::write(&path, value).at(&path)?;
    }
    Ok(())
}

/// A listening socket made inside the node namespace whose connections a task
/// on the caller's runtime forwards to the API server over the host's loopback.
async fn start_relay(node: &NetnsRuntime, apiserver: SocketAddr) -> Result<JoinHandle<()>> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, RELAY_PORT));
    let listener = node
        .run(async move {
            let listener = std::net::TcpListener::bind(addr)?;
            listener.set_nonblocking(true)?;
            Ok::<_, std::io::Error>(listener)
        })
        .await?
        .map_err(|e| TestEnvError::Network(format!("the API server relay cannot listen: {e}")))?;
    let listener = tokio::net::TcpListener::from_std(listener)
        .map_err(|e| TestEnvError::Network(format!("the API server relay cannot listen: {e}")))?;
    Ok(tokio::spawn(async move {
        loop {
            let (mut inbound, _) = match listener.accept().await {
                Ok(conn) => conn,
                Err(e) => {
                    tracing::warn!(error = %e, "API server relay: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            tokio::spawn(async move {
                // A refused connection closes the inbound one: the client sees
                // the API server as down and retries, as it would.
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(apiserver).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    }))
}

/// The admin kubeconfig with its server replaced by the relay's address (the
/// serving certificate names 127.0.0.1, so TLS still verifies).
fn write_relay_kubeconfig(from: &Path, to: &Path) -> Result<()> {
    let text = std::fs::read(from).at(from)?;
    let mut kubeconfig: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| TestEnvError::Kubeconfig(e.to_string()))?;
    let clusters = kubeconfig
        .get_mut("clusters")
        .and_then(|c| c.as_array_mut())
        .ok_or_else(|| TestEnvError::Kubeconfig(format!("{} has no clusters", from.display())))?;
    for cluster in clusters {
        if let Some(c) = cluster.get_mut("cluster") {
            c["server"] = serde_json::Value::String(format!("https://127.0.0.1:{RELAY_PORT}"));
        }
    }
    let text = serde_json::to_vec_pretty(&kubeconfig)
        .map_err(|e| TestEnvError::Kubeconfig(e.to_string()))?;
    std::fs::write(to, text).at(to)
}

/// CoreDNS's configuration: the cluster domain and reverse zones from the
/// API server (kubeadm's Corefile without `forward`: there is no upstream),
/// and NXDOMAIN for every other name at once. As in kubeadm's, answers for the
/// cluster domain are not cached: a Service made a moment ago resolves at once
/// instead of after a cached NXDOMAIN's 30 s.
fn corefile_text(kubeconfig: &Path) -> String {
    format!(
        r#".:53 {{
    errors
    health 127.0.0.1:{COREDNS_HEALTH_PORT}
    ready 127.0.0.1:{COREDNS_READY_PORT}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
        ttl 30
    }}
    cache 30 {{
        disable success {CLUSTER_DOMAIN}
        disable denial {CLUSTER_DOMAIN}
    }}
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"#,
        kubeconfig = kubeconfig.display()
    )
}

/// kube-proxy's configuration: nftables mode for this node, the pod CIDR as
/// the cluster's, its ports on the node namespace's loopback, and conntrack
/// left alone where a namespace cannot change it (`nf_conntrack_max` is
/// host-wide and read-only outside the host namespace).
fn kube_proxy_config(kubeconfig: &Path, node_name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": { "kubeconfig": kubeconfig.display().to_string() },
        "mode": "nftables",
        "clusterCIDR": POD_CIDR,
        "hostnameOverride": node_name,
        "healthzBindAddress": format!("127.0.0.1:{PROXY_HEALTHZ_PORT}"),
        "metricsBindAddress": format!("127.0.0.1:{PROXY_METRICS_PORT}"),
        "conntrack": { "maxPerCore": 0, "min": 0 },
    })
}

/// The `kube-dns` Service (no selector: CoreDNS is no pod) and the
/// EndpointSlice naming CoreDNS's address on the node, as the endpoint-slice
/// controller would for a CoreDNS Deployment.
async fn publish_kube_dns(client: &Client, node_ip: Ipv4Addr, node_name: &str) -> Result<()> {
    let ns = "kube-system";
    let service: Service = serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": "kube-dns",
            "namespace": ns,
            "labels": { "k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS" },
        },
        "spec": {
            "clusterIP": CLUSTER_DNS_IP.to_string(),
            "ports": [
                { "name": "dns", "port": 53, "protocol": "UDP" },
                { "name": "dns-tcp", "port": 53, "protocol": "TCP" },
            ],
        },
    }))
    .map_err(|e| TestEnvError::Kubeconfig(e.to_string()))?;
    let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": "kube-dns-coredns",
            "namespace": ns,
            "labels": {
                "kubernetes.io/service-name": "kube-dns",
                "endpointslice.kubernetes.io/managed-by": MANAGER,
            },
        },
        "addressType": "IPv4",
        "endpoints": [{
            "addresses": [node_ip.to_string()],
            "conditions": { "ready": true, "serving": true, "terminating": false },
            "nodeName": node_name,
        }],
        "ports": [
            { "name": "dns", "port": 53, "protocol": "UDP" },
            { "name": "dns-tcp", "port": 53, "protocol": "TCP" },
        ],
    }))
    .map_err(|e| TestEnvError::Kubeconfig(e.to_string()))?;
    let create = PostParams {
        field_manager: Some(MANAGER.into()),
        ..PostParams::default()
    };
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    ignore_exists(services.create(&create, &service).await)?;
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), ns);
    ignore_exists(slices.create(&create, &slice).await)?;
    Ok(())
}

/// A fresh cluster per process has none; an object already there is ours.
fn ignore_exists<T>(result: std::result::Result<T, kube::Error>) -> Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// One DNS query for `name`'s A records over UDP: the addresses answered, an
/// error for a failure code (NXDOMAIN, SERVFAIL), a timeout or a refusal.
/// Used to check the cluster DNS from a namespace on the pod network.
pub async fn resolve_a(
    server: SocketAddr,
    name: &str,
    timeout: Duration,
) -> std::io::Result<Vec<Ipv4Addr>> {
    let id: u16 = (std::process::id() as u16) ^ 0x5a5a;
    let query = encode_query(id, name)?;
    let socket = tokio::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).await?;
    socket.connect(server).await?;
    socket.send(&query).await?;
    let mut buf = [0u8; 1500];
    let n = tokio::time::timeout(timeout, socket.recv(&mut buf))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no DNS answer"))??;
    decode_a_answers(id, &buf[..n])
}

fn encode_query(id: u16, name: &str) -> std::io::Result<Vec<u8>> {
    let invalid = |e: ProtoError| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{name:?} is no DNS name: {e}"),
        )
    };
    let mut query = Message::new();
    query
        .set_id(id)
        .set_recursion_desired(true)
        .add_query(Query::query(
            Name::from_ascii(name).map_err(invalid)?,
            RecordType::A,
        ));
    query.to_vec().map_err(invalid)
}

fn decode_a_answers(id: u16, msg: &[u8]) -> std::io::Result<Vec<Ipv4Addr>> {
    let answer = Message::from_vec(msg)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
    if answer.id() != id {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not an answer to this query",
        ));
    }
    let code = answer.response_code();
    if code != ResponseCode::NoError {
        let name = match code {
            ResponseCode::ServFail => "SERVFAIL".to_string(),
            ResponseCode::NXDomain => "NXDOMAIN".to_string(),
            ResponseCode::Refused => "REFUSED".to_string(),
            other => other.to_string(),
        };
        return Err(std::io::Error::other(format!(
            "the server answered {name} (rcode {})",
            u16::from(code)
        )));
    }
    Ok(answer
        .answers()
        .iter()
        .filter_map(|record| match record.data() {
            RData::A(address) => Some(address.0),
            _ => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_and_its_answer_round_trip() {
        let query = encode_query(7, "kube-dns.kube-system.svc.cluster.local.").unwrap();
        // The answer: the question echoed, one A record by a compression pointer.
        let mut answer = query.clone();
        answer[2] = 0x81;
        answer[3] = 0x80;
        answer[7] = 1;
        answer.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 10, 0, 0, 10]);
        assert_eq!(
            decode_a_answers(7, &answer).unwrap(),
            [Ipv4Addr::new(10, 0, 0, 10)]
        );
        let mut nx = query.clone();
        nx[3] = 0x83;
        assert!(
            decode_a_answers(7, &nx)
                .unwrap_err()
                .to_string()
                .contains("NXDOMAIN")
        );
        assert!(decode_a_answers(8, &answer).is_err());
        assert!(encode_query(1, "a..b").is_err());
    }
}
