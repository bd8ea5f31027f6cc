//! The Kubernetes objects a service resource owns, built without I/O from its
//! [`ServiceModel`] and the machine's decision.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategy, Deployment, DeploymentSpec,
    DeploymentStrategy, RollingUpdateDaemonSet, RollingUpdateDeployment,
    RollingUpdateStatefulSetStrategy, StatefulSet, StatefulSetPersistentVolumeClaimRetentionPolicy,
    StatefulSetSpec, StatefulSetUpdateStrategy,
};
use k8s_openapi::api::batch::v1::{
    Job, JobSpec as JobObjectSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EmptyDirVolumeSource,
    EnvVar, EnvVarSource, ExecAction, Lifecycle, LifecycleHandler, ObjectFieldSelector,
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource,
    PodSecurityContext, PodSpec, PodTemplateSpec, Probe, SeccompProfile, Secret, SecretKeySelector,
    SecretVolumeSource, SecurityContext, Service, ServicePort, ServiceSpec, SleepAction,
    TCPSocketAction, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Resource;
use ratchet_phase_machine::hash::content_hash;
use serde::Serialize;

use super::model::{
    ENV_JOB_GROUP, JobGroup, KeySecret, PodClaim, SecretEnv, ServiceModel, WorkloadKind,
    WorkloadModel, new_key, with_own,
};
use crate::error::{Error, Result};
use crate::labels;

/// The pod annotation naming the RPC/object version pin its pods run with
/// (services pinned through configuration; Cinder pins itself and never sets it).
pub const PIN_ANNOTATION: &str = "ratchet.c5c3.io/pin-release";

/// Identity of the owning resource, for names, labels and owner references.
pub struct Owner {
    pub service: &'static str,
    pub name: String,
    pub namespace: String,
    pub reference: OwnerReference,
}

impl Owner {
    pub fn of<K: Resource<DynamicType = ()>>(service: &'static str, object: &K) -> Result<Owner> {
        let meta = object.meta();
        Ok(Owner {
            service,
            name: meta
                .name
                .clone()
                .ok_or(Error::MissingField("metadata.name"))?,
            namespace: meta
                .namespace
                .clone()
                .ok_or(Error::MissingField("metadata.namespace"))?,
            reference: object
                .controller_owner_ref(&())
                .ok_or(Error::MissingField("metadata.uid"))?,
        })
    }

    fn labels(&self, component: &str) -> BTreeMap<String, String> {
        labels::component(self.service, &self.name, component)
    }

    fn metadata(
        &self,
        name: &str,
        component: &str,
        annotations: BTreeMap<String, String>,
    ) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(self.namespace.clone()),
            labels: Some(self.labels(component)),
            annotations: Some(annotations),
            owner_references: Some(vec![self.reference.clone()]),
            ..ObjectMeta::default()
        }
    }

    pub fn config_map_name(&self) -> String {
        format!("{}-config", self.name)
    }

    pub fn job_name(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.name)
    }
}

/// The hash of what an object renders to: a changed rendering is applied, an
/// unchanged one is not.
fn hash_of(rendered: &impl Serialize) -> Result<String> {
    Ok(content_hash(serde_json::to_string(rendered)?.as_bytes()))
}

fn hash_annotation(hash: String) -> BTreeMap<String, String> {
    BTreeMap::from([(labels::TEMPLATE_HASH.to_string(), hash)])
}

/// The ConfigMap holding `files`, the model's rendered configuration and the
/// files beside it, annotated with the hash of its content: the cache keeps
/// the hash, not the files.
pub fn config_map(owner: &Owner, files: &BTreeMap<&str, &str>) -> Result<ConfigMap> {
    let annotations = hash_annotation(hash_of(files)?);
    Ok(ConfigMap {
        metadata: owner.metadata(&owner.config_map_name(), "config", annotations),
        data: Some(
            files
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..ConfigMap::default()
    })
}

fn runtime_default_seccomp() -> Option<SeccompProfile> {
    Some(SeccompProfile {
        type_: "RuntimeDefault".into(),
        ..SeccompProfile::default()
    })
}

/// Restricted pod security: non-root, no privilege escalation, no capabilities,
/// the runtime's default seccomp profile.
fn restricted_container_security() -> SecurityContext {
    SecurityContext {
        run_as_non_root: Some(true),
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            ..Capabilities::default()
        }),
        seccomp_profile: runtime_default_seccomp(),
        ..SecurityContext::default()
    }
}

/// A workload that opted in to privilege (a Cinder LVM back end): rootwrap runs
/// `sudo`, which needs privilege escalation, and LVM needs the host's devices.
/// A privileged container runs unconfined by seccomp whatever it asks for.
fn privileged_container_security() -> SecurityContext {
    SecurityContext {
        privileged: Some(true),
        allow_privilege_escalation: Some(true),
        run_as_non_root: Some(false),
        run_as_user: Some(0),
        ..SecurityContext::default()
    }
}

/// The pod's security context: the model's user and groups, or root for a
/// privileged workload.
fn pod_security(model: &ServiceModel, privileged: bool) -> PodSecurityContext {
    if privileged {
        return PodSecurityContext {
            run_as_non_root: Some(false),
            run_as_user: Some(0),
            run_as_group: Some(0),
            ..PodSecurityContext::default()
        };
    }
    let identity = &model.identity;
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(identity.run_as_user),
        run_as_group: Some(identity.run_as_group),
        fs_group: Some(identity.fs_group),
        seccomp_profile: runtime_default_seccomp(),
        ..PodSecurityContext::default()
    }
}

fn plain_env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: Some(value.to_string()),
        ..EnvVar::default()
    }
}

/// A variable holding one of the pod's own fields (downward API).
fn field_env(name: &str, field_path: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: field_path.to_string(),
                ..ObjectFieldSelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

fn secret_env(secret: &SecretEnv) -> EnvVar {
    EnvVar {
        name: secret.env.clone(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.source.secret_name.clone(),
                key: secret.source.key.clone(),
                ..SecretKeySelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

/// The environment of a pod or Job of the model: variables from Secret keys
/// (the model's, with those of the workload or Job group that has its `own`
/// in their place), then the model's plain ones.
fn model_env(model: &ServiceModel, own: &[SecretEnv]) -> Vec<EnvVar> {
    let plain = model.env.iter().map(|(name, value)| plain_env(name, value));
    with_own(model.pod_secrets(), own)
        .map(secret_env)
        .chain(plain)
        .collect()
}

/// A Job's environment: the model's (its group's Secrets in place of the
/// model's, and the group's name), or only `secrets` and the plain variables.
fn job_env(
    model: &ServiceModel,
    secrets: Option<&[SecretEnv]>,
    group: Option<&JobGroup>,
) -> Vec<EnvVar> {
    let Some(secrets) = secrets else {
        let own = group.map_or(&[][..], |g| g.secrets.as_slice());
        let mut env = model_env(model, own);
        env.extend(model.job_secrets.iter().map(secret_env));
        env.extend(
            model
                .job_env
                .iter()
                .map(|(name, value)| plain_env(name, value)),
        );
        if let Some(group) = group {
            env.push(plain_env(ENV_JOB_GROUP, &group.name));
        }
        return env;
    };
    let plain = model.env.iter().map(|(name, value)| plain_env(name, value));
    secrets.iter().map(secret_env).chain(plain).collect()
}

/// Owner-only and group-readable (the pod's fsGroup): keys are read by the
/// service's user, nobody else.
const KEY_FILE_MODE: i32 = 0o440;

/// A key Secret as first created: a fresh key in each of its keys.
pub fn key_secret(owner: &Owner, secret: &KeySecret) -> Result<Secret> {
    Ok(Secret {
        metadata: owner.metadata(&secret.secret_name, "keys", BTreeMap::new()),
        type_: Some("Opaque".into()),
        string_data: Some(
            secret
                .keys
                .iter()
                .map(|k| (k.to_string(), new_key()))
                .collect(),
        ),
        ..Secret::default()
    })
}

fn pod_spec(
    owner: &Owner,
    model: &ServiceModel,
    security: PodSecurityContext,
    container: Container,
    restart_policy: &str,
) -> PodSpec {
    let mut volumes = vec![
        Volume {
            name: "config".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: owner.config_map_name(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        },
        empty_dir("state"),
    ];
    volumes.extend((0..model.scratch_dirs.len()).map(|i| empty_dir(&format!("scratch-{i}"))));
    volumes.extend(model.key_secrets.iter().enumerate().map(|(i, s)| Volume {
        name: format!("keys-{i}"),
        secret: Some(SecretVolumeSource {
            secret_name: Some(s.secret_name.clone()),
            default_mode: Some(KEY_FILE_MODE),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    }));
    PodSpec {
        restart_policy: Some(restart_policy.into()),
        enable_service_links: Some(false),
        security_context: Some(security),
        containers: vec![container],
        volumes: Some(volumes),
        automount_service_account_token: Some(false),
        ..PodSpec::default()
    }
}

fn empty_dir(name: &str) -> Volume {
    Volume {
        name: name.to_string(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    }
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.to_string(),
        mount_path: path.to_string(),
        read_only: read_only.then_some(true),
        ..VolumeMount::default()
    }
}

fn mounts(model: &ServiceModel) -> Vec<VolumeMount> {
    let mut mounts = vec![
        mount("config", model.config_dir, true),
        mount("state", model.state_dir, false),
    ];
    mounts.extend(
        model
            .scratch_dirs
            .iter()
            .enumerate()
            .map(|(i, path)| mount(&format!("scratch-{i}"), path, false)),
    );
    mounts.extend(
        model
            .key_secrets
            .iter()
            .enumerate()
            .map(|(i, s)| mount(&format!("keys-{i}"), s.mount_path, true)),
    );
    mounts
}

/// What the machine asked a Job to be.
pub struct JobSpec<'a> {
    pub suffix: &'a str,
    pub image: &'a str,
    pub command: &'a [String],
    pub spec_hash: &'a str,
    pub backoff_limit: i32,
    pub fail_fast_exit_codes: &'a [i32],
    /// The variables from Secrets it gets instead of the model's, for a Job
    /// that needs neither the database nor the message bus (the registration
    /// in Keystone); `None`: the model's, and the Jobs' own.
    pub secrets: Option<&'a [SecretEnv]>,
    /// The group a per-group Job runs for.
    pub group: Option<&'a JobGroup>,
}

/// A phase or sync Job: runs `command` on `image` against the rendered config.
pub fn job(owner: &Owner, model: &ServiceModel, spec: &JobSpec) -> Result<Job> {
    let JobSpec {
        suffix,
        image,
        command,
        spec_hash,
        ..
    } = *spec;
    let container = Container {
        name: suffix.to_string(),
        image: Some(image.to_string()),
        command: Some(command.to_vec()),
        env: Some(job_env(model, spec.secrets, spec.group)),
        volume_mounts: Some(mounts(model)),
        security_context: Some(restricted_container_security()),
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        ..Container::default()
    };
    let annotations = BTreeMap::from([(labels::POD_SPEC_HASH.to_string(), spec_hash.to_string())]);
    let pod_failure_policy = (!spec.fail_fast_exit_codes.is_empty()).then(|| PodFailurePolicy {
        rules: vec![PodFailurePolicyRule {
            action: "FailJob".into(),
            on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                container_name: Some(suffix.to_string()),
                operator: "In".into(),
                values: spec.fail_fast_exit_codes.to_vec(),
            }),
            ..PodFailurePolicyRule::default()
        }],
    });
    Ok(Job {
        metadata: owner.metadata(&owner.job_name(suffix), suffix, annotations),
        spec: Some(JobObjectSpec {
            backoff_limit: Some(spec.backoff_limit),
            pod_failure_policy,
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(owner.labels(suffix)),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod_spec(
                    owner,
                    model,
                    pod_security(model, false),
                    container,
                    "Never",
                )),
            },
            ..JobObjectSpec::default()
        }),
        ..Job::default()
    })
}

/// What the machine asked a workload's pods to run.
pub struct PodParams<'a> {
    pub image: &'a str,
    pub installed_release: &'a str,
    /// The release new pods are pinned to, in the option of the model's
    /// [`super::model::PinStrategy::OptionSetThenRemoved`].
    pub pin: Option<&'a str>,
    pub config_hash: &'a str,
    /// The resource's annotation key for the installed release (second roll).
    pub installed_release_annotation: &'a str,
    /// Scaled to no pod for a phase's offline step.
    pub stopped: bool,
    /// A StatefulSet's pods below this ordinal keep their template (a
    /// per-pod drain's roll); none: every pod rolls.
    pub partition: Option<i32>,
}

/// A long-running workload as its kind renders it (serialized as that object).
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Workload {
    Deployment(Deployment),
    StatefulSet(StatefulSet),
    DaemonSet(DaemonSet),
}

impl Workload {
    /// The hash of its template and replicas, which an unchanged workload's
    /// live object carries too.
    pub fn template_hash(&self) -> Option<&str> {
        let metadata = match self {
            Workload::Deployment(d) => &d.metadata,
            Workload::StatefulSet(s) => &s.metadata,
            Workload::DaemonSet(d) => &d.metadata,
        };
        metadata
            .annotations
            .as_ref()?
            .get(labels::TEMPLATE_HASH)
            .map(String::as_str)
    }
}

/// The workload's container: its command on the machine's image, with its
/// environment and mounts, its probes and security.
fn workload_container(
    workload: &WorkloadModel,
    image: &str,
    env: Vec<EnvVar>,
    mounts: Vec<VolumeMount>,
) -> Container {
    let readiness = &workload.readiness;
    let mut container = Container {
        name: workload.component.clone(),
        image: Some(image.to_string()),
        command: Some(workload.command.clone()),
        env: Some(env),
        volume_mounts: Some(mounts),
        security_context: Some(if workload.privileged {
            privileged_container_security()
        } else {
            restricted_container_security()
        }),
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        resources: workload.resources.clone(),
        readiness_probe: Some(Probe {
            exec: Some(ExecAction {
                command: Some(readiness.command.clone()),
            }),
            period_seconds: Some(readiness.period_seconds),
            timeout_seconds: Some(readiness.period_seconds),
            failure_threshold: Some(3),
            ..Probe::default()
        }),
        ..Container::default()
    };
    if let Some(port) = workload.api_port {
        container.ports = Some(vec![ContainerPort {
            name: Some("api".into()),
            container_port: port,
            ..ContainerPort::default()
        }]);
        container.liveness_probe = Some(Probe {
            tcp_socket: Some(TCPSocketAction {
                port: IntOrString::String("api".into()),
                ..TCPSocketAction::default()
            }),
            initial_delay_seconds: Some(15),
            period_seconds: Some(10),
            failure_threshold: Some(6),
            ..Probe::default()
        });
    }
    if let Some(seconds) = workload.pre_stop_sleep_seconds {
        container.lifecycle = Some(Lifecycle {
            pre_stop: Some(LifecycleHandler {
                sleep: Some(SleepAction {
                    seconds: i64::from(seconds),
                }),
                ..LifecycleHandler::default()
            }),
            ..Lifecycle::default()
        });
    }
    container
}

/// A long-running workload, as a Deployment or a StatefulSet. The template
/// hash annotation lets the controller skip applying an unchanged object.
pub fn workload(
    owner: &Owner,
    model: &ServiceModel,
    workload: &WorkloadModel,
    params: &PodParams,
) -> Result<Workload> {
    let mut env = model_env(model, &workload.secrets);
    env.extend(
        workload
            .env
            .iter()
            .map(|(name, value)| plain_env(name, value)),
    );
    env.extend(
        workload
            .field_env
            .iter()
            .map(|(name, path)| field_env(name, path)),
    );
    let mut pod_annotations = BTreeMap::from([(
        labels::CONFIG_HASH.to_string(),
        params.config_hash.to_string(),
    )]);
    if let Some(pin) = params.pin {
        // oslo.config reads OS_<SECTION>__<OPTION> as that option, fixed in
        // the pod for its lifetime.
        let variable = model
            .pin
            .option()
            .and_then(|o| ratchet_api::oslo::env_name(o.section, o.option))
            .ok_or(Error::Model(
                "the profile pins, but the model names no pin option",
            ))?;
        env.push(plain_env(&variable, pin));
        pod_annotations.insert(PIN_ANNOTATION.to_string(), pin.to_string());
    }
    if workload.carries_installed_release {
        pod_annotations.insert(
            params.installed_release_annotation.to_string(),
            params.installed_release.to_string(),
        );
    }
    let mut volume_mounts = mounts(model);
    let mut claim_volumes = Vec::new();
    for (index, (claim, path)) in workload.claims.iter().enumerate() {
        let volume = format!("claim-{index}");
        volume_mounts.push(mount(&volume, path, false));
        claim_volumes.push(Volume {
            name: volume,
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.clone(),
                ..PersistentVolumeClaimVolumeSource::default()
            }),
            ..Volume::default()
        });
    }
    // A pod's own claim is mounted by its template's name.
    volume_mounts.extend(
        workload
            .pod_claims
            .iter()
            .map(|c| mount(&c.name, &c.mount_path, false)),
    );
    let container = workload_container(workload, params.image, env, volume_mounts);
    let selector = owner.labels(&workload.component);
    let mut spec = pod_spec(
        owner,
        model,
        pod_security(model, workload.privileged),
        container,
        "Always",
    );
    spec.volumes
        .get_or_insert_with(Vec::new)
        .extend(claim_volumes);
    spec.termination_grace_period_seconds = workload.termination_grace_seconds;
    spec.node_selector =
        (!workload.node_selector.is_empty()).then(|| workload.node_selector.clone());
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(selector.clone()),
            annotations: Some(pod_annotations),
            ..ObjectMeta::default()
        }),
        spec: Some(spec),
    };
    let replicas = if params.stopped { 0 } else { workload.replicas };
    if !workload.pod_claims.is_empty() && workload.kind != WorkloadKind::StatefulSet {
        return Err(Error::Model(
            "claims of each pod's own need a StatefulSet, the kind with claim templates",
        ));
    }
    if params.stopped && workload.kind == WorkloadKind::DaemonSet {
        return Err(Error::Model(
            "an offline step stops a per-node workload, which has no replicas to scale to none",
        ));
    }
    let count = match workload.kind {
        WorkloadKind::DaemonSet => "per-node".to_string(),
        WorkloadKind::Deployment | WorkloadKind::StatefulSet => replicas.to_string(),
    };
    // A held partition is part of what is applied (none: the hash as before).
    let held = match params.partition {
        Some(partition) if partition > 0 => format!("-held{partition}"),
        _ => String::new(),
    };
    let annotations = hash_annotation(format!("{}-{count}{held}", hash_of(&template)?));
    let metadata = owner.metadata(&workload.name, &workload.component, annotations);
    let selector = LabelSelector {
        match_labels: Some(selector),
        ..LabelSelector::default()
    };
    Ok(match workload.kind {
        WorkloadKind::Deployment => Workload::Deployment(Deployment {
            metadata,
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                selector,
                progress_deadline_seconds: Some(model.rollout_deadline_seconds),
                // Zero downtime: a new pod must be ready before an old one goes.
                strategy: Some(DeploymentStrategy {
                    type_: Some("RollingUpdate".into()),
                    rolling_update: Some(RollingUpdateDeployment {
                        max_surge: Some(IntOrString::Int(1)),
                        max_unavailable: Some(IntOrString::Int(0)),
                    }),
                }),
                template,
                ..DeploymentSpec::default()
            }),
            ..Deployment::default()
        }),
        WorkloadKind::StatefulSet => Workload::StatefulSet(StatefulSet {
            metadata,
            spec: Some(StatefulSetSpec {
                replicas: Some(replicas),
                service_name: Some(workload.name.clone()),
                selector,
                // Replaced one pod at a time, highest ordinal first, each only
                // after the previous one is ready again.
                pod_management_policy: Some("OrderedReady".into()),
                update_strategy: Some(StatefulSetUpdateStrategy {
                    type_: Some("RollingUpdate".into()),
                    rolling_update: Some(RollingUpdateStatefulSetStrategy {
                        partition: Some(params.partition.unwrap_or(0)),
                        ..RollingUpdateStatefulSetStrategy::default()
                    }),
                }),
                template,
                volume_claim_templates: (!workload.pod_claims.is_empty()).then(|| {
                    workload
                        .pod_claims
                        .iter()
                        .map(|c| claim_template(owner, workload, c))
                        .collect()
                }),
                // A pod's claim lives as long as its pod's place in the set:
                // kept when the set scales in (the pod may come back), gone
                // with the set.
                persistent_volume_claim_retention_policy: (!workload.pod_claims.is_empty()).then(
                    || StatefulSetPersistentVolumeClaimRetentionPolicy {
                        when_deleted: Some("Delete".into()),
                        when_scaled: Some("Retain".into()),
                    },
                ),
                ..StatefulSetSpec::default()
            }),
            ..StatefulSet::default()
        }),
        WorkloadKind::DaemonSet => Workload::DaemonSet(DaemonSet {
            metadata,
            spec: Some(DaemonSetSpec {
                selector,
                // A node's old agent stops before its new one starts: both
                // would report as the node's host. Nodes are independent:
                // `upgrade.maxParallel` of them at a time.
                update_strategy: Some(DaemonSetUpdateStrategy {
                    type_: Some("RollingUpdate".into()),
                    rolling_update: Some(RollingUpdateDaemonSet {
                        max_surge: Some(IntOrString::Int(0)),
                        max_unavailable: Some(IntOrString::Int(workload.nodes_at_once.max(1))),
                    }),
                }),
                template,
                ..DaemonSetSpec::default()
            }),
            ..DaemonSet::default()
        }),
    })
}

/// A StatefulSet's claim template: each pod gets a claim `<name>-<pod>` of
/// its own, read and written by that pod only, kept across its restarts.
fn claim_template(
    owner: &Owner,
    workload: &WorkloadModel,
    claim: &PodClaim,
) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(claim.name.clone()),
            labels: Some(owner.labels(&workload.component)),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(claim.size.clone()),
                )])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    }
}

/// A Service, annotated with the hash of its rendering so an unchanged one is
/// not applied again.
fn service(owner: &Owner, name: &str, component: &str, spec: ServiceSpec) -> Result<Service> {
    let annotations = hash_annotation(hash_of(&spec)?);
    Ok(Service {
        metadata: owner.metadata(name, component, annotations),
        spec: Some(spec),
        ..Service::default()
    })
}

/// The API's Service, named after the resource.
pub fn api_service(owner: &Owner, workload: &WorkloadModel, port: i32) -> Result<Service> {
    service(
        owner,
        &owner.name,
        &workload.component,
        ServiceSpec {
            selector: Some(owner.labels(&workload.component)),
            ports: Some(vec![ServicePort {
                name: Some("api".into()),
                port,
                target_port: Some(IntOrString::String("api".into())),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        },
    )
}

/// The headless Service that gives a StatefulSet's pods stable DNS names.
pub fn headless_service(owner: &Owner, workload: &WorkloadModel) -> Result<Service> {
    service(
        owner,
        &workload.name,
        &workload.component,
        ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(owner.labels(&workload.component)),
            publish_not_ready_addresses: Some(true),
            ..ServiceSpec::default()
        },
    )
}
