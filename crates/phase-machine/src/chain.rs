//! A chain of Jobs run one after another (a phase's, or the steady-state
//! sync's): which one it waits on, which failed, and the Jobs to have.

use crate::decision::JobAction;
use crate::observe::{JobOutcome, Observed, ObservedJob};
use crate::profile::JobRun;

/// Where a chain stands.
#[derive(Debug)]
pub enum Chain<'a> {
    /// Every Job succeeded.
    Done,
    /// This Job runs, or is about to be created.
    Waiting(JobRun<'a>),
    /// This Job failed for good.
    Failed {
        run: JobRun<'a>,
        job: &'a ObservedJob,
        /// The Job controller's message.
        message: &'a str,
    },
}

/// A look at a chain: where it stands, and the Jobs to have (every one up to
/// the first that has not succeeded; later ones are not created yet).
#[derive(Debug)]
pub struct Look<'a> {
    pub state: Chain<'a>,
    pub ensures: Vec<JobAction>,
    /// The Job waited on still runs an earlier spec: it is left to finish,
    /// and its successor is created once it has ended.
    pub finishing_earlier_spec: bool,
}

/// Looks at `runs` on `image` with `config_hash`: a Job counts only when its
/// pod-spec hash is what that run would create now. A Job of an earlier spec
/// that still runs is never replaced: killing a schema migration half-way
/// leaves its DDL to race its successor's (MySQL's DDL is not transactional).
pub fn look<'a>(
    runs: &[JobRun<'a>],
    obs: &'a Observed,
    image: &str,
    config_hash: &str,
) -> Look<'a> {
    let mut ensures = Vec::new();
    for run in runs {
        let hash = run.spec_hash(image, config_hash);
        let live = obs.jobs.get(&run.key());
        if live.is_some_and(|j| j.spec_hash != hash && j.outcome == JobOutcome::Running) {
            return Look {
                state: Chain::Waiting(*run),
                ensures,
                finishing_earlier_spec: true,
            };
        }
        let current = live.filter(|j| j.spec_hash == hash);
        ensures.push(run.ensure(image, hash));
        match current.map(|job| (job, &job.outcome)) {
            Some((_, JobOutcome::Succeeded)) => {}
            Some((job, JobOutcome::Failed { message })) => {
                return Look {
                    state: Chain::Failed {
                        run: *run,
                        job,
                        message,
                    },
                    ensures,
                    finishing_earlier_spec: false,
                };
            }
            Some((_, JobOutcome::Running)) | None => {
                return Look {
                    state: Chain::Waiting(*run),
                    ensures,
                    finishing_earlier_spec: false,
                };
            }
        }
    }
    Look {
        state: Chain::Done,
        ensures,
        finishing_earlier_spec: false,
    }
}

/// Whether every run's Job succeeded on `image` with `config_hash`.
pub fn succeeded(runs: &[JobRun], obs: &Observed, image: &str, config_hash: &str) -> bool {
    matches!(look(runs, obs, image, config_hash).state, Chain::Done)
}

/// `<service>-<key>` of each run, for messages.
pub fn names(service: &str, runs: &[JobRun]) -> String {
    runs.iter()
        .map(|r| format!("{service}-{}", r.key()))
        .collect::<Vec<_>>()
        .join(", ")
}
