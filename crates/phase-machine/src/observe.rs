//! What the controller observed: the input of [`crate::decide`].

use std::collections::BTreeMap;

pub use crate::registration::ObservedRegistration;

/// Status of a condition as stored on the resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionState {
    pub kind: String,
    pub status: bool,
    pub reason: String,
    pub message: String,
    /// RFC 3339; kept when the status does not change.
    pub last_transition_time: String,
    pub observed_generation: Option<i64>,
}

/// The resource's spec as far as the machine needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecView {
    pub generation: i64,
    /// `spec.openStackRelease`, raw.
    pub release: String,
    pub image_repository: String,
    pub image_tag: Option<String>,
    pub image_digest: Option<String>,
    /// Where the resource keeps the tag and digest (named in messages).
    pub image_layout: ratchet_release::ImageLayout,
    /// Whether the spec allows stopping workloads for a phase's offline step
    /// (an outage the operator of the cloud opted into).
    pub allows_outage: bool,
    /// How many workloads of one role (`WorkloadId::role`: a Cinder's back
    /// ends, say) may roll at once; roles still roll one after another.
    /// At least 1.
    pub max_parallel: u32,
    /// Why the resource's extra configuration cannot be used (each message
    /// names the field); empty when it can.
    pub invalid_config: Vec<String>,
}

/// The resource's status as last written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusView {
    pub installed_release: String,
    pub target_release: String,
    /// `status.upgradePhase`: a phase name of the profile, or empty.
    pub phase: String,
    /// When the current phase began (RFC 3339), or empty.
    pub phase_started_at: String,
    pub conditions: Vec<ConditionState>,
}

impl StatusView {
    pub fn condition(&self, kind: &str) -> Option<&ConditionState> {
        self.conditions.iter().find(|c| c.kind == kind)
    }
}

/// How a Job ended, or that it has not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    Running,
    Succeeded,
    /// The Job controller gave up (backoff limit reached).
    Failed {
        message: String,
    },
}

/// A Job owned by the resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedJob {
    pub name: String,
    pub uid: String,
    /// The `ratchet.c5c3.io/pod-spec-hash` annotation it was created with.
    pub spec_hash: String,
    pub outcome: JobOutcome,
    /// Exit code of its last finished pod, when the controller read it.
    pub exit_code: Option<i32>,
    /// Termination message of its last finished pod, when the controller read it.
    pub termination_message: Option<String>,
    /// Seconds since the Job controller gave up on it (a failed Job).
    pub failed_seconds_ago: Option<u64>,
}

impl ObservedJob {
    /// What its pod said of its work (its termination message), if anything.
    pub fn said(&self) -> Option<&str> {
        self.termination_message
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
    }
}

/// Rollout counters of a Deployment (or StatefulSet); `desired` is its
/// `spec.replicas`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rollout {
    pub generation: i64,
    pub observed_generation: i64,
    pub desired: i32,
    pub total: i32,
    pub updated: i32,
    pub ready: i32,
    pub available: i32,
}

impl Rollout {
    /// Every replica updated, ready and available, no surplus pods, and the status
    /// describes the current generation. A surged new pod being ready is not enough.
    pub fn complete(&self) -> bool {
        self.observed_generation >= self.generation
            && self.updated == self.desired
            && self.ready == self.desired
            && self.available == self.desired
            && self.total == self.desired
    }
}

/// A long-running workload owned by the resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedWorkload {
    pub name: String,
    /// The image of its service container.
    pub image: String,
    /// Its pod template's installed-release annotation, if any.
    pub installed_release: Option<String>,
    /// The RPC/object version pin its pods run with, if any.
    pub pin: Option<String>,
    /// The configuration hash its pod template carries, if any.
    pub config_hash: Option<String>,
    pub rollout: Rollout,
    /// A StatefulSet's rolling-update partition: its pods of a lower ordinal
    /// keep the previous template (0 otherwise).
    pub partition: i32,
    /// The rollout made no progress within its deadline (the Deployment's
    /// `Progressing` condition says `ProgressDeadlineExceeded`).
    pub stalled: bool,
}

/// A workload the spec asks for, in roll order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadId {
    pub name: String,
    /// What it runs (`api`, `conductor`, …): an offline step names these.
    pub component: String,
    /// Whether its pods carry the installed-release annotation (the second roll).
    pub carries_installed_release: bool,
    /// How many pods it runs.
    pub replicas: Replicas,
    /// How its host is drained before its pods restart, if it is.
    pub drain: Option<HostDrain>,
    /// Workloads of one role (adjacent in roll order) are independent hosts:
    /// `SpecView::max_parallel` of them may roll at once. Its component when
    /// it has no such peers.
    pub role: String,
}

/// How a workload's host is taken out of service before its pods restart
/// and given back after (`crate::drain` runs it in the roll).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostDrain {
    /// Takes the host out of service and waits, within a bound, until no
    /// operation is in flight on it. Its pod's termination message says how
    /// long that took and what was still in flight at the bound.
    pub drain: Vec<String>,
    /// Puts the host back in service (and recovers what is left of its
    /// operations through the service's own mechanism).
    pub undrain: Vec<String>,
    /// What draining waits for, for the status (e.g. "cinder-volume host
    /// c@a disabled, none of its volumes in a transitional state").
    pub waits_for: String,
    /// Whether each pod is a host of its own (a StatefulSet's pods, each
    /// registered under its name): the pods are then released one at a time
    /// through the StatefulSet's partition, each drained before and given
    /// back after its restart, with its name appended to both commands.
    pub per_pod: bool,
}

/// How many pods a workload runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replicas {
    /// As many as its spec asks for.
    Fixed(i32),
    /// One on each node it is placed on (a per-node agent): as many as the
    /// cluster has such nodes, which the spec does not say.
    PerNode,
}

impl Replicas {
    /// The count the spec asks for, if it asks for one.
    pub fn fixed(self) -> Option<i32> {
        match self {
            Replicas::Fixed(count) => Some(count),
            Replicas::PerNode => None,
        }
    }
}

/// Everything [`crate::decide`] looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub spec: SpecView,
    pub status: StatusView,
    /// Hash of the rendered configuration (not the Secrets' values).
    pub config_hash: String,
    /// Secrets or keys the spec references that do not exist.
    pub missing_secrets: Vec<String>,
    /// Children labelled as the resource's that it may not take as its own:
    /// a deleted predecessor's (same name, another UID) until the garbage
    /// collector removed them, orphaned Jobs still running. Nothing advances
    /// while any is there.
    pub children_in_the_way: Vec<String>,
    /// The resource's Jobs by key, the suffix of their names (`db-sync`,
    /// `db-sync-cell1`, ...).
    pub jobs: BTreeMap<String, ObservedJob>,
    /// The Job groups the resource declares, in order (e.g. Nova's cells): a
    /// per-group Job template runs once for each.
    pub job_groups: Vec<String>,
    /// Workloads that exist, by name.
    pub workloads: BTreeMap<String, ObservedWorkload>,
    /// Workloads the spec asks for, in roll order.
    pub desired_workloads: Vec<WorkloadId>,
    /// UID of the last Job whose upgrade-check result was reported (an
    /// annotation on the resource).
    pub reported_check_job: Option<String>,
    /// The registration in Keystone `spec.identity` asks for, if any.
    pub registration: Option<ObservedRegistration>,
    /// The current time (RFC 3339), for condition transitions.
    pub now: String,
}
