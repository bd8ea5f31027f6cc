//! The Kubernetes objects a service resource owns, built without I/O from its
//! [`ServiceModel`] and the machine's decision.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use ratchet_phase_machine::hash::content_hash;
use serde_json::{Value, json};

use super::model::{
    ENV_JOB_GROUP, JobGroup, KeySecret, SecretEnv, ServiceModel, WorkloadKind, WorkloadModel,
    new_key, with_own,
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
    ) -> Value {
        json!({
            "name": name,
            "namespace": self.namespace,
            "labels": self.labels(component),
            "annotations": annotations,
            "ownerReferences": [self.reference],
        })
    }

    pub fn config_map_name(&self) -> String {
        format!("{}-config", self.name)
    }

    pub fn job_name(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.name)
    }
}

/// The ConfigMap holding `files`, the model's rendered configuration and the
/// files beside it, annotated with the hash of its content: the cache keeps
/// the hash, not the files.
pub fn config_map(owner: &Owner, files: &BTreeMap<&str, &str>) -> Result<ConfigMap> {
    let hash = content_hash(serde_json::to_string(files)?.as_bytes());
    let annotations = BTreeMap::from([(labels::TEMPLATE_HASH.to_string(), hash)]);
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": owner.metadata(&owner.config_map_name(), "config", annotations),
        "data": files,
    }))?)
}

/// Restricted pod security: non-root, no privilege escalation, no capabilities,
/// the runtime's default seccomp profile.
fn restricted_container_security() -> Value {
    json!({
        "runAsNonRoot": true,
        "allowPrivilegeEscalation": false,
        "capabilities": { "drop": ["ALL"] },
        "seccompProfile": { "type": "RuntimeDefault" },
    })
}

/// A workload that opted in to privilege (a Cinder LVM back end): rootwrap runs
/// `sudo`, which needs privilege escalation, and LVM needs the host's devices.
/// A privileged container runs unconfined by seccomp whatever it asks for.
fn privileged_container_security() -> Value {
    json!({
        "privileged": true,
        "allowPrivilegeEscalation": true,
        "runAsNonRoot": false,
        "runAsUser": 0,
    })
}

/// The pod's security context: the model's user and groups, or root for a
/// privileged workload.
fn pod_security(model: &ServiceModel, privileged: bool) -> Value {
    if privileged {
        return json!({ "runAsNonRoot": false, "runAsUser": 0, "runAsGroup": 0 });
    }
    let identity = &model.identity;
    json!({
        "runAsNonRoot": true,
        "runAsUser": identity.run_as_user,
        "runAsGroup": identity.run_as_group,
        "fsGroup": identity.fs_group,
        "seccompProfile": { "type": "RuntimeDefault" },
    })
}

/// The environment of a pod or Job of the model: variables from Secret keys
/// (the model's, with those of the workload or Job group that has its `own`
/// in their place), then the model's plain ones.
fn model_env(model: &ServiceModel, own: &[SecretEnv]) -> Vec<Value> {
    let plain = model
        .env
        .iter()
        .map(|(name, value)| json!({ "name": name, "value": value }));
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
) -> Vec<Value> {
    let Some(secrets) = secrets else {
        let own = group.map_or(&[][..], |g| g.secrets.as_slice());
        let mut env = model_env(model, own);
        env.extend(model.job_secrets.iter().map(secret_env));
        if let Some(group) = group {
            env.push(json!({ "name": ENV_JOB_GROUP, "value": group.name }));
        }
        return env;
    };
    let plain = model
        .env
        .iter()
        .map(|(name, value)| json!({ "name": name, "value": value }));
    secrets.iter().map(secret_env).chain(plain).collect()
}

fn secret_env(secret: &SecretEnv) -> Value {
    json!({
        "name": secret.env,
        "valueFrom": { "secretKeyRef": { "name": secret.source.secret_name, "key": secret.source.key } },
    })
}

/// Owner-only and group-readable (the pod's fsGroup): keys are read by the
/// service's user, nobody else.
const KEY_FILE_MODE: i32 = 0o440;

/// A key Secret as first created: a fresh key in each of its keys.
pub fn key_secret(owner: &Owner, secret: &KeySecret) -> Result<Secret> {
    let data: BTreeMap<&str, String> = secret.keys.iter().map(|k| (*k, new_key())).collect();
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": owner.metadata(&secret.secret_name, "keys", BTreeMap::new()),
        "type": "Opaque",
        "stringData": data,
    }))?)
}

fn pod_spec(
    owner: &Owner,
    model: &ServiceModel,
    security: Value,
    container: Value,
    restart_policy: &str,
) -> Value {
    let mut volumes = vec![
        json!({ "name": "config", "configMap": { "name": owner.config_map_name() } }),
        json!({ "name": "state", "emptyDir": {} }),
    ];
    volumes.extend(
        (0..model.scratch_dirs.len())
            .map(|i| json!({ "name": format!("scratch-{i}"), "emptyDir": {} })),
    );
    volumes.extend(model.key_secrets.iter().enumerate().map(|(i, s)| {
        json!({ "name": format!("keys-{i}"), "secret": { "secretName": s.secret_name, "defaultMode": KEY_FILE_MODE } })
    }));
    json!({
        "restartPolicy": restart_policy,
        "enableServiceLinks": false,
        "securityContext": security,
        "containers": [container],
        "volumes": volumes,
        "automountServiceAccountToken": false,
    })
}

fn mounts(model: &ServiceModel) -> Value {
    let mut mounts = vec![
        json!({ "name": "config", "mountPath": model.config_dir, "readOnly": true }),
        json!({ "name": "state", "mountPath": model.state_dir }),
    ];
    mounts.extend(
        model
            .scratch_dirs
            .iter()
            .enumerate()
            .map(|(i, path)| json!({ "name": format!("scratch-{i}"), "mountPath": path })),
    );
    mounts.extend(model.key_secrets.iter().enumerate().map(|(i, s)| {
        json!({ "name": format!("keys-{i}"), "mountPath": s.mount_path, "readOnly": true })
    }));
    Value::Array(mounts)
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
    let container = json!({
        "name": suffix,
        "image": image,
        "command": command,
        "env": job_env(model, spec.secrets, spec.group),
        "volumeMounts": mounts(model),
        "securityContext": restricted_container_security(),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    });
    let annotations = BTreeMap::from([(labels::POD_SPEC_HASH.to_string(), spec_hash.to_string())]);
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": owner.metadata(&owner.job_name(suffix), suffix, annotations),
        "spec": {
            "backoffLimit": spec.backoff_limit,
            "template": {
                "metadata": { "labels": owner.labels(suffix) },
                "spec": pod_spec(owner, model, pod_security(model, false), container, "Never"),
            }
        }
    });
    if !spec.fail_fast_exit_codes.is_empty() {
        job["spec"]["podFailurePolicy"] = json!({
            "rules": [{
                "action": "FailJob",
                "onExitCodes": { "containerName": suffix, "operator": "In", "values": spec.fail_fast_exit_codes },
            }]
        });
    }
    Ok(serde_json::from_value(job)?)
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
}

/// A long-running workload, as a Deployment or a StatefulSet. The template
/// hash annotation lets the controller skip applying an unchanged object.
pub fn workload(
    owner: &Owner,
    model: &ServiceModel,
    workload: &WorkloadModel,
    params: &PodParams,
) -> Result<Value> {
    let mut env = model_env(model, &workload.secrets);
    env.extend(
        workload
            .env
            .iter()
            .map(|(name, value)| json!({ "name": name, "value": value })),
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
        env.push(json!({ "name": variable, "value": pin }));
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
        if let Some(list) = volume_mounts.as_array_mut() {
            list.push(json!({ "name": volume, "mountPath": path }));
        }
        claim_volumes
            .push(json!({ "name": volume, "persistentVolumeClaim": { "claimName": claim } }));
    }
    let mut container = json!({
        "name": workload.component,
        "image": params.image,
        "command": workload.command,
        "env": env,
        "volumeMounts": volume_mounts,
        "securityContext": if workload.privileged {
            privileged_container_security()
        } else {
            restricted_container_security()
        },
        "terminationMessagePolicy": "FallbackToLogsOnError",
    });
    if let Some(resources) = &workload.resources {
        container["resources"] = serde_json::to_value(resources)?;
    }
    let readiness = &workload.readiness;
    container["readinessProbe"] = json!({
        "exec": { "command": readiness.command },
        "periodSeconds": readiness.period_seconds,
        "timeoutSeconds": readiness.period_seconds,
        "failureThreshold": 3,
    });
    if workload.api_port.is_some() {
        container["ports"] = json!([{ "name": "api", "containerPort": workload.api_port }]);
        container["livenessProbe"] = json!({
            "tcpSocket": { "port": "api" },
            "initialDelaySeconds": 15, "periodSeconds": 10, "failureThreshold": 6,
        });
    }
    if let Some(seconds) = workload.pre_stop_sleep_seconds {
        container["lifecycle"] = json!({ "preStop": { "sleep": { "seconds": seconds } } });
    }
    let selector = owner.labels(&workload.component);
    let mut spec = pod_spec(
        owner,
        model,
        pod_security(model, workload.privileged),
        container,
        "Always",
    );
    if let Some(volumes) = spec["volumes"].as_array_mut() {
        volumes.extend(claim_volumes);
    }
    if let Some(seconds) = workload.termination_grace_seconds {
        spec["terminationGracePeriodSeconds"] = json!(seconds);
    }
    let template = json!({
        "metadata": { "labels": selector, "annotations": pod_annotations },
        "spec": spec,
    });
    let template_hash = content_hash(serde_json::to_string(&template)?.as_bytes());
    let replicas = if params.stopped { 0 } else { workload.replicas };
    let annotations = BTreeMap::from([(
        labels::TEMPLATE_HASH.to_string(),
        format!("{template_hash}-{replicas}"),
    )]);
    let metadata = owner.metadata(&workload.name, &workload.component, annotations);
    Ok(match workload.kind {
        WorkloadKind::Deployment => json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": metadata,
            "spec": {
                "replicas": replicas,
                "selector": { "matchLabels": selector },
                "progressDeadlineSeconds": model.rollout_deadline_seconds,
                // Zero downtime: a new pod must be ready before an old one goes.
                "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 1, "maxUnavailable": 0 } },
                "template": template,
            }
        }),
        WorkloadKind::StatefulSet => json!({
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": metadata,
            "spec": {
                "replicas": replicas,
                "serviceName": workload.name,
                "selector": { "matchLabels": selector },
                // Replaced one pod at a time, highest ordinal first, each only
                // after the previous one is ready again.
                "podManagementPolicy": "OrderedReady",
                "updateStrategy": { "type": "RollingUpdate", "rollingUpdate": { "partition": 0 } },
                "template": template,
            }
        }),
    })
}

pub fn deployment(value: Value) -> Result<Deployment> {
    Ok(serde_json::from_value(value)?)
}

pub fn stateful_set(value: Value) -> Result<StatefulSet> {
    Ok(serde_json::from_value(value)?)
}

/// A Service, annotated with the hash of its rendering so an unchanged one is
/// not applied again.
fn service(owner: &Owner, name: &str, component: &str, spec: Value) -> Result<Service> {
    let hash = content_hash(serde_json::to_string(&spec)?.as_bytes());
    let annotations = BTreeMap::from([(labels::TEMPLATE_HASH.to_string(), hash)]);
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": owner.metadata(name, component, annotations),
        "spec": spec,
    }))?)
}

/// The API's Service, named after the resource.
pub fn api_service(owner: &Owner, workload: &WorkloadModel, port: i32) -> Result<Service> {
    service(
        owner,
        &owner.name,
        &workload.component,
        json!({
            "selector": owner.labels(&workload.component),
            "ports": [{ "name": "api", "port": port, "targetPort": "api" }],
        }),
    )
}

/// The headless Service that gives a StatefulSet's pods stable DNS names.
pub fn headless_service(owner: &Owner, workload: &WorkloadModel) -> Result<Service> {
    service(
        owner,
        &workload.name,
        &workload.component,
        json!({
            "clusterIP": "None",
            "selector": owner.labels(&workload.component),
            "publishNotReadyAddresses": true,
        }),
    )
}
