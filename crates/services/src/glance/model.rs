//! Glance's model: one workload, the API under uWSGI (the image's WSGI
//! server: glance ships the application `glance.wsgi.api:application`), with
//! the image files on the claim the spec names.

use ratchet_api::common::PodSecurity;

use super::config::{self, IMAGES_DIR, STAGING_DIR, TASKS_DIR};
use super::paste;
use super::profile::CONFIG_DIR;
use crate::glance::v1alpha1::Glance;
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::{
    ENV_DATABASE_CONNECTION, PinStrategy, SecretEnv, ServiceModel, WorkloadModel,
};
use ratchet_operator::service::{identity, registration_plan, secret_options};
use ratchet_operator::service::{readiness, uwsgi};

/// The ConfigMap key: the name glance's WSGI application reads in its
/// configuration directory (and the paste file's name follows from it).
pub const CONFIG_FILE: &str = "glance-api.conf";
pub const API_PORT: i32 = 9292;
/// Glance's type in Keystone's catalogue.
pub const CATALOG_TYPE: &str = "image";

/// Listing one image reads the database: 500 when glance cannot reach it,
/// unlike `/healthcheck` or the version document.
const READINESS_PATH: &str = "/v2/images?limit=1";

/// uWSGI ([`uwsgi::http_command`]) with Glance's own flags. Each worker
/// loads the application itself (`--lazy-apps`): glance opens database
/// connections and starts threads while loading, which a fork would share.
/// Threads run at all only with `--enable-threads` (glance's task pool and
/// staging cleanup are threads). The buffer holds request headers: Keystone
/// tokens exceed uWSGI's default of 4 KiB.
fn api_command() -> Vec<String> {
    uwsgi::http_command(
        API_PORT,
        "glance.wsgi.api:application",
        &["--enable-threads", "--lazy-apps", "--buffer-size", "65535"],
    )
}

pub fn model(glance: &Glance, name: &str) -> ServiceModel {
    let spec = &glance.spec;
    let namespace = glance.metadata.namespace.as_deref().unwrap_or_default();
    // The paste file follows the release the new pods run.
    let release = ratchet_release::Release::parse(&spec.open_stack_release).ok();
    ServiceModel {
        config_dir: CONFIG_DIR,
        config_file: CONFIG_FILE,
        config: config::render(namespace, name, spec),
        support_files: vec![(paste::FILE, paste::render(release)), readiness::script()],
        scratch_dirs: vec![STAGING_DIR, TASKS_DIR],
        state_dir: "/var/lib/glance",
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
        // The WSGI application takes no arguments: it finds glance-api.conf here.
        env: vec![("OS_GLANCE_CONFIG_DIR".into(), CONFIG_DIR.into())],
        key_secrets: Vec::new(),
        identity: PodSecurity::identity(spec.security_context.as_ref(), Glance::DEFAULT_UID),
        workloads: vec![WorkloadModel {
            claims: vec![(
                spec.image_store.file_volume_claim.clone(),
                IMAGES_DIR.to_string(),
            )],
            ..WorkloadModel::api(
                name,
                api_command(),
                &spec.api,
                API_PORT,
                readiness::api(CONFIG_DIR, API_PORT, READINESS_PATH),
            )
        }],
        rollout_deadline_seconds: spec.rollout_deadline_seconds.unwrap_or(600),
        pin: PinStrategy::None,
        registration: spec.identity.as_ref().map(|identity| {
            registration_plan::Registration::new(
                identity,
                crate::glance::SERVICE,
                name,
                CATALOG_TYPE,
                format!("http://{name}.{namespace}.svc:{API_PORT}"),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use ratchet_operator::service::render::{self, Owner, PodParams};

    fn glance() -> Glance {
        crate::shared_tests::stored(crate::glance::example_manifest(
            "g", "2026.1", "glance", "2026.1", 2,
        ))
    }

    fn list(value: &Value) -> Vec<Value> {
        value.as_array().cloned().unwrap_or_default()
    }

    #[test]
    fn the_api_mounts_the_image_claim_and_every_pod_finds_its_config() {
        let glance = glance();
        let owner = Owner::of(crate::glance::SERVICE, &glance).expect("owner");
        let model = model(&glance, "g");
        let params = PodParams {
            image: "glance:2026.1",
            installed_release: "2026.1",
            pin: None,
            config_hash: "h",
            installed_release_annotation: Glance::INSTALLED_RELEASE_ANNOTATION,
            stopped: false,
            partition: None,
        };
        let api = serde_json::to_value(
            render::workload(&owner, &model, &model.workloads[0], &params).expect("renders"),
        )
        .expect("json");
        let job = render::job(
            &owner,
            &model,
            &render::JobSpec {
                suffix: "db-sync",
                image: "glance:2026.2",
                command: &["glance-manage".to_string()],
                spec_hash: "h",
                backoff_limit: 0,
                fail_fast_exit_codes: &[],
                secrets: None,
                group: None,
            },
        )
        .expect("renders");
        let job = serde_json::to_value(job).expect("json");
        let api_pod = &api["spec"]["template"]["spec"];
        let job_pod = &job["spec"]["template"]["spec"];
        assert!(
            list(&api_pod["volumes"]).contains(
                &json!({ "name": "claim-0", "persistentVolumeClaim": { "claimName": "glance-images" } })
            ),
            "{api_pod}"
        );
        assert!(
            list(&api_pod["containers"][0]["volumeMounts"])
                .contains(&json!({ "name": "claim-0", "mountPath": "/var/lib/glance/images" }))
        );
        assert!(
            !list(&job_pod["volumes"])
                .iter()
                .any(|v| v.get("persistentVolumeClaim").is_some()),
            "no Job needs the images: {job_pod}"
        );
        for pod in [api_pod, job_pod] {
            assert_eq!(pod["securityContext"]["runAsUser"], 42415, "{pod}");
            let mounts = list(&pod["containers"][0]["volumeMounts"]);
            for dir in [STAGING_DIR, TASKS_DIR] {
                assert!(
                    mounts.iter().any(|m| m["mountPath"] == dir),
                    "{dir} in {mounts:?}"
                );
            }
            assert!(
                list(&pod["containers"][0]["env"])
                    .contains(&json!({ "name": "OS_GLANCE_CONFIG_DIR", "value": CONFIG_DIR }))
            );
        }
        assert_eq!(
            api_pod["containers"][0]["readinessProbe"]["exec"]["command"],
            json!([
                "python3",
                "/etc/glance/glance.conf.d/ratchet-readiness.py",
                "--patience",
                "3",
                "http",
                "9292",
                "/v2/images?limit=1"
            ])
        );
        let files = model.files().expect("renders");
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            [
                &"glance-api-paste.ini",
                &"glance-api.conf",
                &"ratchet-readiness.py"
            ]
        );
    }
}
