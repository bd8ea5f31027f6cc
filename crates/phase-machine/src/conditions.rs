//! Conditions as the machine wants them, merged with what is stored: the
//! transition time moves only when the status flips, and a condition's event
//! fires only when its reason changes, so a retry loop never floods the event
//! stream.

use crate::decision::{Event, EventType};
use crate::observe::{ConditionState, StatusView};
use crate::vocabulary::{condition, reason};

/// Ready: the database is ready and the workloads are rolled out. A rolling
/// restart of workloads that were all rolled out or Ready before (the second
/// roll after an upgrade, a restart on a new configuration) keeps Ready True
/// while every workload keeps `serving`: Ready says the service serves,
/// DeploymentsReady says the roll is done, and an alert keyed on Ready does not
/// fire at the end of every upgrade. A fresh install is not Ready before its
/// first roll completes.
fn ready(
    previous: &StatusView,
    database: &Verdict,
    deployments: &Verdict,
    serving: bool,
) -> Verdict {
    let was_up = [condition::READY, condition::DEPLOYMENTS_READY]
        .into_iter()
        .any(|kind| previous.condition(kind).is_some_and(|c| c.status));
    if database.status && deployments.status {
        Verdict::yes(reason::READY, "database and workloads are ready")
    } else if database.status
        && matches!(
            deployments.reason,
            reason::ROLLOUT_IN_PROGRESS | reason::DRAINING
        )
        && serving
        && was_up
    {
        Verdict::yes(
            reason::READY,
            format!(
                "database ready; every workload serves while {}",
                deployments.message
            ),
        )
    } else {
        let why = if database.status {
            deployments
        } else {
            database
        };
        Verdict::no(
            reason::NOT_READY,
            format!("{}: {}", why.reason, why.message),
        )
    }
}

/// One condition the machine sets this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub status: bool,
    pub reason: &'static str,
    pub message: String,
    /// The event announcing that the condition took this reason.
    pub announce: Option<EventType>,
}

impl Verdict {
    pub fn yes(reason: &'static str, message: impl Into<String>) -> Verdict {
        Verdict {
            status: true,
            reason,
            message: message.into(),
            announce: None,
        }
    }

    pub fn no(reason: &'static str, message: impl Into<String>) -> Verdict {
        Verdict {
            status: false,
            reason,
            message: message.into(),
            announce: None,
        }
    }

    /// Announce the change with a Warning event.
    pub fn warn(mut self) -> Verdict {
        self.announce = Some(EventType::Warning);
        self
    }

    /// Announce the change with a Normal event.
    pub fn notify(mut self) -> Verdict {
        self.announce = Some(EventType::Normal);
        self
    }
}

/// The three standard conditions (Ready derived from the other two and from
/// whether the workloads keep `serving`), then the advisory ones (which never
/// affect Ready), and the events for those whose reason changed since the
/// stored status.
pub fn standard(
    previous: &StatusView,
    generation: i64,
    now: &str,
    database: Verdict,
    deployments: Verdict,
    serving: bool,
    advisories: Vec<(&'static str, Verdict)>,
) -> (Vec<ConditionState>, Vec<Event>) {
    let ready = ready(previous, &database, &deployments, serving);
    let mut events = Vec::new();
    let conditions = [
        (condition::DATABASE_READY, database),
        (condition::DEPLOYMENTS_READY, deployments),
        (condition::READY, ready),
    ]
    .into_iter()
    .chain(advisories)
    .map(|(kind, verdict)| {
        let old = previous.condition(kind);
        let changed = old.is_none_or(|o| o.reason != verdict.reason || o.status != verdict.status);
        if changed && let Some(kind) = verdict.announce {
            events.push(Event {
                kind,
                reason: verdict.reason.to_string(),
                message: verdict.message.clone(),
            });
        }
        let last_transition_time = match old {
            Some(o) if o.status == verdict.status => o.last_transition_time.clone(),
            _ => now.to_string(),
        };
        ConditionState {
            kind: kind.to_string(),
            status: verdict.status,
            reason: verdict.reason.to_string(),
            message: verdict.message,
            last_transition_time,
            observed_generation: Some(generation),
        }
    })
    .collect();
    (conditions, events)
}
