//! Neutron's model: the server side as three Deployments in roll order — the
//! RPC servers (the agents' peers; first, so every agent is served by a
//! target release server before an API exposes what needs it), the periodic
//! workers, the API under uWSGI — then the per-node agents as DaemonSets,
//! each known to the server by its node's name.

use ratchet_operator::service::peers::Peers;
use std::collections::BTreeMap;

use ratchet_api::common::{PodSecurity, UpgradePolicy, WorkloadSpec};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::{
    OSLO_SHUTDOWN_GRACE_SECONDS, PinStrategy, Readiness, ServiceModel, WorkloadKind, WorkloadModel,
};
use ratchet_operator::service::{identity, readiness, registration_plan, secret_options, uwsgi};

use super::config::{self, CONFIG_FILE, STATE_DIR};
use super::profile::CONFIG_DIR;
use crate::neutron::v1alpha1::{AgentSpec, Neutron};

pub const API_PORT: i32 = 9696;
/// Neutron's type in Keystone's catalogue.
pub const CATALOG_TYPE: &str = "network";

/// The RPC servers' readiness check, beside the configuration.
const RPC_PROBE: (&str, &str) = ("ratchet-neutron-rpc-probe.py", include_str!("rpc_probe.py"));

/// Where an agent finds its node's name: `[DEFAULT] host`, as oslo.config
/// reads it from the environment.
const ENV_HOST: &str = "OS_DEFAULT__HOST";

/// Listing networks passes keystonemiddleware (401 without a token) and,
/// without Keystone, reads the database.
const READINESS_PATH: &str = "/v2.0/networks";

/// An agent has reported within this long: three of its reports
/// (`[agent] report_interval`, 30 s).
const AGENT_REPORT_AGE_SECONDS: u32 = 90;

/// uWSGI ([`uwsgi::http_command`]): each worker loads the application itself
/// (`--lazy-apps`: loading opens database connections, which a fork would
/// share); the buffer holds request headers, Keystone tokens exceed uWSGI's
/// default of 4 KiB.
fn api_command() -> Vec<String> {
    uwsgi::http_command(
        API_PORT,
        "neutron.wsgi.api:application",
        &["--lazy-apps", "--buffer-size", "65535"],
    )
}

fn command(binary: &str) -> Vec<String> {
    vec![binary.into(), "--config-dir".into(), CONFIG_DIR.into()]
}

/// A process of Neutron's own (not the API): `kind`, sized by `spec`, given
/// the time oslo.service takes to finish what it took when it stops.
fn process(
    name: &str,
    component: &str,
    kind: WorkloadKind,
    binary: &str,
    spec: &WorkloadSpec,
    readiness: Readiness,
) -> WorkloadModel {
    WorkloadModel {
        termination_grace_seconds: Some(OSLO_SHUTDOWN_GRACE_SECONDS),
        ..WorkloadModel::worker(name, component, kind, command(binary), spec, readiness)
    }
}

/// An RPC server answers an RPC call for its own queue (see `rpc_probe.py`).
fn rpc_readiness() -> Readiness {
    Readiness {
        command: vec!["python3".into(), format!("{CONFIG_DIR}/{}", RPC_PROBE.0)],
        period_seconds: 10,
    }
}

/// Where the agents run and how many nodes' agents restart at once.
struct Agents {
    node_selector: BTreeMap<String, String>,
    nodes_at_once: i32,
}

/// A per-node agent: a DaemonSet on the agents' nodes, reporting under its
/// node's name; ready once its report since the container started reached
/// the database through an RPC server.
fn agent(
    name: &str,
    component: &str,
    binary: &str,
    agent_type: &str,
    spec: &AgentSpec,
    agents: &Agents,
) -> WorkloadModel {
    let host = readiness::from_env(ENV_HOST);
    let sized = WorkloadSpec {
        replicas: None,
        resources: spec.resources.clone(),
    };
    WorkloadModel {
        field_env: vec![(ENV_HOST.into(), "spec.nodeName")],
        node_selector: agents.node_selector.clone(),
        nodes_at_once: agents.nodes_at_once,
        ..process(
            name,
            component,
            WorkloadKind::DaemonSet,
            binary,
            &sized,
            readiness::reported(
                CONFIG_DIR,
                "agents",
                "heartbeat_timestamp",
                AGENT_REPORT_AGE_SECONDS,
                &[("agent_type", agent_type), ("host", &host)],
            ),
        )
    }
}

pub fn model(neutron: &Neutron, name: &str, peers: &Peers) -> ServiceModel {
    let spec = &neutron.spec;
    let namespace = neutron.metadata.namespace.as_deref().unwrap_or_default();
    let mut workloads = vec![
        process(
            name,
            "rpc-server",
            WorkloadKind::Deployment,
            "neutron-rpc-server",
            &spec.rpc_server,
            rpc_readiness(),
        ),
        process(
            name,
            "periodic-workers",
            WorkloadKind::Deployment,
            "neutron-periodic-workers",
            &spec.periodic_workers,
            readiness::database(CONFIG_DIR),
        ),
        WorkloadModel::api(
            name,
            api_command(),
            &spec.api,
            API_PORT,
            readiness::api(CONFIG_DIR, API_PORT, READINESS_PATH),
        ),
    ];
    let agents = Agents {
        node_selector: spec.agents.node_selector.clone(),
        nodes_at_once: i32::try_from(UpgradePolicy::parallel_bound(Some(&spec.upgrade)))
            .unwrap_or(i32::MAX),
    };
    if let Some(metadata) = &spec.agents.metadata {
        workloads.push(agent(
            name,
            "metadata-agent",
            "neutron-metadata-agent",
            "Metadata agent",
            metadata,
            &agents,
        ));
    }
    ServiceModel {
        config_dir: CONFIG_DIR,
        config_file: CONFIG_FILE,
        config: config::render(namespace, name, spec, peers),
        support_files: vec![
            readiness::script(),
            (RPC_PROBE.0, RPC_PROBE.1.to_string()),
            super::paste::file(),
        ],
        scratch_dirs: Vec::new(),
        state_dir: STATE_DIR,
        secrets: ServiceModel::standard_secrets(&spec.database, &spec.transport)
            .into_iter()
            .chain(
                spec.identity
                    .iter()
                    .flat_map(|i| identity::secret_envs(i, &config::IDENTITY_WIRING)),
            )
            .collect(),
        job_groups: Vec::new(),
        job_secrets: Vec::new(),
        job_env: Vec::new(),
        secret_options: secret_options::environment(&spec.secret_options),
        // The WSGI application takes no arguments: it reads these files of
        // this directory (`;`-separated), and finds api-paste.ini beside them.
        env: vec![
            ("OS_NEUTRON_CONFIG_DIR".into(), CONFIG_DIR.into()),
            ("OS_NEUTRON_CONFIG_FILES".into(), CONFIG_FILE.into()),
        ],
        key_secrets: Vec::new(),
        identity: PodSecurity::identity(spec.security_context.as_ref(), Neutron::DEFAULT_UID),
        workloads,
        rollout_deadline_seconds: spec.rollout_deadline_seconds.unwrap_or(600),
        // Agents report the versions they understand; the servers adapt.
        pin: PinStrategy::None,
        registration: spec.identity.as_ref().map(|identity| {
            registration_plan::Registration::new(
                identity,
                crate::neutron::SERVICE,
                name,
                CATALOG_TYPE,
                format!("http://{name}.{namespace}.svc:{API_PORT}"),
            )
            .with_roles(config::USER_ROLES)
        }),
    }
}
