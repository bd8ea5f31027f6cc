//! Publishing events. A transition's events are published exactly once, even
//! across crashes, under names that a repeated decision derives alike
//! ([`announcing`], [`publish_named`]); the operator's own notices go through
//! one recorder behind an ordered queue ([`Publisher`]).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as EventObject;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder};
use ratchet_api::common::PendingEvent;
use ratchet_phase_machine::hash::content_hash;
use ratchet_phase_machine::{Event, EventType};
use tokio::sync::mpsc;

/// The controller events name as their reporter.
pub const REPORTING_CONTROLLER: &str = "ratchet";

/// Names `events` about `regarding` after the resource's UID, `occasion` (what
/// the events announce: the status they leave, a check Job's UID) and each
/// event's place: a decision repeated from the same state names its events
/// alike, anything else differently.
pub fn announcing(
    regarding: &ObjectReference,
    occasion: &str,
    events: &[Event],
) -> Vec<PendingEvent> {
    let uid = regarding.uid.as_deref().unwrap_or_default();
    let subject = regarding.name.as_deref().unwrap_or("resource");
    // An event name is a DNS subdomain (at most 253 characters).
    let prefix = truncate(subject, 200);
    events
        .iter()
        .enumerate()
        .map(|(index, event)| {
            let identity = format!("{uid}\0{occasion}\0{index}\0{}", event.reason);
            PendingEvent {
                name: format!("{prefix}.{}", content_hash(identity.as_bytes())),
                type_: match event.kind {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .into(),
                reason: event.reason.clone(),
                message: truncate(&event.message, 1024),
            }
        })
        .collect()
}

/// Creates each named event unless one of its name exists: a repeated
/// publication (after a crash, or by a second operator) answers
/// `AlreadyExists` and doubles nothing.
///
/// Returns the other reporting instances that had published one of them
/// first: a replica that took over from a crashed leader, or, without leader
/// election, a second operator acting on the same resources.
pub async fn publish_named(
    client: &kube::Client,
    instance: &str,
    regarding: &ObjectReference,
    events: &[PendingEvent],
) -> Result<Vec<String>, kube::Error> {
    let namespace = regarding.namespace.clone().unwrap_or_default();
    let api: Api<EventObject> = Api::namespaced(client.clone(), &namespace);
    let creates = events.iter().map(|event| {
        let object = event_object(instance, regarding, event);
        let api = api.clone();
        async move {
            match api.create(&PostParams::default(), &object).await {
                Ok(_) => Ok(None),
                Err(kube::Error::Api(status)) if status.is_already_exists() => {
                    let first = api
                        .get_opt(&event.name)
                        .await?
                        .and_then(|e| e.reporting_instance);
                    Ok(first.filter(|first| first != instance))
                }
                Err(e) => Err(e),
            }
        }
    });
    let others = futures::future::try_join_all(creates).await?;
    Ok(others.into_iter().flatten().collect())
}

/// Publishes `events` named as [`announcing`] says, before the change they
/// announce is recorded: a crash after publishing and before recording
/// repeats the same decision from the same state, whose creates answer
/// `AlreadyExists`.
pub async fn publish_once(
    client: &kube::Client,
    instance: &str,
    regarding: &ObjectReference,
    occasion: &str,
    events: &[Event],
) -> Result<Vec<String>, kube::Error> {
    let named = announcing(regarding, occasion, events);
    publish_named(client, instance, regarding, &named).await
}

/// The event object of a named event.
fn event_object(instance: &str, regarding: &ObjectReference, event: &PendingEvent) -> EventObject {
    EventObject {
        metadata: ObjectMeta {
            name: Some(event.name.clone()),
            namespace: regarding.namespace.clone(),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
        type_: Some(event.type_.clone()),
        reason: Some(event.reason.clone()),
        note: Some(event.message.clone()),
        action: Some("Reconcile".into()),
        reporting_controller: Some(REPORTING_CONTROLLER.into()),
        reporting_instance: Some(truncate(instance, 128)),
        regarding: Some(regarding.clone()),
        ..EventObject::default()
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(uid: &str) -> ObjectReference {
        ObjectReference {
            name: Some("c".into()),
            namespace: Some("ns".into()),
            uid: Some(uid.into()),
            ..ObjectReference::default()
        }
    }

    fn event(reason: &str) -> Event {
        Event {
            kind: EventType::Normal,
            reason: reason.into(),
            message: "m".into(),
        }
    }

    fn name(uid: &str, occasion: &str, index: usize, reason: &str) -> String {
        let mut events = vec![event("Earlier"); index];
        events.push(event(reason));
        announcing(&reference(uid), occasion, &events)[index]
            .name
            .clone()
    }

    #[test]
    fn a_repeated_decision_names_its_events_alike_and_anything_else_differently() {
        let once = name("u1", "status-a", 0, "ExpandComplete");
        assert_eq!(once, name("u1", "status-a", 0, "ExpandComplete"));
        assert!(once.starts_with("c."));
        for other in [
            name("u2", "status-a", 0, "ExpandComplete"),
            name("u1", "status-b", 0, "ExpandComplete"),
            name("u1", "status-a", 1, "ExpandComplete"),
            name("u1", "status-a", 0, "MigrateComplete"),
        ] {
            assert_ne!(once, other);
        }
    }

    #[test]
    fn names_fit_a_dns_subdomain() {
        let mut long = reference("u");
        long.name = Some("x".repeat(253));
        let named = announcing(&long, "o", &[event("E")]);
        assert!(named[0].name.len() <= 253);
    }
}
