//! Cinder's model: the workloads it runs (and its profile on the shared phase
//! machine, re-exported), in roll order (scheduler → every volume back end → backup → api).

use crate::cinder::v1beta1::{Cinder, VolumeBackend};
use ratchet_api::common::PodSecurity;
use ratchet_phase_machine::HostDrain;

pub use crate::cinder::profile::{CONFIG_DIR, SERVICE, profile};

use super::{config, drain, filters, paste};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::{
    API_DRAIN_SECONDS, OSLO_SHUTDOWN_GRACE_SECONDS, PinStrategy, ServiceModel, WorkloadKind,
    WorkloadModel,
};
use ratchet_operator::service::readiness;
use ratchet_operator::service::{identity, registration_plan, secret_options};

/// The ConfigMap key: `cinder-status`' policy check looks for a file named cinder.conf.
pub const CONFIG_FILE: &str = "cinder.conf";
pub const API_PORT: i32 = 8776;
/// Cinder's type in Keystone's catalogue (`volumev3` is its old alias).
pub const CATALOG_TYPE: &str = "block-storage";
/// Each pod's own state directory (an emptyDir living as long as the pod).
const STATE_DIR: &str = "/var/lib/cinder";

/// A Cinder workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    Scheduler,
    Volume(String),
    Backup,
    Api,
}

impl Role {
    pub fn component(&self) -> String {
        match self {
            Role::Scheduler => "scheduler".into(),
            Role::Volume(backend) => format!("volume-{backend}"),
            Role::Backup => "backup".into(),
            Role::Api => "api".into(),
        }
    }

    /// The Deployment's name.
    pub fn workload_name(&self, cinder: &str) -> String {
        match self {
            Role::Api => cinder.to_string(),
            other => format!("{cinder}-{}", other.component()),
        }
    }

    pub fn command(&self) -> Vec<String> {
        vec![
            self.binary().into(),
            "--config-dir".into(),
            CONFIG_DIR.into(),
        ]
    }

    /// The `services` table's `binary`.
    pub fn binary(&self) -> &'static str {
        match self {
            Role::Scheduler => "cinder-scheduler",
            Role::Volume(_) => "cinder-volume",
            Role::Backup => "cinder-backup",
            Role::Api => "cinder-api",
        }
    }

    /// The host its service rows are registered under (the API registers none):
    /// a scheduler or backup pod its own name (its host name), a volume back end
    /// its `backend_host`.
    pub fn service_host(&self, cinder: &str) -> Option<String> {
        match self {
            Role::Volume(backend) => Some(format!("{cinder}-volume-{backend}@{backend}")),
            Role::Api => None,
            Role::Scheduler | Role::Backup => Some(readiness::OWN_HOSTNAME.to_string()),
        }
    }

    /// Scheduler, volume and backup are StatefulSets: each pod keeps one
    /// service host for life and a pod is replaced only after the one it
    /// replaces has stopped. Cinder cleans up, when a service starts, the
    /// unfinished work recorded under its service row; two live processes on one
    /// row would clean up each other's work (a volume being created turns
    /// `error`). Per-pod rows also make readiness exact and leave no stale rows.
    pub fn kind(&self) -> WorkloadKind {
        match self {
            Role::Api => WorkloadKind::Deployment,
            _ => WorkloadKind::StatefulSet,
        }
    }

    /// Scheduler, volume and backup cache their peers' RPC versions for the life of
    /// the process; the installed-release annotation restarts them once more after
    /// an upgrade (the second roll). The API rolls last and needs none.
    pub fn carries_installed_release(&self) -> bool {
        !matches!(self, Role::Api)
    }
}

/// The back ends' names, sorted (the roll order and `enabled_backends`), each once.
pub fn volume_names(cinder: &Cinder) -> Vec<String> {
    let names: std::collections::BTreeSet<&str> = cinder
        .spec
        .volume_backends
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    names.into_iter().map(str::to_owned).collect()
}

/// The back end `name` (the first of a repeated name wins, as in `cinder.conf`).
fn backend<'a>(cinder: &'a Cinder, name: &str) -> Option<&'a VolumeBackend> {
    cinder.spec.volume_backends.iter().find(|v| v.name == name)
}

/// Whether the back end `name` opted in to privilege.
pub fn privileged(cinder: &Cinder, name: &str) -> bool {
    backend(cinder, name).is_some_and(|v| v.privileged)
}

/// The storage claims of the back ends `which` selects, each with where it is
/// mounted.
fn storage_claims<'a>(
    cinder: &'a Cinder,
    which: impl Fn(&str) -> bool + 'a,
) -> impl Iterator<Item = (String, String)> + 'a {
    volume_names(cinder)
        .into_iter()
        .filter(move |name| which(name))
        .filter_map(|name| {
            let claim = backend(cinder, &name)?.storage_volume_claim.clone()?;
            Some((claim, format!("{}/{name}", config::BACKEND_STORAGE_PATH)))
        })
}

/// The workloads a Cinder asks for, in roll order.
pub fn roles(cinder: &Cinder) -> Vec<Role> {
    let mut roles = vec![Role::Scheduler];
    roles.extend(volume_names(cinder).into_iter().map(Role::Volume));
    roles.push(Role::Backup);
    roles.push(Role::Api);
    roles
}

fn workload(cinder: &Cinder, name: &str, role: &Role) -> WorkloadModel {
    let spec = &cinder.spec;
    let (replicas, resources) = match role {
        Role::Api => (spec.api.replicas_or_default(), spec.api.resources.clone()),
        Role::Scheduler => (
            spec.scheduler.replicas_or_default(),
            spec.scheduler.resources.clone(),
        ),
        Role::Backup => (config::backup_replicas(spec), spec.backup.resources.clone()),
        Role::Volume(backend) => {
            let volume = self::backend(cinder, backend);
            (
                volume.and_then(|v| v.replicas).unwrap_or(1),
                volume.and_then(|v| v.resources.clone()),
            )
        }
    };
    let env = match role {
        Role::Volume(backend) => vec![(config::ENV_ENABLED_BACKENDS.to_string(), backend.clone())],
        _ => Vec::new(),
    };
    let readiness = match role.service_host(name) {
        // A service heartbeats every report_interval (10 s) while it works (a
        // volume service only once its driver is initialised); its row counts
        // as down after service_down_time (60 s).
        // Counted: a service writes its row as it starts, before its manager
        // works (a volume service whose driver fails to initialise never
        // heartbeats, yet its registration is fresh).
        Some(host) => readiness::heartbeats(
            CONFIG_DIR,
            "services",
            60,
            "report_count",
            // Where the check remembers the count it first saw.
            &format!("{STATE_DIR}/ratchet-readiness-heartbeat"),
            &[("binary", role.binary()), ("host", &host), ("deleted", "0")],
        ),
        None => readiness::api(CONFIG_DIR, API_PORT, "/v3/"),
    };
    let claims = match role {
        Role::Backup => spec
            .backup
            .posix_volume_claim
            .iter()
            .map(|claim| (claim.clone(), config::BACKUP_POSIX_PATH.to_string()))
            .chain(storage_claims(cinder, |_| true))
            .collect(),
        Role::Volume(backend) => storage_claims(cinder, |name| name == backend).collect(),
        _ => Vec::new(),
    };
    WorkloadModel {
        name: role.workload_name(name),
        component: role.component(),
        kind: role.kind(),
        command: role.command(),
        replicas,
        resources,
        env,
        field_env: Vec::new(),
        node_selector: Default::default(),
        secrets: Vec::new(),
        api_port: (*role == Role::Api).then_some(API_PORT),
        carries_installed_release: role.carries_installed_release(),
        claims,
        pod_claims: Vec::new(),
        readiness,
        pre_stop_sleep_seconds: (*role == Role::Api).then_some(API_DRAIN_SECONDS),
        // A stopping scheduler, volume or backup service finishes what it took.
        termination_grace_seconds: (*role != Role::Api).then_some(OSLO_SHUTDOWN_GRACE_SECONDS),
        privileged: match role {
            Role::Volume(backend) => privileged(cinder, backend),
            Role::Backup => spec.backup.privileged,
            Role::Api | Role::Scheduler => false,
        },
        drain: host_drain(cinder, name, role),
        // Back ends are independent hosts: `upgrade.maxParallel` roll at once.
        role: matches!(role, Role::Volume(_)).then(|| "volume".to_string()),
        nodes_at_once: 1,
    }
}

/// A volume back end is drained before its restarts (docs/drain.md),
/// disabled only beside another back end. The backup service is drained pod
/// by pod, disabled, when it runs two or more: what a pod is working on
/// finishes before it stops (Cinder's scheduler may still place new backups
/// on it: docs/cinder.md). A lone backup host is not drained: disabled, every
/// backup delete and restore would fail.
fn host_drain(cinder: &Cinder, name: &str, role: &Role) -> Option<HostDrain> {
    let api = api_url(cinder, name);
    match role {
        Role::Volume(_) => Some(drain::host_drain(
            role.binary(),
            drain::Hosts::Named(&role.service_host(name)?),
            &api,
            volume_names(cinder).len() > 1,
        )),
        Role::Backup if config::backup_replicas(&cinder.spec) > 1 => Some(drain::host_drain(
            role.binary(),
            drain::Hosts::EachPod,
            &api,
            true,
        )),
        Role::Backup | Role::Scheduler | Role::Api => None,
    }
}

/// Cinder's API by its Service's DNS name.
fn api_url(cinder: &Cinder, name: &str) -> String {
    let namespace = cinder.metadata.namespace.as_deref().unwrap_or_default();
    format!("http://{name}.{namespace}.svc:{API_PORT}")
}

pub fn model(cinder: &Cinder, name: &str) -> ServiceModel {
    let namespace = cinder.metadata.namespace.as_deref().unwrap_or_default();
    // The API files follow the release the new pods run.
    let release = ratchet_release::Release::parse(&cinder.spec.open_stack_release).ok();
    ServiceModel {
        config_dir: CONFIG_DIR,
        config_file: CONFIG_FILE,
        config: config::render(namespace, name, &cinder.spec),
        support_files: vec![
            (paste::FILE, paste::render(release)),
            (filters::FILE, filters::render(release)),
            readiness::script(),
            (drain::SCRIPT.0, drain::SCRIPT.1.to_string()),
        ],
        scratch_dirs: Vec::new(),
        state_dir: STATE_DIR,
        secrets: ServiceModel::standard_secrets(&cinder.spec.database, &cinder.spec.transport)
            .into_iter()
            .chain(
                cinder
                    .spec
                    .identity
                    .iter()
                    .flat_map(|i| identity::secret_envs(i, &config::IDENTITY_WIRING)),
            )
            .collect(),
        job_groups: Vec::new(),
        job_secrets: Vec::new(),
        job_env: Vec::new(),
        secret_options: secret_options::environment(&cinder.spec.secret_options),
        env: Vec::new(),
        key_secrets: Vec::new(),
        identity: PodSecurity::identity(cinder.spec.security_context.as_ref(), Cinder::DEFAULT_UID),
        workloads: roles(cinder)
            .iter()
            .map(|role| workload(cinder, name, role))
            .collect(),
        rollout_deadline_seconds: cinder.spec.rollout_deadline_seconds.unwrap_or(600),
        pin: PinStrategy::ReleasedBySecondRoll,
        registration: cinder.spec.identity.as_ref().map(|identity| {
            registration_plan::Registration::new(
                identity,
                crate::cinder::profile::SERVICE,
                name,
                CATALOG_TYPE,
                // The project in the path, as clients of every release expect.
                format!("{}/v3/%(project_id)s", api_url(cinder, name)),
            )
            .with_roles(drain::USER_ROLES)
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use ratchet_operator::service::render::{self, JobSpec, Owner, PodParams};

    fn cinder(spec: Value) -> Cinder {
        let mut manifest = json!({
            "apiVersion": "cinder.openstack.c5c3.io/v1beta1",
            "kind": "Cinder",
            "metadata": { "name": "c", "namespace": "ns", "uid": "u-1" },
            "spec": {
                "openStackRelease": "2026.1",
                "image": { "repository": "cinder", "reference": { "tag": "2026.1" } },
                "database": { "secretName": "db", "key": "connection" },
                "transport": { "secretName": "mq", "key": "url" },
                "volumeBackends": [
                    { "name": "lvm", "privileged": true,
                      "options": { "volume_driver": "cinder.volume.drivers.lvm.LVMVolumeDriver" } },
                    { "name": "nfs" },
                ],
            }
        });
        if let (Some(target), Value::Object(extra)) = (manifest["spec"].as_object_mut(), spec) {
            target.extend(extra);
        }
        serde_json::from_value(manifest).expect("cinder")
    }

    /// Every workload's rendered object, by name, and the db-sync Job's.
    fn rendered(cinder: &Cinder) -> (Vec<(String, Value)>, Value) {
        let owner = Owner::of(SERVICE, cinder).expect("owner");
        let model = model(cinder, "c");
        let params = PodParams {
            image: "cinder:2026.1",
            installed_release: "2026.1",
            pin: None,
            config_hash: "h",
            installed_release_annotation: Cinder::INSTALLED_RELEASE_ANNOTATION,
            stopped: false,
            partition: None,
        };
        let workloads = model
            .workloads
            .iter()
            .map(|w| {
                let object = serde_json::to_value(
                    render::workload(&owner, &model, w, &params).expect("renders"),
                )
                .expect("json");
                (w.name.clone(), object)
            })
            .collect();
        let command = vec!["cinder-manage".to_string()];
        let job = render::job(
            &owner,
            &model,
            &JobSpec {
                suffix: "db-sync",
                image: "cinder:2026.1",
                command: &command,
                spec_hash: "h",
                backoff_limit: 4,
                fail_fast_exit_codes: &[],
                secrets: None,
                group: None,
            },
        )
        .expect("renders");
        (workloads, serde_json::to_value(job).expect("job"))
    }

    fn pod(object: &Value) -> &Value {
        &object["spec"]["template"]["spec"]
    }

    #[test]
    fn only_the_privileged_back_end_runs_as_root_with_privilege() {
        let (workloads, job) = rendered(&cinder(json!({})));
        let names: Vec<&str> = workloads.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "c-scheduler",
                "c-volume-lvm",
                "c-volume-nfs",
                "c-backup",
                "c"
            ]
        );
        for (name, object) in &workloads {
            let pod = pod(object);
            let container = &pod["containers"][0]["securityContext"];
            if name == "c-volume-lvm" {
                assert_eq!(
                    pod["securityContext"],
                    json!({ "runAsNonRoot": false, "runAsUser": 0, "runAsGroup": 0 })
                );
                assert_eq!(
                    *container,
                    json!({
                        "privileged": true, "allowPrivilegeEscalation": true,
                        "runAsNonRoot": false, "runAsUser": 0,
                    })
                );
            } else {
                assert_eq!(
                    pod["securityContext"],
                    json!({
                        "runAsNonRoot": true, "runAsUser": 42407, "runAsGroup": 42407,
                        "fsGroup": 42407, "seccompProfile": { "type": "RuntimeDefault" },
                    }),
                    "{name}"
                );
                assert_eq!(container["allowPrivilegeEscalation"], false, "{name}");
                assert_eq!(container["capabilities"], json!({ "drop": ["ALL"] }));
                assert!(container.get("privileged").is_none(), "{name}");
            }
        }
        assert_eq!(pod(&job)["securityContext"]["runAsUser"], 42407);
        assert_eq!(
            pod(&job)["containers"][0]["securityContext"]["allowPrivilegeEscalation"],
            false
        );
        let warnings = cinder(json!({})).warnings();
        assert_eq!(
            warnings,
            [
                "spec.volumeBackends[\"lvm\"].privileged: its cinder-volume pods run as root, privileged, with privilege escalation allowed"
            ]
        );
    }

    #[test]
    fn the_security_context_sets_the_user_and_groups_of_every_pod_and_job() {
        let (workloads, job) = rendered(&cinder(json!({
            "securityContext": { "runAsUser": 1000, "fsGroup": 3000 },
        })));
        for object in workloads
            .iter()
            .filter(|(n, _)| n != "c-volume-lvm")
            .map(|(_, o)| o)
            .chain([&job])
        {
            let security = &pod(object)["securityContext"];
            assert_eq!(
                (
                    &security["runAsUser"],
                    &security["runAsGroup"],
                    &security["fsGroup"]
                ),
                (&json!(1000), &json!(1000), &json!(3000)),
                "{object}"
            );
        }
    }

    #[test]
    fn secret_options_reach_every_pod_and_job_from_their_secret_and_never_the_file() {
        let spec = json!({
            "secretOptions": [
                { "section": "lvm", "option": "chap-password", "secretName": "lvm-chap", "key": "password" },
                { "section": "keystone_authtoken", "option": "password", "secretName": "ks", "key": "password" },
            ],
        });
        let cinder = cinder(spec);
        let (workloads, job) = rendered(&cinder);
        let expected = [
            json!({ "name": "OS_KEYSTONE_AUTHTOKEN__PASSWORD",
                    "valueFrom": { "secretKeyRef": { "name": "ks", "key": "password" } } }),
            json!({ "name": "OS_LVM__CHAP_PASSWORD",
                    "valueFrom": { "secretKeyRef": { "name": "lvm-chap", "key": "password" } } }),
        ];
        for object in workloads.iter().map(|(_, o)| o).chain([&job]) {
            let env = pod(object)["containers"][0]["env"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for e in &expected {
                assert!(env.contains(e), "{e} missing in {env:?}");
            }
        }
        let text = model(&cinder, "c").config.expect("renders");
        assert!(!text.contains("password"), "{text}");

        // Which options come from which Secret keys is part of the configuration.
        let plain = model(&self::cinder(json!({})), "c");
        let with = model(&cinder, "c");
        let same = plain.config.clone().expect("renders");
        assert_ne!(plain.config_hash(&same), with.config_hash(&same));
        assert_eq!(
            plain.config_hash(&same),
            ratchet_phase_machine::hash::content_hash(same.as_bytes())
        );
    }

    #[test]
    fn an_option_both_in_extra_config_or_a_back_end_and_from_a_secret_is_not_rendered() {
        let conflicting = cinder(json!({
            "secretOptions": [
                { "section": "keystone_authtoken", "option": "password", "secretName": "ks", "key": "password" },
                { "section": "lvm", "option": "volume_driver", "secretName": "lvm", "key": "driver" },
            ],
            "extraConfig": { "keystone_authtoken": { "password": "plain" } },
        }));
        let refused = model(&conflicting, "c").config.expect_err("refused");
        assert_eq!(
            refused,
            [
                "spec.extraConfig.keystone_authtoken.password: set by spec.secretOptions[\"keystone_authtoken\"][\"password\"] (Secret \"ks\", key \"password\"); remove it from extraConfig",
                "spec.volumeBackends[\"lvm\"].options[\"volume_driver\"]: set by spec.secretOptions[\"lvm\"][\"volume_driver\"] (Secret \"lvm\", key \"driver\"); remove it from the back end's options",
            ]
        );
        // Admission refuses with the same messages.
        let mut admitted = ratchet_operator::webhooks::validation::validate(&conflicting, None);
        admitted.sort();
        let mut expected = refused.clone();
        expected.sort();
        assert_eq!(admitted, expected);

        let enabled = cinder(json!({
            "secretOptions": [
                { "section": "DEFAULT", "option": "enabled-backends", "secretName": "x", "key": "y" },
            ],
        }));
        assert!(model(&enabled, "c").config.is_err());
    }

    #[test]
    fn only_what_opted_in_is_privileged() {
        let privileged = |cinder: &Cinder| -> Vec<String> {
            model(cinder, "c")
                .workloads
                .into_iter()
                .filter(|w| w.privileged)
                .map(|w| w.name)
                .collect()
        };
        assert_eq!(privileged(&cinder(json!({}))), ["c-volume-lvm"]);
        let backup = cinder(json!({ "backup": { "posixVolumeClaim": "b", "privileged": true } }));
        assert_eq!(privileged(&backup), ["c-volume-lvm", "c-backup"]);
    }

    #[test]
    fn a_back_ends_storage_is_mounted_in_its_volume_pods_and_every_backup_pod() {
        let mut cinder = cinder(json!({ "backup": { "posixVolumeClaim": "backups" } }));
        cinder.spec.volume_backends[1].storage_volume_claim = Some("nfs-files".into());
        let model = model(&cinder, "c");
        let claims: Vec<(&str, Vec<(String, String)>)> = model
            .workloads
            .iter()
            .map(|w| (w.name.as_str(), w.claims.clone()))
            .collect();
        let claim = |name: &str, path: &str| (name.to_string(), path.to_string());
        assert_eq!(
            claims,
            [
                ("c-scheduler", vec![]),
                ("c-volume-lvm", vec![]),
                (
                    "c-volume-nfs",
                    vec![claim("nfs-files", "/var/lib/cinder/backends/nfs")]
                ),
                (
                    "c-backup",
                    vec![
                        claim("backups", "/var/lib/cinder/backup"),
                        claim("nfs-files", "/var/lib/cinder/backends/nfs"),
                    ]
                ),
                ("c", vec![]),
            ]
        );
    }

    #[test]
    fn every_workload_has_a_readiness_check_of_its_own_service() {
        let model = model(
            &cinder(json!({ "backup": { "posixVolumeClaim": "backups" } })),
            "c",
        );
        let checks: Vec<(&str, String)> = model
            .workloads
            .iter()
            .map(|w| (w.name.as_str(), w.readiness.command[4..].join(" ")))
            .collect();
        let heartbeat = |binary: &str, host: &str| {
            format!(
                "heartbeats services 60 report_count /var/lib/cinder/ratchet-readiness-heartbeat binary={binary} host={host} deleted=0"
            )
        };
        assert_eq!(
            checks,
            [
                ("c-scheduler", heartbeat("cinder-scheduler", "@hostname")),
                (
                    "c-volume-lvm",
                    heartbeat("cinder-volume", "c-volume-lvm@lvm")
                ),
                (
                    "c-volume-nfs",
                    heartbeat("cinder-volume", "c-volume-nfs@nfs")
                ),
                ("c-backup", heartbeat("cinder-backup", "@hostname")),
                ("c", "http 8776 /v3/".to_string()),
            ]
        );
    }

    #[test]
    fn workers_are_stateful_sets_under_their_own_names_and_only_the_api_leaves_endpoints() {
        let model = model(
            &cinder(json!({ "backup": { "posixVolumeClaim": "backups" } })),
            "c",
        );
        let kinds: Vec<(&str, WorkloadKind)> = model
            .workloads
            .iter()
            .map(|w| (w.name.as_str(), w.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("c-scheduler", WorkloadKind::StatefulSet),
                ("c-volume-lvm", WorkloadKind::StatefulSet),
                ("c-volume-nfs", WorkloadKind::StatefulSet),
                ("c-backup", WorkloadKind::StatefulSet),
                ("c", WorkloadKind::Deployment),
            ]
        );
        assert!(
            model
                .workloads
                .iter()
                .all(|w| w.env.iter().all(|(k, _)| k != "OS_DEFAULT__HOST")),
            "no shared host is set"
        );
        let drains: Vec<_> = model
            .workloads
            .iter()
            .filter(|w| w.pre_stop_sleep_seconds.is_some())
            .map(|w| w.name.as_str())
            .collect();
        assert_eq!(drains, ["c"]);
        let graces: Vec<_> = model
            .workloads
            .iter()
            .map(|w| (w.name.as_str(), w.termination_grace_seconds))
            .collect();
        assert_eq!(
            graces,
            [
                ("c-scheduler", Some(70)),
                ("c-volume-lvm", Some(70)),
                ("c-volume-nfs", Some(70)),
                ("c-backup", Some(70)),
                ("c", None),
            ]
        );
        assert_eq!(
            model.workload("c-backup").map(|w| w.claims.clone()),
            Some(vec![(
                "backups".to_string(),
                "/var/lib/cinder/backup".to_string()
            )])
        );
        let files = model.files().expect("rendered");
        assert_eq!(
            files.keys().copied().collect::<Vec<_>>(),
            [
                "api-paste.ini",
                "cinder.conf",
                "ratchet-cinder-drain.py",
                "ratchet-readiness.py",
                "resource_filters.json"
            ]
        );
    }

    /// Each back end is drained before its restart, on its own host: disabled
    /// while another back end takes new volumes, only waited on when alone.
    #[test]
    fn volume_back_ends_are_drained_and_disabled_only_beside_another() {
        let script = "/etc/cinder/cinder.conf.d/ratchet-cinder-drain.py";
        let drains = |model: &ServiceModel| -> Vec<(String, String, String)> {
            model
                .workloads
                .iter()
                .filter_map(|w| {
                    let d = w.drain.as_ref()?;
                    Some((w.name.clone(), d.drain.join(" "), d.undrain.join(" ")))
                })
                .collect()
        };
        let two = model(&cinder(json!({})), "c");
        let host = |backend: &str| {
            format!(
                "--api http://c.ns.svc:8776 --binary cinder-volume --host c-volume-{backend}@{backend}"
            )
        };
        assert_eq!(
            drains(&two),
            ["lvm", "nfs"].map(|b| (
                format!("c-volume-{b}"),
                format!(
                    "python3 {script} drain {} --bound 120 --quiet 3 --disable",
                    host(b)
                ),
                format!("python3 {script} undrain {}", host(b)),
            ))
        );
        let one = model(
            &cinder(json!({ "volumeBackends": [{ "name": "nfs" }] })),
            "c",
        );
        assert_eq!(
            drains(&one)
                .into_iter()
                .map(|(_, d, _)| d)
                .collect::<Vec<_>>(),
            [format!(
                "python3 {script} drain {} --bound 120 --quiet 3",
                host("nfs")
            )]
        );
    }

    /// Two or more backup pods are drained one at a time, each under its own
    /// name (the machine appends it after `--host`) and disabled; a lone one is not.
    #[test]
    fn backup_pods_are_drained_one_by_one_only_beside_another() {
        let backup_drain = |replicas: i32| {
            let spec = json!({ "backup": { "posixVolumeClaim": "b", "replicas": replicas } });
            model(&cinder(spec), "c")
                .workload("c-backup")
                .and_then(|w| w.drain.clone())
        };
        assert_eq!(backup_drain(1), None);
        let drain = backup_drain(2).expect("drained");
        assert!(drain.per_pod);
        let script = "/etc/cinder/cinder.conf.d/ratchet-cinder-drain.py";
        assert_eq!(
            drain.drain.join(" "),
            format!(
                "python3 {script} drain --api http://c.ns.svc:8776 --binary cinder-backup \
                 --bound 120 --quiet 3 --disable --host"
            )
        );
        assert_eq!(
            drain.undrain.join(" "),
            format!(
                "python3 {script} undrain --api http://c.ns.svc:8776 --binary cinder-backup --host"
            )
        );
    }
}
