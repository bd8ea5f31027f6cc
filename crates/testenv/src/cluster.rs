//! A real control plane on loopback: etcd, kube-apiserver and
//! kube-controller-manager, each on free ports with freshly generated
//! certificates, torn down on drop.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

use crate::binaries::KubeBinaries;
use crate::error::{IoContext, Result, TestEnvError};
use crate::etcd::{EtcdClient, EtcdTls};
use crate::pki::{PkiFiles, write_cluster_pki};
use crate::process::ManagedProcess;

/// The controllers the local cluster runs. Everything that needs real nodes
/// (node lifecycle would evict pods from a simulated node without heartbeats,
/// IPAM, volumes, cloud) is left out; everything a rollout, a Job, a garbage
/// collection or a namespace deletion needs is in.
const CONTROLLERS: &[&str] = &[
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "daemonset-controller",
    "job-controller",
    "cronjob-controller",
    "ttl-after-finished-controller",
    "root-ca-certificate-publisher-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "endpointslice-mirroring-controller",
    "disruption-controller",
    "pod-garbage-collector-controller",
    "resourcequota-controller",
];

/// How to start a cluster.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// Upper bound for each component to become ready.
    pub start_timeout: Duration,
    /// Keep the working directory (certificates, logs, etcd data) after drop.
    pub keep_dir: bool,
    /// Use these binaries instead of building or finding them.
    pub binaries: Option<KubeBinaries>,
    /// Extra kube-apiserver flags (e.g. `--watch-cache=false`, so lists are
    /// served by etcd and their continue tokens expire on compaction).
    pub apiserver_args: Vec<String>,
    /// Extra kube-controller-manager flags (a `--controllers=` here adds to the
    /// cluster's list: the flag is a list that repeats append to).
    pub controller_manager_args: Vec<String>,
    /// etcd serves TLS and wants client certificates, as on a production
    /// control plane; the API server and [`LocalCluster::etcd`] use a client
    /// identity, whose files [`LocalCluster::etcd_client_files`] names.
    pub etcd_tls: bool,
}

/// The files a client needs to reach a TLS etcd.
#[derive(Clone, Debug)]
pub struct EtcdClientFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            start_timeout: Duration::from_secs(60),
            keep_dir: false,
            binaries: None,
            apiserver_args: Vec::new(),
            controller_manager_args: Vec::new(),
            etcd_tls: false,
        }
    }
}

/// Start-up timings, reported by the benchmark.
#[derive(Clone, Copy, Debug, Default)]
pub struct StartupTimings {
    pub binaries: Duration,
    pub etcd: Duration,
    pub apiserver: Duration,
    pub controller_manager: Duration,
    pub total: Duration,
}

/// A running local control plane. Dropping it stops every component.
pub struct LocalCluster {
    // Field order is drop order: controller-manager, then API server, then etcd.
    controller_manager: ManagedProcess,
    apiserver: ManagedProcess,
    etcd: ManagedProcess,
    config: Config,
    kubeconfig_path: PathBuf,
    etcd_client: EtcdClient,
    etcd_client_files: Option<EtcdClientFiles>,
    apiserver_url: String,
    binaries: KubeBinaries,
    timings: StartupTimings,
    dir: Option<tempfile::TempDir>,
    dir_path: PathBuf,
}

impl LocalCluster {
    /// Starts a cluster with default options.
    pub async fn start() -> Result<LocalCluster> {
        Self::start_with(ClusterOptions::default()).await
    }

    /// Starts a cluster; retries with new ports when another process grabbed
    /// one of ours between choosing and binding it.
    pub async fn start_with(options: ClusterOptions) -> Result<LocalCluster> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Self::start_once(&options).await {
                Err(TestEnvError::PortInUse { component, .. }) if attempt < 3 => {
                    tracing::warn!(component, attempt, "port clash, retrying with new ports");
                }
                other => return other,
            }
        }
    }

    async fn start_once(options: &ClusterOptions) -> Result<LocalCluster> {
        let started = Instant::now();
        let binaries = match &options.binaries {
            Some(binaries) => {
                binaries.check()?;
                binaries.clone()
            }
            None => KubeBinaries::ensure()?,
        };
        let mut timings = StartupTimings {
            binaries: started.elapsed(),
            ..Default::default()
        };

        let dir = new_cluster_dir()?;
        let dir_path = dir.path().to_path_buf();
        let pki = write_cluster_pki(&dir_path.join("pki"))?;

        let phase = Instant::now();
        let etcd_client_files = options.etcd_tls.then(|| EtcdClientFiles {
            ca: pki.ca_cert.clone(),
            cert: pki.etcd_client_cert.clone(),
            key: pki.etcd_client_key.clone(),
        });
        let (etcd, etcd_client) = start_etcd(
            &binaries,
            &dir_path,
            &pki,
            etcd_client_files.as_ref(),
            options.start_timeout,
        )
        .await?;
        timings.etcd = phase.elapsed();

        let phase = Instant::now();
        let apiserver_port = free_port()?;
        let apiserver_url = format!("https://127.0.0.1:{apiserver_port}");
        let kubeconfig_path = dir_path.join("kubeconfig");
        let kubeconfig = kubeconfig_json(&apiserver_url, &pki);
        std::fs::write(
            &kubeconfig_path,
            serde_json::to_vec_pretty(&kubeconfig).unwrap_or_default(),
        )
        .at(&kubeconfig_path)?;
        let config = config_from_kubeconfig(kubeconfig).await?;
        let apiserver = start_apiserver(
            &binaries,
            &dir_path,
            &pki,
            apiserver_port,
            etcd_client.base_url(),
            &config,
            options,
        )
        .await?;
        timings.apiserver = phase.elapsed();

        let phase = Instant::now();
        let controller_manager = start_controller_manager(
            &binaries,
            &dir_path,
            &pki,
            &kubeconfig_path,
            &config,
            options,
        )
        .await?;
        timings.controller_manager = phase.elapsed();
        timings.total = started.elapsed();

        let (dir, dir_path) = if options.keep_dir {
            (None, dir.keep())
        } else {
            (Some(dir), dir_path)
        };
        tracing::info!(url = %apiserver_url, kubeconfig = %kubeconfig_path.display(), ?timings, "local cluster ready");
        Ok(LocalCluster {
            controller_manager,
            apiserver,
            etcd,
            config,
            kubeconfig_path,
            etcd_client,
            etcd_client_files,
            apiserver_url,
            binaries,
            timings,
            dir,
            dir_path,
        })
    }

    /// A new client for the admin identity. Clients are cheap; make one per
    /// async runtime (a client's connection tasks live on the runtime that made it).
    pub fn client(&self) -> Result<Client> {
        Ok(Client::try_from(self.config.clone())?)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// A kubeconfig file for the admin identity, usable by kubectl.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    pub fn apiserver_url(&self) -> &str {
        &self.apiserver_url
    }

    /// The CA and client identity for etcd, when it serves TLS.
    pub fn etcd_client_files(&self) -> Option<&EtcdClientFiles> {
        self.etcd_client_files.as_ref()
    }

    /// Direct access to the cluster's etcd, for reading what is really stored.
    pub fn etcd(&self) -> &EtcdClient {
        &self.etcd_client
    }

    pub fn binaries(&self) -> &KubeBinaries {
        &self.binaries
    }

    pub fn timings(&self) -> StartupTimings {
        self.timings
    }

    /// The working directory: certificates, component logs, etcd data.
    pub fn dir(&self) -> &Path {
        &self.dir_path
    }

    /// Log files of the components, for diagnostics.
    pub fn logs(&self) -> [(&'static str, &Path); 3] {
        [
            (self.etcd.component(), self.etcd.log()),
            (self.apiserver.component(), self.apiserver.log()),
            (
                self.controller_manager.component(),
                self.controller_manager.log(),
            ),
        ]
    }

    /// Stops the controller-manager (for tests of what happens without it).
    pub fn stop_controller_manager(&mut self) {
        self.controller_manager.stop();
    }

    /// Starts the controller-manager again with the same flags.
    pub async fn start_controller_manager(&mut self, timeout: Duration) -> Result<()> {
        self.controller_manager.restart()?;
        wait_controller_manager(&mut self.controller_manager, &self.config, timeout).await
    }

    /// Kills kube-apiserver (SIGKILL, as a crashed or evicted one); clients see
    /// refused connections until [`Self::start_apiserver`].
    pub fn stop_apiserver(&mut self) {
        self.apiserver.stop();
    }

    /// Starts kube-apiserver again on the same port with the same flags and
    /// certificates, and waits until it answers `/readyz`.
    pub async fn start_apiserver(&mut self, timeout: Duration) -> Result<()> {
        self.apiserver.restart()?;
        wait_apiserver(&mut self.apiserver, &self.config, timeout).await
    }

    /// Kills etcd; the API server stays up but cannot read or write.
    pub fn stop_etcd(&mut self) {
        self.etcd.stop();
    }

    /// Starts etcd again on its ports with its data, and waits until it is healthy.
    pub async fn start_etcd(&mut self, timeout: Duration) -> Result<()> {
        self.etcd.restart()?;
        let client = &self.etcd_client;
        self.etcd.wait_ready(timeout, || client.healthy()).await
    }

    /// Whether the temporary directory is removed on drop.
    pub fn keeps_dir(&self) -> bool {
        self.dir.is_none()
    }
}

async fn start_etcd(
    binaries: &KubeBinaries,
    dir: &Path,
    pki: &PkiFiles,
    tls: Option<&EtcdClientFiles>,
    timeout: Duration,
) -> Result<(ManagedProcess, EtcdClient)> {
    let client_port = free_port()?;
    let peer_port = free_port()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let client_url = format!("{scheme}://127.0.0.1:{client_port}");
    let peer_url = format!("http://127.0.0.1:{peer_port}");
    let mut args = vec![
        "--name=local".to_string(),
        format!("--data-dir={}", dir.join("etcd").display()),
        format!("--listen-client-urls={client_url}"),
        format!("--advertise-client-urls={client_url}"),
        format!("--listen-peer-urls={peer_url}"),
        format!("--initial-advertise-peer-urls={peer_url}"),
        format!("--initial-cluster=local={peer_url}"),
        // Test data is thrown away: skipping fsync makes every write much faster.
        "--unsafe-no-fsync".to_string(),
        "--log-level=warn".to_string(),
    ];
    let client = match tls {
        Some(files) => {
            args.extend([
                format!("--cert-file={}", pki.etcd_cert.display()),
                format!("--key-file={}", pki.etcd_key.display()),
                "--client-cert-auth=true".to_string(),
                format!("--trusted-ca-file={}", pki.ca_cert.display()),
            ]);
            EtcdClient::with_tls(
                client_url,
                &EtcdTls::from_files(&files.ca, &files.cert, &files.key)?,
            )?
        }
        None => EtcdClient::new(client_url)?,
    };
    let mut etcd = ManagedProcess::start("etcd", &binaries.etcd(), &args, dir.join("etcd.log"))?;
    etcd.wait_ready(timeout, || client.healthy()).await?;
    Ok((etcd, client))
}

async fn start_apiserver(
    binaries: &KubeBinaries,
    dir: &Path,
    pki: &PkiFiles,
    port: u16,
    etcd_url: &str,
    config: &Config,
    options: &ClusterOptions,
) -> Result<ManagedProcess> {
    let timeout = options.start_timeout;
    let sa_key = pki.service_account_key.display().to_string();
    let sa_public = pki.service_account_public_key.display().to_string();
    let args = vec![
        format!("--etcd-servers={etcd_url}"),
        format!("--secure-port={port}"),
        "--bind-address=127.0.0.1".to_string(),
        "--advertise-address=127.0.0.1".to_string(),
        format!("--cert-dir={}", dir.join("apiserver-certs").display()),
        format!("--tls-cert-file={}", pki.serving_cert.display()),
        format!("--tls-private-key-file={}", pki.serving_key.display()),
        format!("--client-ca-file={}", pki.ca_cert.display()),
        // Room for a fleet: a /24 holds 254 Services, fewer than 300 Cinders
        // need (the API server answers 500 "range is full" past that).
        "--service-cluster-ip-range=10.0.0.0/16".to_string(),
        "--authorization-mode=RBAC".to_string(),
        "--service-account-issuer=https://kubernetes.default.svc".to_string(),
        format!("--service-account-key-file={sa_public}"),
        format!("--service-account-signing-key-file={sa_key}"),
        "--allow-privileged=true".to_string(),
        "--profiling=false".to_string(),
        // One API server, no peers: the lease reconciler only adds start-up work.
        "--endpoint-reconciler-type=none".to_string(),
        // `kubectl logs`/`exec` make the API server dial the pod's kubelet. By
        // its node's InternalIP only (127.0.0.1, or the process node's bridge
        // address, unreachable from the host namespace): never by hostname,
        // which would ask the host's resolver, off the machine.
        "--kubelet-preferred-address-types=InternalIP".to_string(),
        "--v=1".to_string(),
    ]
    .into_iter()
    .chain(options.etcd_tls.then_some(()).into_iter().flat_map(|()| {
        [
            format!("--etcd-cafile={}", pki.ca_cert.display()),
            format!("--etcd-certfile={}", pki.etcd_client_cert.display()),
            format!("--etcd-keyfile={}", pki.etcd_client_key.display()),
        ]
    }))
    .chain(options.apiserver_args.iter().cloned())
    .collect::<Vec<_>>();
    let mut apiserver = ManagedProcess::start(
        "kube-apiserver",
        &binaries.kube_apiserver(),
        &args,
        dir.join("kube-apiserver.log"),
    )?;
    wait_apiserver(&mut apiserver, config, timeout).await?;
    Ok(apiserver)
}

async fn wait_apiserver(
    apiserver: &mut ManagedProcess,
    config: &Config,
    timeout: Duration,
) -> Result<()> {
    let client = Client::try_from(config.clone())?;
    apiserver
        .wait_ready(timeout, || {
            let client = client.clone();
            async move {
                // `send` rather than `request_text`: a 500 while post-start hooks
                // finish is expected here and should not be logged as an error.
                match http::Request::get("/readyz").body(kube::client::Body::empty()) {
                    Ok(req) => client
                        .send(req)
                        .await
                        .is_ok_and(|resp| resp.status() == http::StatusCode::OK),
                    Err(_) => false,
                }
            }
        })
        .await
}

async fn start_controller_manager(
    binaries: &KubeBinaries,
    dir: &Path,
    pki: &PkiFiles,
    kubeconfig: &Path,
    config: &Config,
    options: &ClusterOptions,
) -> Result<ManagedProcess> {
    let kubeconfig = kubeconfig.display().to_string();
    let mut args = vec![
        format!("--kubeconfig={kubeconfig}"),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        "--leader-elect=false".to_string(),
        format!("--controllers={}", CONTROLLERS.join(",")),
        format!(
            "--service-account-private-key-file={}",
            pki.service_account_key.display()
        ),
        format!("--root-ca-file={}", pki.ca_cert.display()),
        "--use-service-account-credentials=false".to_string(),
        "--bind-address=127.0.0.1".to_string(),
        format!("--secure-port={}", free_port()?),
        format!("--cert-dir={}", dir.join("kcm-certs").display()),
        // The defaults are tuned for big clusters sharing an API server; here the
        // controller-manager is alone and should react at once.
        "--kube-api-qps=200".to_string(),
        "--kube-api-burst=400".to_string(),
        "--v=1".to_string(),
    ];
    args.extend(options.controller_manager_args.iter().cloned());
    let mut kcm = ManagedProcess::start(
        "kube-controller-manager",
        &binaries.kube_controller_manager(),
        &args,
        dir.join("kube-controller-manager.log"),
    )?;
    wait_controller_manager(&mut kcm, config, options.start_timeout).await?;
    Ok(kcm)
}

/// Ready means controllers run: the service-account controller has created
/// the default namespace's ServiceAccount, which pods need to be admitted.
/// (After a restart it is already there; the process being alive then is all
/// this can tell.)
async fn wait_controller_manager(
    kcm: &mut ManagedProcess,
    config: &Config,
    timeout: Duration,
) -> Result<()> {
    let client = Client::try_from(config.clone())?;
    let accounts: Api<ServiceAccount> = Api::namespaced(client, "default");
    kcm.wait_ready(timeout, || {
        let accounts = accounts.clone();
        async move { matches!(accounts.get_opt("default").await, Ok(Some(_))) }
    })
    .await
}

fn kubeconfig_json(server: &str, pki: &PkiFiles) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "ratchet-local",
            "cluster": {
                "server": server,
                "certificate-authority-data": B64.encode(&pki.ca_pem),
            }
        }],
        "users": [{
            "name": "ratchet-admin",
            "user": {
                "client-certificate-data": B64.encode(&pki.admin_cert_pem),
                "client-key-data": B64.encode(&pki.admin_key_pem),
            }
        }],
        "contexts": [{
            "name": "ratchet-local",
            "context": { "cluster": "ratchet-local", "user": "ratchet-admin", "namespace": "default" }
        }],
        "current-context": "ratchet-local",
    })
}

async fn config_from_kubeconfig(kubeconfig: serde_json::Value) -> Result<Config> {
    let kubeconfig: Kubeconfig =
        serde_json::from_value(kubeconfig).map_err(|e| TestEnvError::Kubeconfig(e.to_string()))?;
    // kube's default read timeout (295 s) stays: it is what lets a watch
    // (290 s) end on its own; a shorter one breaks every quiet watch.
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| TestEnvError::Kubeconfig(e.to_string()))
}

/// A port the kernel considers free right now. Another process may take it
/// before ours binds; `start_with` retries on that.
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").at("127.0.0.1:0")?;
    Ok(listener.local_addr().at("127.0.0.1:0")?.port())
}

/// A new directory under `$TMPDIR/ratchet-testenv`, named after this process so
/// the next start can remove what dead processes left behind (a cluster in a
/// `static` is never dropped).
fn new_cluster_dir() -> Result<tempfile::TempDir> {
    new_work_dir("cluster")
}

/// A new working directory `$TMPDIR/ratchet-testenv/<pid>-<n>-<kind>…`, removed
/// by a later start once this process is gone.
pub(crate) fn new_work_dir(kind: &str) -> Result<tempfile::TempDir> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let root = std::env::temp_dir().join("ratchet-testenv");
    std::fs::create_dir_all(&root).at(&root)?;
    remove_orphaned_dirs(&root);
    let prefix = format!(
        "{}-{}-{kind}-",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(&root)
        .at(&root)
}

fn remove_orphaned_dirs(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            // Best effort: a directory we cannot remove is only disk space.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
