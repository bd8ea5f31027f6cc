//! Nova's model: in roll order the super-conductor, each cell's conductors,
//! the scheduler, the API, then each cell's computes (conductors first, so
//! every RPC a newer service sends meets a conductor that knows it; computes
//! last, as upstream asks). Conductors, the scheduler and computes are
//! StatefulSets: each registers its host (its pod's name) in the services
//! table, and a stable name leaves no stale row behind a roll. Every
//! workload carries the installed release: `[upgrade_levels] compute =
//! auto` pins each process to the oldest compute it saw when it started,
//! and only a restart releases it (33's conductor keeps its pin across
//! SIGHUP; the WSGI API has no hook), so all restart once more after the
//! promotion (the second roll).

use ratchet_api::common::{PodSecurity, SecretKeyRef, WorkloadSpec};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::{
    ENV_DATABASE_CONNECTION, ENV_TRANSPORT_URL, JobGroup, OSLO_SHUTDOWN_GRACE_SECONDS, PinStrategy,
    PodClaim, Readiness, SecretEnv, ServiceModel, WorkloadKind, WorkloadModel,
};
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::{identity, readiness, registration_plan, secret_options, uwsgi};

use super::config::{self, CONFIG_FILE, ENV_API_DATABASE_CONNECTION};
use super::profile::{CONFIG_DIR, STALE_SERVICES_SCRIPT, STATE_DIR};
use crate::nova::v1alpha1::{CellSpec, Nova};

pub const API_PORT: i32 = 8774;
/// Nova's type in Keystone's catalogue.
pub const CATALOG_TYPE: &str = "compute";
/// cell0's name, as Nova maps it.
pub const CELL0: &str = "cell0";

/// Listing flavors passes keystonemiddleware (401 without a token) and, with
/// `noauth2`, reads the API database.
const READINESS_PATH: &str = "/v2.1/flavors";

/// A service has reported within this long: several of its reports
/// (`[DEFAULT] report_interval`, 10 s).
const REPORT_AGE_SECONDS: u32 = 60;

/// The claim each compute keeps its node identity on (`compute_id` in
/// `state_path`): a compute that restarts without it refuses to start.
const COMPUTE_STATE: &str = "state";

fn secret(env: &str, source: &SecretKeyRef) -> SecretEnv {
    SecretEnv {
        env: env.to_string(),
        source: source.clone(),
    }
}

/// A cell's database and bus, in place of the top level's.
fn cell_secrets(cell: &CellSpec) -> Vec<SecretEnv> {
    vec![
        secret(ENV_DATABASE_CONNECTION, &cell.database),
        secret(ENV_TRANSPORT_URL, &cell.transport),
    ]
}

/// uWSGI ([`uwsgi::http_command`]), each worker loading the application
/// itself; the buffer holds Keystone's tokens.
fn api_command() -> Vec<String> {
    uwsgi::http_command(
        API_PORT,
        "nova.wsgi.osapi_compute:application",
        &["--lazy-apps", "--buffer-size", "65535"],
    )
}

fn command(binary: &str) -> Vec<String> {
    vec![binary.into(), "--config-dir".into(), CONFIG_DIR.into()]
}

/// A service writes its row as it starts, before it works: ready once its
/// report count grew since then (a periodic report came through).
fn reporting(binary: &str) -> Readiness {
    readiness::heartbeats(
        CONFIG_DIR,
        "services",
        REPORT_AGE_SECONDS,
        "report_count",
        &format!("{STATE_DIR}/readiness-reports"),
        &[
            ("binary", binary),
            ("host", readiness::OWN_HOSTNAME),
            ("deleted", "0"),
        ],
    )
}

/// A StatefulSet of `binary`, known by its pods' names, carrying the
/// installed release, given oslo.service's time to finish what it took.
fn service(
    name: &str,
    component: &str,
    binary: &str,
    spec: &WorkloadSpec,
    secrets: Vec<SecretEnv>,
) -> WorkloadModel {
    WorkloadModel {
        secrets,
        carries_installed_release: true,
        termination_grace_seconds: Some(OSLO_SHUTDOWN_GRACE_SECONDS),
        ..WorkloadModel::worker(
            name,
            component,
            WorkloadKind::StatefulSet,
            command(binary),
            spec,
            reporting(binary),
        )
    }
}

/// The cell's computes: fake hypervisors, each keeping its node identity on
/// its own claim.
fn computes(name: &str, cell: &CellSpec) -> WorkloadModel {
    WorkloadModel {
        pod_claims: vec![PodClaim {
            name: COMPUTE_STATE.into(),
            mount_path: format!("{STATE_DIR}/compute"),
            size: "16Mi".into(),
        }],
        // The node identity lives on the claim, not the pod's scratch state.
        env: vec![(
            "OS_DEFAULT__STATE_PATH".into(),
            format!("{STATE_DIR}/compute"),
        )],
        ..service(
            name,
            &format!("{}-compute", cell.name),
            "nova-compute",
            &cell.computes,
            cell_secrets(cell),
        )
    }
}

pub fn workloads(nova: &Nova, name: &str) -> Vec<WorkloadModel> {
    let spec = &nova.spec;
    let mut workloads = vec![service(
        name,
        "conductor",
        "nova-conductor",
        &spec.conductor,
        Vec::new(),
    )];
    workloads.extend(spec.cells.iter().map(|cell| {
        service(
            name,
            &format!("{}-conductor", cell.name),
            "nova-conductor",
            &cell.conductor,
            cell_secrets(cell),
        )
    }));
    workloads.push(service(
        name,
        "scheduler",
        "nova-scheduler",
        &spec.scheduler,
        Vec::new(),
    ));
    workloads.push(WorkloadModel {
        carries_installed_release: true,
        // Every API pod registers under one host: a pod's name would leave a
        // service row behind each roll.
        env: vec![("OS_DEFAULT__HOST".into(), format!("{name}-api"))],
        ..WorkloadModel::api(
            name,
            api_command(),
            &spec.api,
            API_PORT,
            readiness::api(CONFIG_DIR, API_PORT, READINESS_PATH),
        )
    });
    workloads.extend(spec.cells.iter().map(|cell| computes(name, cell)));
    workloads
}

/// The hosts the resource's pods register as: each StatefulSet pod its own
/// name, every API pod the API's.
pub fn hosts(nova: &Nova, name: &str) -> Vec<String> {
    workloads(nova, name)
        .iter()
        .flat_map(|w| match w.kind {
            WorkloadKind::StatefulSet => (0..w.replicas.max(0))
                .map(|i| format!("{}-{i}", w.name))
                .collect(),
            WorkloadKind::Deployment | WorkloadKind::DaemonSet => vec![w.name.clone()],
        })
        .collect()
}

/// cell0 and every cell: the groups each cell's Jobs run for, with the
/// cell's database (and bus: cell0 has none of its own).
pub fn job_groups(nova: &Nova) -> Vec<JobGroup> {
    let spec = &nova.spec;
    std::iter::once(JobGroup {
        name: CELL0.into(),
        secrets: vec![secret(ENV_DATABASE_CONNECTION, &spec.cell0.database)],
    })
    .chain(spec.cells.iter().map(|cell| JobGroup {
        name: cell.name.clone(),
        secrets: cell_secrets(cell),
    }))
    .collect()
}

pub fn model(nova: &Nova, name: &str, peers: &Peers) -> ServiceModel {
    let spec = &nova.spec;
    let namespace = nova.metadata.namespace.as_deref().unwrap_or_default();
    ServiceModel {
        config_dir: CONFIG_DIR,
        config_file: CONFIG_FILE,
        config: config::render(namespace, name, spec, peers),
        support_files: vec![
            readiness::script(),
            super::paste::file(),
            (STALE_SERVICES_SCRIPT.0, STALE_SERVICES_SCRIPT.1.to_string()),
        ],
        scratch_dirs: Vec::new(),
        state_dir: STATE_DIR,
        // The API, scheduler and super-conductor read the API database,
        // cell0 and the top bus; a cell's workloads and Jobs their cell's.
        secrets: [
            secret(ENV_API_DATABASE_CONNECTION, &spec.api_database),
            secret(ENV_DATABASE_CONNECTION, &spec.cell0.database),
            secret(ENV_TRANSPORT_URL, &spec.transport),
        ]
        .into_iter()
        .chain(
            spec.identity
                .iter()
                .flat_map(|i| identity::secret_envs(i, &config::IDENTITY_WIRING)),
        )
        .collect(),
        job_groups: job_groups(nova),
        job_secrets: Vec::new(),
        job_env: vec![
            ("RATCHET_NOVA_HOSTS".into(), hosts(nova, name).join(",")),
            (
                "RATCHET_STALE_SERVICES".into(),
                spec.stale_services.as_str().into(),
            ),
        ],
        secret_options: secret_options::environment(&spec.secret_options),
        // The WSGI application takes no arguments: it reads these files of
        // this directory, the paste pipeline first (`;`-separated).
        env: vec![
            ("OS_NOVA_CONFIG_DIR".into(), CONFIG_DIR.into()),
            (
                "OS_NOVA_CONFIG_FILES".into(),
                format!("{};{CONFIG_FILE}", super::paste::FILE),
            ),
        ],
        key_secrets: Vec::new(),
        identity: PodSecurity::identity(spec.security_context.as_ref(), Nova::DEFAULT_UID),
        workloads: workloads(nova, name),
        rollout_deadline_seconds: spec.rollout_deadline_seconds.unwrap_or(600),
        pin: PinStrategy::ReleasedBySecondRoll,
        registration: spec.identity.as_ref().map(|identity| {
            registration_plan::Registration::new(
                identity,
                crate::nova::SERVICE,
                name,
                CATALOG_TYPE,
                format!("http://{name}.{namespace}.svc:{API_PORT}/v2.1"),
            )
        }),
    }
}
