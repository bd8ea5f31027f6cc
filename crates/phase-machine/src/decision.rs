//! What the controller is to do: the output of [`crate::decide`].

use crate::observe::ConditionState;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

/// An event to publish on the resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventType,
    pub reason: String,
    pub message: String,
}

/// A Job to have or not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobAction {
    /// Make sure Job `<resource>-<suffix>` exists with this pod spec; replace an
    /// existing one with another spec hash (Jobs are immutable).
    Ensure {
        suffix: String,
        /// The Job group it runs for (its Secrets), if its template runs per group.
        group: Option<String>,
        image: String,
        command: Vec<String>,
        spec_hash: String,
        backoff_limit: i32,
        /// Exit codes that fail the Job at once (a pod failure policy).
        fail_fast_exit_codes: Vec<i32>,
    },
    /// Delete the Job and, by background propagation, its pods.
    Delete { suffix: String },
}

/// A workload to apply with these parameters or delete. Workloads with no action
/// are left exactly as they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkloadAction {
    Apply {
        name: String,
        image: String,
        installed_release: String,
        /// RPC/object version pin for its pods (`None`: unpinned).
        pin: Option<String>,
        /// Scaled to no pod for a phase's offline step.
        stopped: bool,
        /// A StatefulSet's pods below this ordinal keep their template (a
        /// per-pod drain releases them one at a time); none: all roll.
        partition: Option<i32>,
    },
    Delete {
        name: String,
    },
}

/// Why the controller should look again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Converged; a change of the resource or its children wakes the controller.
    Settled,
    /// Waiting on a child; its change wakes the controller.
    Waiting,
    /// A failure that needs a retry with backoff (the reason is in the conditions).
    Failed { reason: String, message: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredStatus {
    pub installed_release: String,
    pub target_release: String,
    /// Phase name, empty in steady state.
    pub phase: String,
    /// When that phase began (RFC 3339); empty in steady state.
    pub phase_started_at: String,
    /// The workload an upgrade roll is waiting on, empty otherwise.
    pub rolling_workload: String,
    pub conditions: Vec<ConditionState>,
    pub observed_generation: i64,
}

/// An upgrade-check result to report exactly once for its Job: record the UID,
/// then publish the event; if recording fails, publish
/// `UpgradeCheckEventEmissionDeferred` instead and report on a later pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    pub job_uid: String,
    pub event: Event,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub status: DesiredStatus,
    pub events: Vec<Event>,
    pub jobs: Vec<JobAction>,
    pub workloads: Vec<WorkloadAction>,
    pub check_report: Option<CheckReport>,
    pub outcome: Outcome,
}
