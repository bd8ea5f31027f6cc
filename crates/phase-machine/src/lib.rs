//! The phase machine every OpenStack service shares. Pure: from what the
//! controller observed ([`Observed`]) it decides what to do ([`Decision`]) —
//! status, events, Jobs, workloads, and whether to retry. A service plugs in
//! through a [`Profile`]; the machine is never copied per service.

pub mod conditions;
pub mod decision;
pub mod hash;
pub mod observe;
pub mod profile;
pub mod profiles;
mod shared;
mod steady;
mod upgrade;
pub mod vocabulary;

pub use decision::{
    CheckReport, Decision, DesiredStatus, Event, EventType, JobAction, Outcome, WorkloadAction,
};
pub use observe::{
    ConditionState, JobOutcome, Observed, ObservedJob, ObservedWorkload, Rollout, SpecView,
    StatusView, WorkloadId,
};
pub use profile::{ExitReason, JobTemplate, Phase, Pin, Profile, Step, UpgradeCheck};
pub use shared::check_exit_code;

/// Decides one reconcile pass.
pub fn decide(profile: &Profile, observed: &Observed) -> Decision {
    if observed.status.phase.is_empty() {
        steady::decide(profile, observed)
    } else {
        upgrade::decide(profile, observed)
    }
}
