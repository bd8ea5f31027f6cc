//! Placement's model: one workload, the API under uWSGI (placement ships the
//! application `placement.wsgi.api:application`; it has no server of its
//! own). Loading the application syncs traits and resource classes into the
//! database, so an API pod starts only against a synced schema.

use ratchet_api::common::PodSecurity;

use super::config::{self, CONFIG_FILE, ENV_DATABASE_CONNECTION};
use super::profile::CONFIG_DIR;
use crate::placement::v1alpha1::Placement;
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::{PinStrategy, SecretEnv, ServiceModel, WorkloadModel};
use ratchet_operator::service::{identity, readiness, registration_plan, secret_options, uwsgi};

pub const API_PORT: i32 = 8778;
/// Placement's type in Keystone's catalogue.
pub const CATALOG_TYPE: &str = "placement";

/// Listing resource providers passes keystonemiddleware (a 500 when it
/// cannot validate tokens, e.g. its cache client missing; 401 without a
/// token when it can) and, without Keystone, reads the database.
const READINESS_PATH: &str = "/resource_providers";

/// uWSGI ([`uwsgi::http_command`]): each worker loads the application itself
/// (`--lazy-apps`: loading opens database connections, which a fork would
/// share); the buffer holds request headers, Keystone tokens exceed uWSGI's
/// default of 4 KiB.
fn api_command() -> Vec<String> {
    uwsgi::http_command(
        API_PORT,
        "placement.wsgi.api:application",
        &["--lazy-apps", "--buffer-size", "65535"],
    )
}

pub fn model(placement: &Placement, name: &str) -> ServiceModel {
    let spec = &placement.spec;
    let namespace = placement.metadata.namespace.as_deref().unwrap_or_default();
    ServiceModel {
        config_dir: CONFIG_DIR,
        config_file: CONFIG_FILE,
        config: config::render(namespace, name, spec),
        support_files: vec![readiness::script()],
        scratch_dirs: Vec::new(),
        state_dir: "/var/lib/placement",
        secrets: std::iter::once(SecretEnv {
            env: ENV_DATABASE_CONNECTION.to_string(),
            source: spec.database.clone(),
        })
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
        // The WSGI application takes no arguments: it reads placement.conf here.
        env: vec![("OS_PLACEMENT_CONFIG_DIR".into(), CONFIG_DIR.into())],
        key_secrets: Vec::new(),
        identity: PodSecurity::identity(spec.security_context.as_ref(), Placement::DEFAULT_UID),
        workloads: vec![WorkloadModel::api(
            name,
            api_command(),
            &spec.api,
            API_PORT,
            readiness::api(CONFIG_DIR, API_PORT, READINESS_PATH),
        )],
        rollout_deadline_seconds: spec.rollout_deadline_seconds.unwrap_or(600),
        pin: PinStrategy::None,
        registration: spec.identity.as_ref().map(|identity| {
            registration_plan::Registration::new(
                identity,
                crate::placement::SERVICE,
                name,
                CATALOG_TYPE,
                format!("http://{name}.{namespace}.svc:{API_PORT}"),
            )
        }),
    }
}
