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

/// A Deployment or StatefulSet and the revisions its controller still keeps.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadRecord {
    pub kind: String,
    pub name: String,
    /// `spec.replicas`: how many ready pods a finished roll leaves.
    pub replicas: i32,
    /// Its ReplicaSets or ControllerRevisions, in any order: each revision
    /// its template has had, up to the controller's `revisionHistoryLimit`.
    pub revisions: Vec<RevisionRecord>,
}

/// One revision of a workload's pod template: a Deployment's ReplicaSet or a
/// StatefulSet's ControllerRevision.
#[derive(Clone, Debug, PartialEq)]
pub struct RevisionRecord {
    /// The controller's number for it (`deployment.kubernetes.io/revision`,
    /// `ControllerRevision.revision`): the newest is the highest.
    pub number: i64,
    /// When the object was made: when the roll to it began, unless a roll back
    /// reused it (its number then moves up, its creation does not).
    pub created: Timestamp,
    /// A ControllerRevision's `resourceVersion`, which its controller does
    /// not rewrite but to renumber it: orders revisions made within one
    /// second (resource versions of one resource compare as integers since
    /// Kubernetes 1.35, KEP-5504). `None` for a ReplicaSet, rewritten with
    /// every status change.
    pub sequence: Option<u64>,
    /// Its pods still present.
    pub pods: Vec<PodRecord>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PodRecord {
    pub created: Timestamp,
    /// When its Ready condition last turned True; `None` while not ready.
    pub ready_at: Option<Timestamp>,
}
