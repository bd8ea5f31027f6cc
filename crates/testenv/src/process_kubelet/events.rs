//! The events a kubelet records about a pod's containers (`Pulled`, `Created`,
//! `Started`, `Killing`, `BackOff`, `Unhealthy`, `Failed`), so `kubectl
//! describe pod` tells a person what happened to a real pod. Recording is
//! fire-and-forget: an event that cannot be written never holds a pod up.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};

/// `Normal` or `Warning`, as the API names them.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Normal,
    Warning,
}

/// Records one event about `container` of `pod` from the kubelet on `node`.
pub fn record(
    client: &Client,
    node: &str,
    pod: &Pod,
    container: &str,
    kind: Kind,
    reason: &str,
    message: String,
) {
    let Some(namespace) = pod.namespace() else {
        return;
    };
    let now = k8s_openapi::jiff::Timestamp::now();
    let event = Event {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}.", pod.name_any())),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(pod.name_any()),
            namespace: Some(namespace.clone()),
            uid: pod.uid(),
            field_path: Some(format!("spec.containers{{{container}}}")),
            ..ObjectReference::default()
        },
        reason: Some(reason.to_string()),
        message: Some(message),
        type_: Some(match kind {
            Kind::Normal => "Normal".into(),
            Kind::Warning => "Warning".into(),
        }),
        source: Some(EventSource {
            component: Some("kubelet".into()),
            host: Some(node.to_string()),
        }),
        reporting_component: Some("kubelet".into()),
        reporting_instance: Some(node.to_string()),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        event_time: Some(MicroTime(now)),
        action: Some(reason.to_string()),
        count: Some(1),
        ..Event::default()
    };
    let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
    tokio::spawn(async move {
        if let Err(e) = api.create(&PostParams::default(), &event).await {
            tracing::debug!(error = %e, "process kubelet: recording an event failed");
        }
    });
}
