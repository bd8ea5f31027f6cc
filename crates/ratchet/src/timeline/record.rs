//! What `collect` read from the cluster about one resource, as plain data:
//! the input of the pure [`super::build`].

use k8s_openapi::jiff::Timestamp;

/// One resource's status, events and owned objects at the moment they were read.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// `Cinder ns/name`: who the timeline is about.
    pub subject: String,
    pub installed_release: String,
    pub target_release: String,
    /// `status.upgradePhase` (empty in steady state).
    pub upgrade_phase: String,
    /// When the record was read: the end of anything still running.
    pub read_at: Timestamp,
    /// The resource's events, oldest first.
    pub events: Vec<EventRecord>,
    pub jobs: Vec<JobRecord>,
    pub workloads: Vec<WorkloadRecord>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EventRecord {
    /// When it first happened.
    pub at: Timestamp,
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct JobRecord {
    pub name: String,
    pub created: Timestamp,
    pub started: Option<Timestamp>,
    /// `completionTime`, or when the Job controller declared it failed.
    pub finished: Option<Timestamp>,
    pub verdict: JobVerdict,
    /// Pods the Job controller counted: `succeeded + failed + active`.
    pub counted_attempts: i32,
    /// The Job's pods still present, oldest first.
    pub attempts: Vec<AttemptRecord>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobVerdict {
    Running,
    Succeeded,
    /// The Failed condition's reason (e.g. `BackoffLimitExceeded`).
    Failed(String),
}

/// One pod of a Job: how its container ended, if it has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptRecord {
    pub exit_code: Option<i32>,
    pub message: Option<String>,
}

/// A Deployment or StatefulSet and the pods of its current revision.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadRecord {
    pub kind: String,
    pub name: String,
    pub pods: Vec<PodRecord>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PodRecord {
    pub created: Timestamp,
    /// When its Ready condition last turned True; `None` while not ready.
    pub ready_at: Option<Timestamp>,
}
