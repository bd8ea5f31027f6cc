//! The phase machine every OpenStack service shares. Pure: from what the
//! controller observed ([`Observed`]) it decides what to do ([`Decision`]) —
//! status, events, Jobs, workloads, and whether to retry. A service plugs in
//! through a [`Profile`]; the machine is never copied per service.

pub mod conditions;
pub mod decision;
pub mod hash;
pub mod observe;
pub mod profile;
mod steady;
pub mod vocabulary;

pub use decision::{Decision, DesiredStatus, Event, EventType, JobAction, Outcome, WorkloadAction};
pub use observe::{
    ConditionState, JobOutcome, Observed, ObservedJob, ObservedWorkload, Rollout, SpecView,
    StatusView, WorkloadId,
};
pub use profile::{JobTemplate, Profile};

/// Decides one reconcile pass.
pub fn decide(profile: &Profile, observed: &Observed) -> Decision {
    steady::decide(profile, observed)
}
