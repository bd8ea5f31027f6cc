//! Publishing the machine's events through the shared recorder.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType};
use ratchet_phase_machine::{Event, EventType};

use crate::context::Context;

/// Publishes events; a failure to publish is logged, never fatal to a reconcile.
pub async fn publish(ctx: &Context, regarding: &ObjectReference, events: &[Event]) {
    for event in events {
        let kube_event = KubeEvent {
            type_: match event.kind {
                EventType::Normal => KubeEventType::Normal,
                EventType::Warning => KubeEventType::Warning,
            },
            reason: event.reason.clone(),
            note: Some(truncate(&event.message, 1024)),
            action: "Reconcile".into(),
            secondary: None,
        };
        if let Err(e) = ctx.recorder.publish(&kube_event, regarding).await {
            tracing::warn!(reason = %event.reason, error = %e, "could not publish event");
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}
