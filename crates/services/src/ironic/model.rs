//! Ironic's model: its workloads in roll order, conductors first, then the
//! API, so a new API microversion is only exposed once conductors can serve it.

use crate::ironic::v1alpha1::Ironic;
use ratchet_api::common::PodSecurity;

use super::{CONFIG_DIR, config};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::{PinStrategy, ServiceModel, WorkloadKind, WorkloadModel};
use ratchet_operator::service::readiness::{self, OWN_HOSTNAME};
use ratchet_operator::service::{identity, registration_plan, secret_options};

pub const CONFIG_FILE: &str = "ironic.conf";
pub const API_PORT: i32 = 6385;
/// The catalogue type of Ironic's API.
pub const CATALOG_TYPE: &str = "baremetal";

fn command(binary: &str) -> Vec<String> {
    vec![binary.into(), "--config-dir".into(), CONFIG_DIR.into()]
}

pub fn model(ironic: &Ironic, name: &str) -> ServiceModel {
    let spec = &ironic.spec;
    let namespace = ironic.metadata.namespace.as_deref().unwrap_or_default();
    ServiceModel {
        config_dir: CONFIG_DIR,
        config_file: CONFIG_FILE,
        config: config::render(namespace, name, spec),
        support_files: vec![readiness::script()],
        // The boot interfaces write their files there when drivers load: in the
        // conductors and in `ironic-status upgrade check`, which loads them too.
        scratch_dirs: vec![config::HTTP_ROOT, config::TFTP_ROOT],
        state_dir: "/var/lib/ironic",
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
        env: Vec::new(),
        key_secrets: Vec::new(),
        identity: PodSecurity::identity(spec.security_context.as_ref(), Ironic::DEFAULT_UID),
        workloads: vec![
            // Conductors register their host names in the database: stable
            // identities, so a StatefulSet.
            WorkloadModel {
                name: format!("{name}-conductor"),
                component: "conductor".into(),
                kind: WorkloadKind::StatefulSet,
                command: command("ironic-conductor"),
                replicas: spec.conductor.replicas_or_default(),
                resources: spec.conductor.resources.clone(),
                env: Vec::new(),
                field_env: Vec::new(),
                node_selector: Default::default(),
                secrets: Vec::new(),
                api_port: None,
                carries_installed_release: false,
                claims: Vec::new(),
                pod_claims: Vec::new(),
                // A conductor registers under its host name (the pod's) and
                // heartbeats while its worker lives ([conductor] heartbeat_timeout, 60 s).
                readiness: readiness::heartbeat(
                    CONFIG_DIR,
                    "conductors",
                    60,
                    &[("hostname", OWN_HOSTNAME), ("online", "1")],
                ),
                pre_stop_sleep_seconds: None,
                termination_grace_seconds: None,
                privileged: false,
                drain: None,
                role: None,
                nodes_at_once: 1,
            },
            WorkloadModel {
                env: vec![config::api_hash_ring_reset_interval(spec)],
                ..WorkloadModel::api(
                    name,
                    command("ironic-api"),
                    &spec.api,
                    API_PORT,
                    readiness::api(CONFIG_DIR, API_PORT, "/v1/"),
                )
            },
        ],
        rollout_deadline_seconds: spec.rollout_deadline_seconds.unwrap_or(600),
        pin: PinStrategy::OptionSetThenRemoved(config::PIN_RELEASE_VERSION),
        registration: spec.identity.as_ref().map(|identity| {
            registration_plan::Registration::new(
                identity,
                crate::ironic::SERVICE,
                name,
                CATALOG_TYPE,
                format!("http://{name}.{namespace}.svc:{API_PORT}"),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use ratchet_operator::service::render::{self, Owner, PodParams};

    #[test]
    fn every_ironic_pod_runs_as_ironic_and_reads_its_secret_options() {
        let ironic: Ironic = serde_json::from_value(json!({
            "apiVersion": "ironic.openstack.c5c3.io/v1alpha1",
            "kind": "Ironic",
            "metadata": { "name": "i", "namespace": "ns", "uid": "u-1" },
            "spec": {
                "openStackRelease": "2026.1",
                "image": { "repository": "ironic", "tag": "2026.1" },
                "database": { "secretName": "db", "key": "connection" },
                "transport": { "secretName": "mq", "key": "url" },
                "secretOptions": [
                    { "section": "json_rpc", "option": "password", "secretName": "rpc", "key": "pw" },
                ],
            }
        }))
        .expect("ironic");
        let owner = Owner::of(crate::ironic::SERVICE, &ironic).expect("owner");
        let model = model(&ironic, "i");
        let params = PodParams {
            image: "ironic:2026.1",
            installed_release: "2026.1",
            pin: Some("2026.1"),
            config_hash: "h",
            installed_release_annotation: Ironic::INSTALLED_RELEASE_ANNOTATION,
            stopped: false,
            partition: None,
        };
        for workload in &model.workloads {
            let object = serde_json::to_value(
                render::workload(&owner, &model, workload, &params).expect("renders"),
            )
            .expect("json");
            let pod = &object["spec"]["template"]["spec"];
            assert_eq!(pod["securityContext"]["runAsUser"], 42422, "{object}");
            assert_eq!(pod["securityContext"]["fsGroup"], 42422);
            let env = pod["containers"][0]["env"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert!(
                env.contains(&json!({ "name": "OS_JSON_RPC__PASSWORD",
                    "valueFrom": { "secretKeyRef": { "name": "rpc", "key": "pw" } } })),
                "{env:?}"
            );
            // Only APIs refresh their hash rings faster than conductors wait.
            let ring = json!({ "name": config::ENV_API_HASH_RING_RESET_INTERVAL, "value": "1" });
            assert_eq!(
                env.contains(&ring),
                workload.component == "api",
                "{}: {env:?}",
                workload.name
            );
        }
        assert!(!model.config.clone().expect("renders").contains("password"));
        let conductor = model.workload("i-conductor").expect("conductor");
        let object = serde_json::to_value(
            render::workload(&owner, &model, conductor, &params).expect("renders"),
        )
        .expect("json");
        let check = render::job(
            &owner,
            &model,
            &render::JobSpec {
                suffix: "upgrade-check",
                image: "ironic:2026.2",
                command: &["ironic-status".to_string()],
                spec_hash: "h",
                backoff_limit: 0,
                fail_fast_exit_codes: &[],
                secrets: None,
                group: None,
            },
        )
        .expect("renders");
        let check = serde_json::to_value(check).expect("json");
        for pod in [
            &object["spec"]["template"]["spec"],
            &check["spec"]["template"]["spec"],
        ] {
            let mounts = pod["containers"][0]["volumeMounts"].to_string();
            for (volume, path) in [
                ("scratch-0", config::HTTP_ROOT),
                ("scratch-1", config::TFTP_ROOT),
            ] {
                assert!(
                    mounts.contains(&format!(
                        "{{\"mountPath\":\"{path}\",\"name\":\"{volume}\"}}"
                    )),
                    "{mounts}"
                );
                let volumes = pod["volumes"].as_array().cloned().unwrap_or_default();
                assert!(
                    volumes.contains(&json!({ "name": volume, "emptyDir": {} })),
                    "{volumes:?}"
                );
            }
        }
    }
}
