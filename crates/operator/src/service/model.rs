//! What a service asks the cluster for, as data: the configuration file, the
//! Secrets its processes read, the user its pods run as, and its workloads in
//! roll order. Each service builds a [`ServiceModel`] from its resource;
//! rendering and observing are shared.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use ratchet_api::common::{PodIdentity, SecretKeyRef, WorkloadSpec};
use ratchet_phase_machine::hash::content_hash;
use ratchet_phase_machine::{HostDrain, Replicas, WorkloadId};

/// Environment variables oslo.config maps onto options; they take precedence
/// over configuration files, so Secrets never appear in a ConfigMap.
pub const ENV_DATABASE_CONNECTION: &str = "OS_DATABASE__CONNECTION";
pub const ENV_TRANSPORT_URL: &str = "OS_DEFAULT__TRANSPORT_URL";

/// An environment variable filled from a Secret key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretEnv {
    pub env: String,
    pub source: SecretKeyRef,
}

/// The variable naming the group a per-group Job runs for.
pub const ENV_JOB_GROUP: &str = "RATCHET_JOB_GROUP";

/// A group the profile's per-group Jobs run once for, with its own Secrets
/// (e.g. a Nova cell: its database and message bus), which replace the
/// model's of the same variables in that group's Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobGroup {
    /// A DNS label: it ends the Job's name.
    pub name: String,
    pub secrets: Vec<SecretEnv>,
}

/// `base` without the variables `own` sets, then `own`: the Secrets of a
/// workload or Job group that has its own.
pub fn with_own<'a>(
    base: impl Iterator<Item = &'a SecretEnv>,
    own: &'a [SecretEnv],
) -> impl Iterator<Item = &'a SecretEnv> {
    base.filter(|s| !own.iter().any(|o| o.env == s.env))
        .chain(own)
}

/// A Secret of keys Ratchet creates once, when it is absent, and never
/// rewrites (a service's own keys, e.g. Keystone's fernet keys, which every
/// replica must share): mounted read-only at `mount_path` in every pod and Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySecret {
    pub secret_name: String,
    pub mount_path: &'static str,
    /// Its keys (file names), each created holding [`new_key`].
    pub keys: Vec<&'static str>,
}

/// A fresh key: 32 random bytes, URL-safe base64 (Fernet's key format).
pub fn new_key() -> String {
    use base64::Engine;
    let bytes: [u8; 32] = rand::random();
    base64::engine::general_purpose::URL_SAFE.encode(bytes)
}

/// How a workload runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// Interchangeable replicas, surged one at a time.
    Deployment,
    /// Stable identities (e.g. conductors registered by host name), replaced
    /// one at a time, each after the previous one is ready.
    StatefulSet,
    /// One pod on each node its selector places it on (a per-node agent:
    /// Neutron's agents, Nova's computes on their hypervisors), known to its
    /// service by the node's name; a node's old pod goes before its new one
    /// starts, since two agents of one host would both report as it.
    DaemonSet,
}

/// A claim each pod of a StatefulSet gets of its own, `<name>-<pod>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodClaim {
    /// A DNS label: the claim template's name, and its volume's.
    pub name: String,
    pub mount_path: String,
    /// The storage it requests, as a Kubernetes quantity (`1Gi`).
    pub size: String,
}

/// Seconds a terminating API pod keeps serving before its process is asked to
/// stop: endpoint controllers and clients see it leave the Service first, so
/// no new request reaches a closed socket.
pub const API_DRAIN_SECONDS: i32 = 5;

/// oslo.service's `graceful_shutdown_timeout` (60 s: how long a stopping
/// service finishes the requests it took) plus a margin, so Kubernetes does not
/// kill it first.
pub const OSLO_SHUTDOWN_GRACE_SECONDS: i64 = 70;

/// How the kubelet tells that a pod serves, run inside its container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    pub command: Vec<String>,
    /// Seconds between checks; each may take up to this long too.
    pub period_seconds: i32,
}

/// One long-running workload.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadModel {
    /// Object name.
    pub name: String,
    /// `app.kubernetes.io/component` and the container's name.
    pub component: String,
    pub kind: WorkloadKind,
    pub command: Vec<String>,
    /// Its pods, for a Deployment or StatefulSet; a DaemonSet runs one on
    /// each node it is placed on instead.
    pub replicas: i32,
    pub resources: Option<ResourceRequirements>,
    /// Plain environment beyond the Secrets (e.g. a volume back end's name).
    pub env: Vec<(String, String)>,
    /// Variables from the pod's own fields (downward API), by field path: an
    /// agent's host is its node's name (`spec.nodeName`).
    pub field_env: Vec<(String, &'static str)>,
    /// Labels a node must carry for its pods to run there (e.g. the network
    /// nodes a per-node agent belongs on); empty: any node.
    pub node_selector: BTreeMap<String, String>,
    /// Its own Secrets, replacing the model's of the same variables (a cell's
    /// conductor reads its cell's database and message bus).
    pub secrets: Vec<SecretEnv>,
    /// An HTTP API on this port, exposed by the Service named after the resource.
    pub api_port: Option<i32>,
    /// Whether its pods carry the installed-release annotation (the second roll).
    pub carries_installed_release: bool,
    /// PersistentVolumeClaims mounted into its pods: (claim, mount path).
    pub claims: Vec<(String, String)>,
    /// A claim of each pod's own (a StatefulSet's claim templates): state a
    /// pod keeps across its restarts and rolls, e.g. a fake compute's node
    /// identity. Fixed once the StatefulSet exists (Kubernetes refuses to
    /// change claim templates).
    pub pod_claims: Vec<PodClaim>,
    /// The readiness check: every long-running workload has one, so a pod that
    /// is up but not serving holds its roll.
    pub readiness: Readiness,
    /// Seconds a terminating pod keeps serving before its process is asked to
    /// stop, so clients see it leave the Service's endpoints first.
    pub pre_stop_sleep_seconds: Option<i32>,
    /// The pod's grace period after SIGTERM, when the Kubernetes default (30 s)
    /// is shorter than the service's own graceful shutdown.
    pub termination_grace_seconds: Option<i64>,
    /// Whether its pods run as root, privileged, with privilege escalation
    /// allowed (a Cinder back end that opted in: rootwrap, LVM) instead of
    /// restricted as the model's [`PodIdentity`].
    pub privileged: bool,
    /// How its host is taken out of service before its pods restart and
    /// given back after (docs/drain.md); `None`: restarted as it is.
    pub drain: Option<HostDrain>,
    /// Workloads of one role are independent hosts that a roll may restart
    /// side by side, `upgrade.maxParallel` at a time (a Cinder's volume back
    /// ends); `None`: a role of its own.
    pub role: Option<String>,
    /// How many nodes' pods a per-node agent (a DaemonSet) restarts at once:
    /// its rolling update's `maxUnavailable`, `upgrade.maxParallel`. At
    /// least 1; other kinds roll as their own strategy says.
    pub nodes_at_once: i32,
}

impl WorkloadModel {
    /// `<resource>-api`: an API Deployment behind the Service named after the
    /// resource on `port`, sized by `spec`, drained before its process is asked
    /// to stop.
    pub fn api(
        resource: &str,
        command: Vec<String>,
        spec: &WorkloadSpec,
        port: i32,
        readiness: Readiness,
    ) -> WorkloadModel {
        WorkloadModel {
            api_port: Some(port),
            pre_stop_sleep_seconds: Some(API_DRAIN_SECONDS),
            ..WorkloadModel::worker(
                resource,
                "api",
                WorkloadKind::Deployment,
                command,
                spec,
                readiness,
            )
        }
    }

    /// `<resource>-<component>`: a process without an API (a conductor, an
    /// RPC server, an agent), of `kind`, sized by `spec` (its replicas unless
    /// it runs per node), restricted, stopped within Kubernetes' default grace.
    pub fn worker(
        resource: &str,
        component: &str,
        kind: WorkloadKind,
        command: Vec<String>,
        spec: &WorkloadSpec,
        readiness: Readiness,
    ) -> WorkloadModel {
        WorkloadModel {
            name: format!("{resource}-{component}"),
            component: component.into(),
            kind,
            command,
            replicas: spec.replicas_or_default(),
            resources: spec.resources.clone(),
            env: Vec::new(),
            field_env: Vec::new(),
            node_selector: BTreeMap::new(),
            secrets: Vec::new(),
            api_port: None,
            carries_installed_release: false,
            claims: Vec::new(),
            pod_claims: Vec::new(),
            readiness,
            pre_stop_sleep_seconds: None,
            termination_grace_seconds: None,
            privileged: false,
            drain: None,
            role: None,
            nodes_at_once: 1,
        }
    }
}

/// How a service's old and new processes keep talking during an upgrade, and
/// what ends it: the service's choice, declared in its folder; the profile's
/// rolls and the workloads' second roll follow it (`shared_tests/pins.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinStrategy {
    /// Nothing to pin: an API alone, or processes that adapt to their peers'
    /// versions (Neutron's agents report theirs).
    None,
    /// The processes pin themselves from what they find when they start
    /// (Cinder's services table; Nova's `[upgrade_levels] compute = auto`)
    /// and keep it until restarted: the workloads that carry the installed
    /// release restart once it is promoted (the second roll), which releases it.
    ReleasedBySecondRoll,
    /// This option is set to the installed release on the profile's pinned
    /// roll, through its environment variable (fixed for the pod's lifetime),
    /// and is gone after the next roll (Ironic's `[DEFAULT]
    /// pin_release_version`).
    OptionSetThenRemoved(super::ini::ManagedOption),
}

impl PinStrategy {
    /// The option a pinned roll sets, if the strategy has one.
    pub fn option(&self) -> Option<super::ini::ManagedOption> {
        match self {
            PinStrategy::OptionSetThenRemoved(option) => Some(*option),
            PinStrategy::None | PinStrategy::ReleasedBySecondRoll => None,
        }
    }
}

/// Everything the shared controller renders for one resource.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceModel {
    /// Where the configuration is mounted; commands read it with `--config-dir`.
    pub config_dir: &'static str,
    /// The configuration's file name in that directory, and its text; or the
    /// entries the renderer refused to write (the resource is then blocked with
    /// `InvalidConfig` and no ConfigMap is written).
    pub config_file: &'static str,
    pub config: Result<String, Vec<String>>,
    /// Files beside the configuration, in the same ConfigMap (the API's paste
    /// pipeline, the readiness check); named by their keys.
    pub support_files: Vec<(&'static str, String)>,
    /// Directories under the state directory its processes need to exist and
    /// be writable: an emptyDir each, in every pod and Job.
    pub scratch_dirs: Vec<&'static str>,
    /// A writable directory for the service's state (lock files, caches).
    pub state_dir: &'static str,
    /// The database and message bus URLs.
    pub secrets: Vec<SecretEnv>,
    /// The groups the profile's per-group Jobs run for, in order (none when
    /// it has no such Job).
    pub job_groups: Vec<JobGroup>,
    /// Variables from Secret keys that only the Jobs get: what no
    /// long-running process needs (Keystone's bootstrap password).
    pub job_secrets: Vec<SecretEnv>,
    /// Plain variables only the Jobs get: what would restart every pod if it
    /// changed, were it the pods' (e.g. the hosts the workloads run as, which
    /// change with their replicas).
    pub job_env: Vec<(String, String)>,
    /// Plain environment of every pod and Job (a workload adds its own).
    pub env: Vec<(String, String)>,
    /// Secrets of keys Ratchet creates when absent, mounted everywhere.
    pub key_secrets: Vec<KeySecret>,
    /// Options set from Secrets (`spec.secretOptions`), by variable name.
    pub secret_options: Vec<SecretEnv>,
    /// The user and groups its pods run as (unless privileged).
    pub identity: PodIdentity,
    /// In roll order.
    pub workloads: Vec<WorkloadModel>,
    /// Seconds a rollout may make no progress before it counts as stalled.
    pub rollout_deadline_seconds: i32,
    /// What `spec.identity` registers in Keystone, if the spec has one.
    pub registration: Option<super::registration_plan::Registration>,
    /// How old and new processes stay compatible during an upgrade.
    pub pin: PinStrategy,
}

impl ServiceModel {
    /// The workloads as the phase machine sees them, in roll order.
    pub fn workload_ids(&self) -> Vec<WorkloadId> {
        self.workloads
            .iter()
            .map(|w| WorkloadId {
                name: w.name.clone(),
                component: w.component.clone(),
                carries_installed_release: w.carries_installed_release,
                replicas: match w.kind {
                    WorkloadKind::DaemonSet => Replicas::PerNode,
                    WorkloadKind::Deployment | WorkloadKind::StatefulSet => {
                        Replicas::Fixed(w.replicas)
                    }
                },
                drain: w.drain.clone(),
                role: w.role.clone().unwrap_or_else(|| w.component.clone()),
            })
            .collect()
    }

    /// Every file of the ConfigMap by key, or `None` when the renderer refused
    /// the configuration (then nothing is written).
    pub fn files(&self) -> Option<BTreeMap<&str, &str>> {
        let config = self.config.as_deref().ok()?;
        let mut files = BTreeMap::from([(self.config_file, config)]);
        files.extend(self.support_files.iter().map(|(k, v)| (*k, v.as_str())));
        if self.registration.is_some() {
            let (key, script) = super::registration_plan::registration_script();
            files.insert(key, script);
        }
        Some(files)
    }

    pub fn workload(&self, name: &str) -> Option<&WorkloadModel> {
        self.workloads.iter().find(|w| w.name == name)
    }

    /// Every variable filled from a Secret key, in a pod or a Job.
    pub fn all_secrets(&self) -> impl Iterator<Item = &SecretEnv> {
        self.pod_secrets()
            .chain(&self.job_secrets)
            .chain(self.job_groups.iter().flat_map(|g| &g.secrets))
            .chain(self.workloads.iter().flat_map(|w| &w.secrets))
    }

    /// The groups' names, in order, as the phase machine sees them.
    pub fn job_group_names(&self) -> Vec<String> {
        self.job_groups.iter().map(|g| g.name.clone()).collect()
    }

    /// The variables filled from Secret keys that every pod and Job gets.
    pub fn pod_secrets(&self) -> impl Iterator<Item = &SecretEnv> {
        self.secrets.iter().chain(&self.secret_options)
    }

    /// The hash of the configuration the processes read: the rendered `text`
    /// and, when there are any, which options come from which Secret keys (so a
    /// change to them re-runs the sync Job, as a change to the file does).
    pub fn config_hash(&self, text: &str) -> String {
        if self.secret_options.is_empty() {
            return content_hash(text.as_bytes());
        }
        let mut identity = text.to_string();
        for s in &self.secret_options {
            identity.push_str(&format!(
                "\0{}={}/{}",
                s.env, s.source.secret_name, s.source.key
            ));
        }
        content_hash(identity.as_bytes())
    }

    /// The database and message bus URLs, from the resource's Secret references.
    pub fn standard_secrets(database: &SecretKeyRef, transport: &SecretKeyRef) -> Vec<SecretEnv> {
        vec![
            SecretEnv {
                env: ENV_DATABASE_CONNECTION.to_string(),
                source: database.clone(),
            },
            SecretEnv {
                env: ENV_TRANSPORT_URL.to_string(),
                source: transport.clone(),
            },
        ]
    }
}
