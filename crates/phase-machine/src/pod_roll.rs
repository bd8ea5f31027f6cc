//! The roll of a workload drained pod by pod (`HostDrain::per_pod`: a
//! StatefulSet whose pods are hosts of their own, e.g. Cinder's backup
//! services). Its pods move from the highest ordinal down, as a StatefulSet
//! rolls: each is drained, released (the partition lowered to it), restarted,
//! ready, and given back before the next is drained, so no two are out at
//! once. Decided from the Jobs and the StatefulSet's counters alone.

use crate::drain::{self, Before, Host};
use crate::observe::{HostDrain, Observed, ObservedWorkload, WorkloadId};
use crate::shared::{Roll, WorkloadParams};

impl WorkloadParams {
    /// Whether the workload's pods have a roll to go through: a template to
    /// take, pods not released yet, or pods not on its template.
    pub(crate) fn pods_to_roll(
        &self,
        obs: &Observed,
        workload: &WorkloadId,
        live: &ObservedWorkload,
    ) -> bool {
        !self.current(obs, workload, live)
            || live.partition > 0
            || live.rollout.updated < live.rollout.desired
    }

    /// One pass of the roll: the Jobs and the partition it asks for. The
    /// template is applied at once, every pod held; the StatefulSet's
    /// counters are trusted only once its status describes that template.
    pub(crate) fn drain_pods(
        &self,
        obs: &Observed,
        workload: &WorkloadId,
        drain: &HostDrain,
        live: &ObservedWorkload,
        roll: &mut Roll,
    ) {
        let current = self.current(obs, workload, live);
        let replicas = workload.replicas.fixed().unwrap_or(live.rollout.desired);
        if current && live.rollout.observed_generation < live.rollout.generation {
            roll.workloads
                .push(self.action(workload, false, Some(live.partition)));
            return;
        }
        let updated = if current { live.rollout.updated } else { 0 };
        let mut partition = replicas;
        for ordinal in (0..replicas).rev() {
            let host = Host::pod(&workload.name, ordinal);
            if updated < replicas - ordinal {
                // A pod another roll drained (an edit or an abort came
                // between) is given back before this one goes out.
                let others: Vec<_> = self
                    .pending_returns(obs, workload)
                    .into_iter()
                    .filter(|(other, _)| *other != host)
                    .collect();
                if !others.is_empty() {
                    for (other, after) in others {
                        roll.returning(other, after);
                    }
                    break;
                }
                match drain::before_restart(obs, host, drain, &self.image, &self.roll_key()) {
                    Before::Draining { job, waits_for } => roll.draining(host, job, waits_for),
                    Before::Drained { job, event } => {
                        roll.jobs.push(job);
                        // Told in the pass that releases the pod.
                        if !current || live.partition > ordinal {
                            roll.events.push(event);
                        }
                        partition = ordinal;
                    }
                }
                break;
            }
            partition = ordinal;
            if live.rollout.ready < replicas {
                // Its restart is not over.
                break;
            }
            if let Some(after) = drain::after_restart(obs, host, drain, &self.image) {
                roll.returning(host, after);
                break;
            }
        }
        roll.workloads
            .push(self.action(workload, false, Some(partition)));
    }
}
