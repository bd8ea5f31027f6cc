//! Conditions as the machine wants them, merged with what is stored: the
//! transition time moves only when the status flips, and events fire only on
//! changes, so a retry loop never floods the event stream.

use crate::decision::{Event, EventType};
use crate::observe::{ConditionState, StatusView};
use crate::vocabulary::{condition, reason};

/// One condition the machine sets this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub status: bool,
    pub reason: &'static str,
    pub message: String,
}

impl Verdict {
    pub fn yes(reason: &'static str, message: impl Into<String>) -> Verdict {
        Verdict {
            status: true,
            reason,
            message: message.into(),
        }
    }
    pub fn no(reason: &'static str, message: impl Into<String>) -> Verdict {
        Verdict {
            status: false,
            reason,
            message: message.into(),
        }
    }
}

/// The three standard conditions, with Ready derived from the other two.
pub fn standard(
    previous: &StatusView,
    generation: i64,
    now: &str,
    database: Verdict,
    deployments: Verdict,
) -> Vec<ConditionState> {
    let ready = if database.status && deployments.status {
        Verdict::yes(reason::READY, "database and workloads are ready")
    } else {
        let why = if database.status {
            &deployments
        } else {
            &database
        };
        Verdict::no(
            reason::NOT_READY,
            format!("{}: {}", why.reason, why.message),
        )
    };
    [
        (condition::DATABASE_READY, database),
        (condition::DEPLOYMENTS_READY, deployments),
        (condition::READY, ready),
    ]
    .into_iter()
    .map(|(kind, verdict)| merge(previous, kind, verdict, generation, now))
    .collect()
}

fn merge(
    previous: &StatusView,
    kind: &str,
    verdict: Verdict,
    generation: i64,
    now: &str,
) -> ConditionState {
    let last_transition_time = match previous.condition(kind) {
        Some(old) if old.status == verdict.status => old.last_transition_time.clone(),
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
}

/// Reasons whose arrival on DatabaseReady is announced, and how.
fn database_event(reason: &str) -> Option<EventType> {
    match reason {
        reason::DATABASE_SYNCED => Some(EventType::Normal),
        reason::DB_SYNC_FAILED
        | reason::IMAGE_RELEASE_MISMATCH
        | reason::INVALID_IMAGE
        | reason::SECRET_MISSING
        | reason::VERSION_PARSE_ERROR
        | reason::DOWNGRADE_NOT_SUPPORTED
        | reason::UPGRADE_PATH_INVALID => Some(EventType::Warning),
        _ => None,
    }
}

/// Events for conditions whose reason changed since the stored status. The same
/// failure seen again on a retry changes nothing and announces nothing.
pub fn transition_events(previous: &StatusView, next: &[ConditionState]) -> Vec<Event> {
    next.iter()
        .filter(|c| c.kind == condition::DATABASE_READY)
        .filter(|c| {
            previous
                .condition(&c.kind)
                .is_none_or(|old| old.reason != c.reason || old.status != c.status)
        })
        .filter_map(|c| {
            database_event(&c.reason).map(|kind| Event {
                kind,
                reason: c.reason.clone(),
                message: c.message.clone(),
            })
        })
        .collect()
}
