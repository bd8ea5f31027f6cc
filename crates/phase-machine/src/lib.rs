//! The phase machine every OpenStack service shares. Pure: from what the
//! controller observed ([`Observed`]) it decides what to do ([`Decision`]) —
//! status, events, Jobs, workloads, and whether to retry. A service plugs in
//! through a [`Profile`]; the machine is never copied per service.

mod advice;
mod chain;
pub mod conditions;
pub mod decision;
pub mod drain;
pub mod hash;
pub mod observe;
mod offline;
mod pod_roll;
pub mod profile;
pub mod registration;
mod shared;
mod steady;
mod upgrade;
pub mod vocabulary;

pub use decision::{
    CheckReport, Decision, DesiredStatus, Event, EventType, JobAction, Outcome, WorkloadAction,
};
pub use observe::{
    ConditionState, HostDrain, JobOutcome, Observed, ObservedJob, ObservedRegistration,
    ObservedWorkload, Replicas, Rollout, SpecView, StatusView, WorkloadId,
};
pub use profile::{
    Advice, ExitReason, JobRun, JobTemplate, Offline, Phase, Pin, Profile, SchemaPending, Step,
    UpgradeCheck, job_runs,
};
use upgrade::Pass;

/// Decides one reconcile pass: steady state or an upgrade phase, and after a
/// promotion steady state at the new release, in the same pass (its events
/// after the upgrade's). Steady state at the release just installed starts no
/// upgrade, so this runs at most twice.
pub fn decide(profile: &Profile, observed: &Observed) -> Decision {
    if let Err(why) = shared::children_own(observed) {
        return shared::blocked(profile, observed, why);
    }
    let mut pass = if observed.status.phase.is_empty() {
        steady::decide(profile, observed)
    } else {
        upgrade::decide(profile, observed)
    };
    let mut events = Vec::new();
    loop {
        match pass {
            Pass::Decided(mut decision) => {
                events.append(&mut decision.events);
                decision.events = events;
                return *decision;
            }
            Pass::Promoted {
                observed,
                events: mut upgrade_events,
            } => {
                events.append(&mut upgrade_events);
                pass = steady::decide(profile, &observed);
            }
        }
    }
}
