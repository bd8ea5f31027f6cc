//! The pod network: one network namespace per pod, wired by a veth pair to a
//! bridge that lives in a "node" namespace of its own, never in the host's.
//!
//! ```text
//!  host namespace:  unreachable routes for the pod CIDR and the Service range
//!  node namespace   ratchet-<pid>-<k>-node: br0 10.245.0.1/16, probes run here
//!     ├─ vp<n> ── eth0 in ratchet-<pid>-<k>-p<n> (a pod: 10.245.x.y/16)
//!     └─ vc<n> ── eth0 in ratchet-<pid>-<k>-c<n> (a test client)
//! ```
//!
//! The namespaces are made with iproute2 (`ip netns add`, `ip link add … type
//! veth … netns …`): the tool every Linux host has, whose `/run/netns/<name>`
//! bind mounts outlive a process only until the next start removes them (the
//! names carry the owning pid, like the cluster directories). Code runs inside a
//! namespace on a thread that `setns`es into it ([`NetnsRuntime`]): a network
//! namespace belongs to a thread, so one thread with a current-thread Tokio
//! runtime makes every socket of its tasks inside the namespace.

use std::fs::File;
use std::future::Future;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::{Result, TestEnvError};

/// The pod CIDR: 10.245.0.0/16. The bridge is .0.1, pods and clients from .1.2 on.
pub const POD_CIDR: &str = "10.245.0.0/16";
/// The cluster's Service range (`--service-cluster-ip-range` in `cluster.rs`):
/// ClusterIPs live only in the node namespace's kube-proxy rules.
pub const SERVICE_CIDR: &str = "10.0.0.0/16";
const BRIDGE_IP: Ipv4Addr = Ipv4Addr::new(10, 245, 0, 1);
const PREFIX_LEN: u8 = 16;
const NETNS_PREFIX: &str = "ratchet-";

pub(crate) fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|source| TestEnvError::Spawn {
            component: "ip (iproute2)",
            source,
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(TestEnvError::Network(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Removes namespaces whose owning process is gone (`ratchet-<pid>-…`).
pub fn remove_orphaned_namespaces() {
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(NETNS_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            // Best effort: a namespace we cannot delete holds no process.
            let _ = ip(&["netns", "del", &name]);
        }
    }
}

/// Makes sure the host namespace has no usable route to the pod CIDR or the
/// Service range: an `unreachable` route makes a connect fail at once instead
/// of following the default route off the machine. Idempotent; left in place
/// for other runs.
pub fn guard_host_route() -> Result<()> {
    ip(&["route", "replace", "unreachable", POD_CIDR])?;
    ip(&["route", "replace", "unreachable", SERVICE_CIDR])
}

/// What the host namespace's routing table says about `addr`, without sending
/// anything (`ip route get`).
pub fn host_route_to(addr: Ipv4Addr) -> String {
    Command::new("ip")
        .args(["route", "get", &addr.to_string()])
        .output()
        .map(|out| {
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .unwrap_or_else(|e| format!("ip route get failed: {e}"))
}

/// The node namespace with its bridge; deleting it on drop removes every veth.
pub struct PodNetwork {
    base: String,
    node_ns: String,
    next: AtomicU32,
}

/// One attached namespace (a pod's or a client's), deleted on drop.
pub struct Attachment {
    pub netns: String,
    pub ip: Ipv4Addr,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.netns]);
    }
}

impl Attachment {
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/run/netns/{}", self.netns))
    }
}

impl PodNetwork {
    /// Creates `ratchet-<pid>-<k>-node` with the bridge, after removing what dead
    /// processes left behind.
    pub fn create() -> Result<PodNetwork> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        remove_orphaned_namespaces();
        guard_host_route()?;
        let base = format!(
            "{NETNS_PREFIX}{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let node_ns = format!("{base}-node");
        ip(&["netns", "add", &node_ns])?;
        let network = PodNetwork {
            base,
            node_ns: node_ns.clone(),
            next: AtomicU32::new(0),
        };
        let bridge = format!("{BRIDGE_IP}/{PREFIX_LEN}");
        ip(&["-n", &node_ns, "link", "set", "lo", "up"])?;
        ip(&["-n", &node_ns, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &node_ns, "addr", "add", &bridge, "dev", "br0"])?;
        ip(&["-n", &node_ns, "link", "set", "br0", "up"])?;
        Ok(network)
    }

    pub fn node_netns(&self) -> &str {
        &self.node_ns
    }

    pub fn bridge_ip(&self) -> Ipv4Addr {
        BRIDGE_IP
    }

    /// A pod's namespace with its own address on the bridge.
    pub fn attach_pod(&self) -> Result<Attachment> {
        self.attach('p')
    }

    /// A test client's namespace on the bridge.
    pub fn attach_client(&self) -> Result<Attachment> {
        self.attach('c')
    }

    fn attach(&self, kind: char) -> Result<Attachment> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        // .1.2 onwards: 65,000 addresses before wrapping, far more than a test makes.
        let offset = 256 + 2 + (n % 65_000);
        let addr = Ipv4Addr::new(10, 245, (offset >> 8) as u8, (offset & 0xff) as u8);
        let netns = format!("{}-{kind}{n}", self.base);
        let veth = format!("v{kind}{n}");
        ip(&["netns", "add", &netns])?;
        let attachment = Attachment { netns, ip: addr };
        let ns = attachment.netns.as_str();
        let cidr = format!("{addr}/{PREFIX_LEN}");
        let gateway = BRIDGE_IP.to_string();
        let node = self.node_ns.as_str();
        ip(&[
            "-n", node, "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", ns,
        ])?;
        ip(&["-n", node, "link", "set", &veth, "master", "br0", "up"])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
        ip(&["-n", ns, "addr", "add", &cidr, "dev", "eth0"])?;
        ip(&["-n", ns, "link", "set", "eth0", "up"])?;
        ip(&["-n", ns, "route", "add", "default", "via", &gateway])?;
        Ok(attachment)
    }
}

impl Drop for PodNetwork {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.node_ns]);
    }
}

/// A thread inside a network namespace running a current-thread Tokio runtime:
/// futures given to [`NetnsRuntime::run`] open their sockets in that namespace.
pub struct NetnsRuntime {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    netns: String,
}

impl NetnsRuntime {
    /// Starts the thread in `/run/netns/<netns>`.
    pub fn start(netns: &str) -> Result<NetnsRuntime> {
        let path = PathBuf::from(format!("/run/netns/{netns}"));
        let file = File::open(&path).map_err(|source| TestEnvError::Io {
            path: path.clone(),
            source,
        })?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(format!("netns-{netns}"))
            .spawn(move || {
                // SAFETY: setns on a valid descriptor affects only this thread.
                if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    let _ = ready_tx.send(Err(std::io::Error::last_os_error()));
                    return;
                }
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(runtime.handle().clone()));
                runtime.block_on(async {
                    let _ = stop_rx.await;
                });
            })
            .map_err(|source| TestEnvError::Io {
                path: path.clone(),
                source,
            })?;
        let handle = ready_rx
            .recv()
            .map_err(|_| TestEnvError::Network(format!("the thread for {netns} died")))?
            .map_err(|source| TestEnvError::Io { path, source })?;
        Ok(NetnsRuntime {
            handle,
            stop: Some(stop_tx),
            netns: netns.to_string(),
        })
    }

    pub fn netns(&self) -> &str {
        &self.netns
    }

    /// The runtime's handle: tasks spawned on it run inside the namespace.
    pub fn handle(&self) -> tokio::runtime::Handle {
        self.handle.clone()
    }

    /// Runs `future` inside the namespace and returns its output.
    pub async fn run<F>(&self, future: F) -> Result<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(future).await.map_err(|e| {
            TestEnvError::Network(format!("a task in namespace {} failed: {e}", self.netns))
        })
    }

    /// Starts `future` inside the namespace, in the background.
    pub fn spawn<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(future)
    }
}

impl Drop for NetnsRuntime {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
