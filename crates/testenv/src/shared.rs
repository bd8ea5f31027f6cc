//! One local cluster and simulated kubelet per test binary, shared by its tests.
//!
//! A control plane costs hundreds of MB and a few seconds, so tests share one and
//! isolate themselves by namespace. The cluster and kubelet live on a dedicated
//! thread with its own runtime for the life of the process: each `#[tokio::test]`
//! has a runtime of its own that ends with the test, so nothing shared may live
//! on one. Tests make their own clients with [`TestEnv::client`].
//!
//! [`TestEnv::shared_with_processes`] adds a [`RealNode`] (the process
//! kubelet with kube-proxy and CoreDNS) beside the simulated kubelet (a
//! second environment, so binaries that need no real pods never need root): [`TestEnv::process_namespace`] makes a namespace whose
//! pods run as real processes, [`TestEnv::client_netns`] a network namespace
//! on the pod network for load clients.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client, Config};

use crate::cluster::{ClusterOptions, LocalCluster, StartupTimings};
use crate::error::{Result, TestEnvError};
use crate::etcd::EtcdClient;
use crate::kubelet::{KubeletOptions, Scenarios, SimKubelet};
use crate::process_kubelet::ProcessKubeletOptions;
use crate::process_kubelet::network::{Attachment, NetnsRuntime, PodNetwork};
use crate::process_kubelet::node::RealNode;

/// Handles to the shared cluster, usable from any runtime.
pub struct TestEnv {
    config: Config,
    kubeconfig: PathBuf,
    etcd_url: String,
    scenarios: Scenarios,
    timings: StartupTimings,
    logs: Vec<(&'static str, PathBuf)>,
    process: Option<ProcessSide>,
}

/// What tests reach of the process kubelet.
struct ProcessSide {
    node_name: String,
    dir: PathBuf,
    network: Arc<PodNetwork>,
}

impl TestEnv {
    /// The process-wide environment, started on first use. Blocks the calling
    /// thread while it starts; fails the same way for every caller if it cannot.
    pub fn shared() -> Result<&'static TestEnv> {
        static ENV: OnceLock<std::result::Result<TestEnv, String>> = OnceLock::new();
        ENV.get_or_init(|| start_shared(false).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| TestEnvError::Shared(e.clone()))
    }

    /// Like [`TestEnv::shared`], with a [`RealNode`] serving
    /// [`TestEnv::process_namespace`]s beside the simulated kubelet. Needs root.
    pub fn shared_with_processes() -> Result<&'static TestEnv> {
        static ENV: OnceLock<std::result::Result<TestEnv, String>> = OnceLock::new();
        crate::process_kubelet::require_root()?;
        ENV.get_or_init(|| start_shared(true).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| TestEnvError::Shared(e.clone()))
    }

    fn process(&self) -> Result<&ProcessSide> {
        self.process.as_ref().ok_or_else(|| {
            TestEnvError::Shared(
                "this environment has no process kubelet: use TestEnv::shared_with_processes()"
                    .into(),
            )
        })
    }

    /// The process kubelet's node.
    pub fn process_node(&self) -> Result<&str> {
        Ok(&self.process()?.node_name)
    }

    /// A fresh namespace labelled `ratchet.dev/kubelet=process`: its pods run
    /// as real processes.
    pub async fn process_namespace(&self, client: &Client, prefix: &str) -> Result<TestNamespace> {
        self.process()?;
        self.namespace_with_labels(
            client,
            prefix,
            serde_json::json!({ crate::binding::KUBELET_LABEL: crate::binding::PROCESS }),
        )
        .await
    }

    /// Where a real pod's container log is.
    pub fn pod_log(&self, namespace: &str, pod: &str, container: &str) -> Result<PathBuf> {
        Ok(crate::process_kubelet::log_path(
            &self.process()?.dir,
            namespace,
            pod,
            container,
        ))
    }

    /// The directory holding a namespace's real pods, one directory each with
    /// its containers' logs.
    pub fn pods_dir(&self, namespace: &str) -> Result<PathBuf> {
        Ok(crate::process_kubelet::namespace_dir(
            &self.process()?.dir,
            namespace,
        ))
    }

    /// A network namespace on the pod network with an address of its own, for
    /// load clients and probes that must reach pods (never from the host).
    pub fn client_netns(&self) -> Result<ClientNetns> {
        ClientNetns::attach(&self.process()?.network)
    }

    /// The network namespace of the process kubelet's node, where kube-proxy
    /// keeps its rules and CoreDNS listens (read-only uses: `ip netns exec`).
    pub fn node_netns(&self) -> Result<&str> {
        Ok(self.process()?.network.node_netns())
    }

    /// A new client; make one per test (clients belong to the runtime that made them).
    pub fn client(&self) -> Result<Client> {
        Ok(Client::try_from(self.config.clone())?)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// A client for the cluster's etcd, bound to the caller's runtime.
    pub fn etcd(&self) -> Result<EtcdClient> {
        EtcdClient::new(self.etcd_url.clone())
    }

    /// The simulated kubelet's rules.
    pub fn scenarios(&self) -> &Scenarios {
        &self.scenarios
    }

    pub fn timings(&self) -> StartupTimings {
        self.timings
    }

    /// Component log files, to print when a test fails.
    pub fn logs(&self) -> &[(&'static str, PathBuf)] {
        &self.logs
    }

    /// A fresh namespace named `<prefix>-<n>`, unique in this process.
    pub async fn namespace(&self, client: &Client, prefix: &str) -> Result<TestNamespace> {
        self.namespace_with_labels(client, prefix, serde_json::json!({}))
            .await
    }

    async fn namespace_with_labels(
        &self,
        client: &Client,
        prefix: &str,
        labels: serde_json::Value,
    ) -> Result<TestNamespace> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "{prefix}-{}-{}",
            std::process::id() % 100_000,
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let api: Api<Namespace> = Api::all(client.clone());
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "labels": labels }
        }))
        .map_err(|e| TestEnvError::Kubeconfig(e.to_string()))?;
        api.create(&PostParams::default(), &ns).await?;
        Ok(TestNamespace {
            name,
            client: client.clone(),
            scenarios: self.scenarios.clone(),
        })
    }
}

/// A test's namespace. `cleanup` deletes it and the kubelet rules scoped to it.
pub struct TestNamespace {
    name: String,
    client: Client,
    scenarios: Scenarios,
}

impl TestNamespace {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub async fn cleanup(self) {
        self.scenarios.clear_namespace(&self.name);
        let api: Api<Namespace> = Api::all(self.client.clone());
        // The namespace controller finishes the deletion in the background.
        if let Err(e) = api.delete(&self.name, &DeleteParams::background()).await {
            tracing::warn!(namespace = %self.name, error = %e, "namespace cleanup failed");
        }
    }
}

/// A network namespace on the pod network; code given to [`ClientNetns::run`]
/// opens its sockets there. Removed on drop.
pub struct ClientNetns {
    // Field order is drop order: the thread stops before its namespace goes.
    runtime: NetnsRuntime,
    attachment: Attachment,
}

impl ClientNetns {
    /// A new client namespace on `network` (a process kubelet's pod network).
    pub fn attach(network: &PodNetwork) -> Result<ClientNetns> {
        let attachment = network.attach_client()?;
        let runtime = NetnsRuntime::start(&attachment.netns)?;
        Ok(ClientNetns {
            runtime,
            attachment,
        })
    }

    pub fn ip(&self) -> Ipv4Addr {
        self.attachment.ip
    }

    pub fn netns(&self) -> &str {
        &self.attachment.netns
    }

    /// Runs `future` inside the namespace.
    pub async fn run<F>(&self, future: F) -> Result<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.runtime.run(future).await
    }

    /// Starts `future` inside the namespace, in the background (a load client).
    pub fn spawn<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.runtime.spawn(future)
    }

    /// Runs a blocking closure (a blocking HTTP client, say) inside the
    /// namespace, on its thread.
    pub async fn run_blocking<F, T>(&self, f: F) -> Result<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.run(async move { f() }).await
    }

    /// One HTTP GET from inside the namespace: status code and body.
    pub async fn http_get(
        &self,
        addr: SocketAddr,
        path: &str,
    ) -> Result<std::io::Result<(u16, String)>> {
        let path = path.to_string();
        self.run(async move {
            tokio::time::timeout(
                Duration::from_secs(5),
                crate::process_kubelet::probes::http_get(addr, &path),
            )
            .await
            .unwrap_or_else(|_| Err(std::io::Error::other(format!("GET {addr}{path} timed out"))))
        })
        .await
    }
}

fn start_shared(with_processes: bool) -> Result<TestEnv> {
    let (tx, rx) = std::sync::mpsc::channel::<Result<TestEnv>>();
    std::thread::Builder::new()
        .name("testenv-shared-cluster".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send(Err(TestEnvError::Io {
                        path: PathBuf::from("tokio runtime"),
                        source: e,
                    }));
                    return;
                }
            };
            runtime.block_on(async move {
                let started = async {
                    let cluster = LocalCluster::start_with(ClusterOptions {
                        start_timeout: Duration::from_secs(120),
                        ..ClusterOptions::default()
                    })
                    .await?;
                    let kubelet =
                        SimKubelet::start(cluster.client()?, KubeletOptions::default()).await?;
                    let process = if with_processes {
                        Some(RealNode::start(&cluster, ProcessKubeletOptions::default()).await?)
                    } else {
                        None
                    };
                    Ok::<_, TestEnvError>((cluster, kubelet, process))
                }
                .await;
                match started {
                    Ok((cluster, kubelet, process)) => {
                        let env = TestEnv {
                            config: cluster.config().clone(),
                            kubeconfig: cluster.kubeconfig_path().to_path_buf(),
                            etcd_url: cluster.etcd().base_url().to_string(),
                            scenarios: kubelet.scenarios().clone(),
                            timings: cluster.timings(),
                            logs: cluster
                                .logs()
                                .iter()
                                .map(|(c, p)| (*c, p.to_path_buf()))
                                .chain(process.iter().flat_map(|node| node.services.logs()))
                                .collect(),
                            process: process.as_ref().map(|node| ProcessSide {
                                node_name: node.kubelet.node_name().to_string(),
                                dir: node.kubelet.dir().to_path_buf(),
                                network: node.kubelet.network(),
                            }),
                        };
                        let _ = tx.send(Ok(env));
                        // Keep cluster and kubelet alive until the process exits.
                        std::future::pending::<()>().await;
                        drop((process, kubelet, cluster));
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            });
        })
        .map_err(|source| TestEnvError::Io {
            path: PathBuf::from("shared cluster thread"),
            source,
        })?;
    rx.recv().map_err(|_| {
        TestEnvError::Shared("the shared cluster's thread ended before reporting".into())
    })?
}
