//! The Kubernetes objects a Cinder owns, built without I/O.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use ratchet_api::cinder::v1alpha1::Cinder;
use ratchet_phase_machine::hash::content_hash;
use serde_json::{Value, json};

use super::config::{ENV_DATABASE_CONNECTION, ENV_ENABLED_BACKENDS, ENV_TRANSPORT_URL};
use super::profile::{API_PORT, CONFIG_DIR, CONFIG_KEY, Role, SERVICE};
use crate::error::{Error, Result};
use crate::labels;

/// The pod annotation that carries the installed release (the second roll).
pub const INSTALLED_RELEASE_ANNOTATION: &str = "cinder.c5c3.io/installed-release";
/// The pod annotation naming an explicit RPC/object version pin (services that
/// pin through configuration; Cinder pins itself and never sets it).
pub const PIN_ANNOTATION: &str = "ratchet.c5c3.io/pin-release";
/// The Cinder annotation recording the last Job whose upgrade check was reported.
pub const CHECK_REPORTED_ANNOTATION: &str = "cinder.c5c3.io/last-upgrade-check-job-uid";

/// Identity of the owning Cinder, for names, labels and owner references.
pub struct Owner {
    pub name: String,
    pub namespace: String,
    pub reference: OwnerReference,
}

impl Owner {
    pub fn of(cinder: &Cinder) -> Result<Owner> {
        Ok(Owner {
            name: cinder
                .metadata
                .name
                .clone()
                .ok_or(Error::MissingField("metadata.name"))?,
            namespace: cinder
                .metadata
                .namespace
                .clone()
                .ok_or(Error::MissingField("metadata.namespace"))?,
            reference: cinder
                .controller_owner_ref(&())
                .ok_or(Error::MissingField("metadata.uid"))?,
        })
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
            "labels": labels::component(SERVICE, &self.name, component),
            "annotations": annotations,
            "ownerReferences": [self.reference],
        })
    }

    pub fn config_map_name(&self) -> String {
        format!("{}-config", self.name)
    }
}

pub fn config_map(owner: &Owner, rendered: &str) -> Result<ConfigMap> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": owner.metadata(&owner.config_map_name(), "config", BTreeMap::new()),
        "data": { CONFIG_KEY: rendered },
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

fn secret_env(cinder: &Cinder) -> Vec<Value> {
    vec![
        json!({
            "name": ENV_DATABASE_CONNECTION,
            "valueFrom": { "secretKeyRef": { "name": cinder.spec.database.secret_name, "key": cinder.spec.database.key } },
        }),
        json!({
            "name": ENV_TRANSPORT_URL,
            "valueFrom": { "secretKeyRef": { "name": cinder.spec.transport.secret_name, "key": cinder.spec.transport.key } },
        }),
    ]
}

fn pod_spec(owner: &Owner, container: Value, restart_policy: &str) -> Value {
    json!({
        "restartPolicy": restart_policy,
        "enableServiceLinks": false,
        "securityContext": { "runAsNonRoot": true, "seccompProfile": { "type": "RuntimeDefault" } },
        "containers": [container],
        "volumes": [
            { "name": "config", "configMap": { "name": owner.config_map_name() } },
            { "name": "state", "emptyDir": {} },
        ],
        "automountServiceAccountToken": false,
    })
}

fn mounts() -> Value {
    json!([
        { "name": "config", "mountPath": CONFIG_DIR, "readOnly": true },
        { "name": "state", "mountPath": "/var/lib/cinder" },
    ])
}

/// What the machine asked a Job to be.
pub struct JobSpec<'a> {
    pub suffix: &'a str,
    pub image: &'a str,
    pub command: &'a [String],
    pub spec_hash: &'a str,
    pub backoff_limit: i32,
    pub fail_fast_exit_codes: &'a [i32],
}

/// A phase or sync Job: runs `command` on `image` against the rendered config.
pub fn job(owner: &Owner, cinder: &Cinder, spec: &JobSpec) -> Result<Job> {
    let JobSpec {
        suffix,
        image,
        command,
        spec_hash,
        ..
    } = *spec;
    let name = format!("{}-{suffix}", owner.name);
    let container = json!({
        "name": suffix,
        "image": image,
        "command": command,
        "env": secret_env(cinder),
        "volumeMounts": mounts(),
        "securityContext": restricted_container_security(),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    });
    let annotations = BTreeMap::from([(labels::POD_SPEC_HASH.to_string(), spec_hash.to_string())]);
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": owner.metadata(&name, suffix, annotations),
        "spec": {
            "backoffLimit": spec.backoff_limit,
            "template": {
                "metadata": { "labels": labels::component(SERVICE, &owner.name, suffix) },
                "spec": pod_spec(owner, container, "Never"),
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

/// A long-running workload. The template hash annotation lets the controller
/// skip applying an unchanged Deployment.
pub fn deployment(
    owner: &Owner,
    cinder: &Cinder,
    role: &Role,
    image: &str,
    installed_release: &str,
    config_hash: &str,
) -> Result<Deployment> {
    let name = role.workload_name(&owner.name);
    let component = role.component();
    let (replicas, resources) = match role {
        Role::Api => (
            cinder.spec.api.replicas_or_default(),
            cinder.spec.api.resources.clone(),
        ),
        Role::Scheduler => (
            cinder.spec.scheduler.replicas_or_default(),
            cinder.spec.scheduler.resources.clone(),
        ),
        Role::Backup => (
            cinder.spec.backup.replicas_or_default(),
            cinder.spec.backup.resources.clone(),
        ),
        Role::Volume(backend) => {
            let spec = cinder.spec.volumes.get(backend);
            (
                spec.and_then(|s| s.replicas).unwrap_or(1),
                spec.and_then(|s| s.resources.clone()),
            )
        }
    };
    let mut env = secret_env(cinder);
    if let Role::Volume(backend) = role {
        env.push(json!({ "name": ENV_ENABLED_BACKENDS, "value": backend }));
    }
    let mut container = json!({
        "name": component,
        "image": image,
        "command": role.command(),
        "env": env,
        "volumeMounts": mounts(),
        "securityContext": restricted_container_security(),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    });
    if let Some(resources) = resources {
        container["resources"] = serde_json::to_value(resources)?;
    }
    if *role == Role::Api {
        container["ports"] = json!([{ "name": "api", "containerPort": API_PORT }]);
        container["readinessProbe"] = json!({
            "httpGet": { "path": "/", "port": "api" },
            "periodSeconds": 5, "timeoutSeconds": 3, "failureThreshold": 3,
        });
        container["livenessProbe"] = json!({
            "tcpSocket": { "port": "api" },
            "initialDelaySeconds": 15, "periodSeconds": 10, "failureThreshold": 6,
        });
    }
    let mut pod_annotations =
        BTreeMap::from([(labels::CONFIG_HASH.to_string(), config_hash.to_string())]);
    if role.carries_installed_release() {
        pod_annotations.insert(
            INSTALLED_RELEASE_ANNOTATION.to_string(),
            installed_release.to_string(),
        );
    }
    let selector = labels::component(SERVICE, &owner.name, &component);
    let template = json!({
        "metadata": { "labels": selector, "annotations": pod_annotations },
        "spec": pod_spec(owner, container, "Always"),
    });
    let template_hash = content_hash(serde_json::to_string(&template)?.as_bytes());
    let annotations = BTreeMap::from([(
        labels::TEMPLATE_HASH.to_string(),
        format!("{template_hash}-{replicas}"),
    )]);
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": owner.metadata(&name, &component, annotations),
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": selector },
            "progressDeadlineSeconds": cinder.spec.rollout_deadline_seconds.unwrap_or(600),
            // Zero downtime: a new pod must be ready before an old one goes.
            "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 1, "maxUnavailable": 0 } },
            "template": template,
        }
    }))?)
}

/// The API's Service, `<cinder>`.
pub fn service(owner: &Owner) -> Result<Service> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": owner.metadata(&owner.name, "api", BTreeMap::new()),
        "spec": {
            "selector": labels::component(SERVICE, &owner.name, "api"),
            "ports": [{ "name": "api", "port": API_PORT, "targetPort": "api" }],
        }
    }))?)
}
