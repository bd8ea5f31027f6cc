//! Publishing the machine's events through one recorder.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder};
use ratchet_phase_machine::{Event, EventType};
use tokio::sync::mpsc;

/// Publishes events in the order they are queued, off the reconcile path: a
/// pass hands its events over and ends, so the next pass (the next reaction)
/// never waits on event writes. One queue for the whole operator keeps the
/// order of every object's events.
#[derive(Clone)]
pub struct Publisher {
    queue: mpsc::UnboundedSender<(ObjectReference, Vec<Event>)>,
}

impl Publisher {
    /// Starts the publishing task on the current runtime; it ends once every
    /// `Publisher` is dropped and the queue is drained.
    pub fn start(recorder: Recorder) -> Publisher {
        let (queue, mut pending) = mpsc::unbounded_channel::<(ObjectReference, Vec<Event>)>();
        tokio::spawn(async move {
            while let Some((regarding, events)) = pending.recv().await {
                publish(&recorder, &regarding, &events).await;
            }
        });
        Publisher { queue }
    }

    pub fn publish(&self, regarding: &ObjectReference, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        if self
            .queue
            .send((regarding.clone(), events.to_vec()))
            .is_err()
        {
            tracing::warn!("event publisher stopped; dropping {} events", events.len());
        }
    }
}

/// Publishes events; a failure to publish is logged, never fatal to a reconcile.
async fn publish(recorder: &Recorder, regarding: &ObjectReference, events: &[Event]) {
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
        if let Err(e) = recorder.publish(&kube_event, regarding).await {
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
