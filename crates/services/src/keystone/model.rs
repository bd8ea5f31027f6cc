//! Keystone's model: one workload, the API under uWSGI (the image's WSGI
//! server: Keystone ships the application, not a server), with the fernet and
//! credential keys every replica must share mounted from Secrets Ratchet
//! creates once.

use ratchet_api::common::PodSecurity;

use super::config::{self, CREDENTIAL_KEYS, FERNET_KEYS};
use super::profile::CONFIG_DIR;
use crate::keystone::v1alpha1::Keystone;
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::{
    ENV_DATABASE_CONNECTION, KeySecret, PinStrategy, SecretEnv, ServiceModel, WorkloadModel,
};
use ratchet_operator::service::secret_options;
use ratchet_operator::service::{readiness, uwsgi};

pub const CONFIG_FILE: &str = "keystone.conf";
pub const API_PORT: i32 = ratchet_api::identity::KEYSTONE_API_PORT;
pub const DEFAULT_REGION: &str = "RegionOne";

/// A password no user has: the readiness check's authentication must reach
/// the database to be refused (401), and fails with 500 when it cannot.
const READINESS_AUTH: &str = r#"{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"ratchet-readiness","domain":{"id":"default"},"password":"ratchet-readiness"}}}}}"#;

/// Key file names: fernet's highest number is the primary key, 0 the staged one.
const KEYS: [&str; 2] = ["0", "1"];

pub fn fernet_keys_secret(name: &str) -> String {
    format!("{name}-fernet-keys")
}

pub fn credential_keys_secret(name: &str) -> String {
    format!("{name}-credential-keys")
}

/// uWSGI ([`uwsgi::http_command`]) serving Keystone's application.
fn api_command() -> Vec<String> {
    uwsgi::http_command(API_PORT, "keystone.wsgi.api:application", &[])
}

/// What `keystone-manage bootstrap` registers: the identity endpoints at the
/// Service in front of the API, and the admin user's password.
fn bootstrap_env(keystone: &Keystone, name: &str, namespace: &str) -> Vec<(String, String)> {
    let url = format!("http://{name}.{namespace}.svc:{API_PORT}/v3");
    let region = keystone
        .spec
        .region
        .clone()
        .unwrap_or_else(|| DEFAULT_REGION.to_string());
    vec![
        ("OS_KEYSTONE_CONFIG_DIR".into(), CONFIG_DIR.into()),
        ("OS_BOOTSTRAP_REGION_ID".into(), region),
        ("OS_BOOTSTRAP_ADMIN_URL".into(), url.clone()),
        ("OS_BOOTSTRAP_INTERNAL_URL".into(), url.clone()),
        ("OS_BOOTSTRAP_PUBLIC_URL".into(), url),
    ]
}

pub fn model(keystone: &Keystone, name: &str) -> ServiceModel {
    let spec = &keystone.spec;
    let namespace = keystone.metadata.namespace.as_deref().unwrap_or_default();
    ServiceModel {
        config_dir: CONFIG_DIR,
        config_file: CONFIG_FILE,
        config: config::render(namespace, name, spec),
        support_files: vec![readiness::script()],
        scratch_dirs: Vec::new(),
        state_dir: "/var/lib/keystone",
        secrets: vec![SecretEnv {
            env: ENV_DATABASE_CONNECTION.to_string(),
            source: spec.database.clone(),
        }],
        // Only `keystone-manage bootstrap` (the sync Job) reads the password.
        job_groups: Vec::new(),
        job_secrets: vec![SecretEnv {
            env: "OS_BOOTSTRAP_PASSWORD".to_string(),
            source: spec.admin_password.clone(),
        }],
        job_env: Vec::new(),
        secret_options: secret_options::environment(&spec.secret_options),
        env: bootstrap_env(keystone, name, namespace),
        key_secrets: vec![
            KeySecret {
                secret_name: fernet_keys_secret(name),
                mount_path: FERNET_KEYS,
                keys: KEYS.to_vec(),
            },
            KeySecret {
                secret_name: credential_keys_secret(name),
                mount_path: CREDENTIAL_KEYS,
                keys: KEYS.to_vec(),
            },
        ],
        identity: PodSecurity::identity(spec.security_context.as_ref(), Keystone::DEFAULT_UID),
        workloads: vec![WorkloadModel::api(
            name,
            api_command(),
            &spec.api,
            API_PORT,
            readiness::api_post(CONFIG_DIR, API_PORT, "/v3/auth/tokens", READINESS_AUTH),
        )],
        rollout_deadline_seconds: spec.rollout_deadline_seconds.unwrap_or(600),
        registration: None,
        pin: PinStrategy::None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use ratchet_operator::service::render::{self, Owner, PodParams};

    fn keystone() -> Keystone {
        crate::shared_tests::stored(crate::keystone::example_manifest(
            "k", "2026.1", "keystone", "2026.1", 2,
        ))
    }

    #[test]
    fn every_pod_and_job_mounts_the_keys_and_only_the_jobs_get_the_admin_password() {
        let keystone = keystone();
        let owner = Owner::of(crate::keystone::SERVICE, &keystone).expect("owner");
        let model = model(&keystone, "k");
        let params = PodParams {
            image: "keystone:2026.1",
            installed_release: "2026.1",
            pin: None,
            config_hash: "h",
            installed_release_annotation: Keystone::INSTALLED_RELEASE_ANNOTATION,
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
                image: "keystone:2026.2",
                command: &["keystone-manage".to_string()],
                spec_hash: "h",
                backoff_limit: 0,
                fail_fast_exit_codes: &[],
                secrets: None,
                group: None,
            },
        )
        .expect("renders");
        let job = serde_json::to_value(job).expect("json");
        for pod in [
            &api["spec"]["template"]["spec"],
            &job["spec"]["template"]["spec"],
        ] {
            assert_eq!(pod["securityContext"]["runAsUser"], 42425, "{pod}");
            let volumes = pod["volumes"].as_array().cloned().unwrap_or_default();
            assert!(
                volumes.contains(&json!({ "name": "keys-0",
                "secret": { "secretName": "k-fernet-keys", "defaultMode": 0o440 } })),
                "{volumes:?}"
            );
            let mounts = pod["containers"][0]["volumeMounts"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert!(
                mounts.contains(&json!({ "name": "keys-1",
                "mountPath": "/etc/keystone/credential-keys", "readOnly": true })),
                "{mounts:?}"
            );
            let env = pod["containers"][0]["env"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert!(
                env.contains(&json!({ "name": "OS_KEYSTONE_CONFIG_DIR", "value": CONFIG_DIR }))
            );
            assert!(
                env.contains(&json!({ "name": "OS_BOOTSTRAP_PUBLIC_URL",
                "value": "http://k.ns.svc:5000/v3" })),
                "{env:?}"
            );
        }
        // The admin password is the sync Job's alone.
        let password = json!({ "name": "OS_BOOTSTRAP_PASSWORD",
            "valueFrom": { "secretKeyRef": { "name": "keystone-admin", "key": "password" } } });
        let env_of = |pod: &serde_json::Value| {
            pod["containers"][0]["env"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        };
        assert!(env_of(&job["spec"]["template"]["spec"]).contains(&password));
        assert!(
            !env_of(&api["spec"]["template"]["spec"])
                .iter()
                .any(|e| e["name"] == "OS_BOOTSTRAP_PASSWORD"),
            "no API pod carries the admin password"
        );
        let secret = render::key_secret(&owner, &model.key_secrets[0]).expect("renders");
        let keys = secret.string_data.expect("keys");
        assert_eq!(keys.keys().collect::<Vec<_>>(), ["0", "1"]);
        assert_ne!(keys["0"], keys["1"]);
        for key in keys.values() {
            use base64::Engine;
            let raw = base64::engine::general_purpose::URL_SAFE
                .decode(key)
                .expect("url-safe base64");
            assert_eq!(raw.len(), 32, "a Fernet key");
        }
    }
}
