//! Advisory conditions set from what reporting Jobs said (Nova's stale
//! service rows): judged once every run of the Job has reported (its pods are
//! read while its phase runs), carried from the status otherwise, so what an
//! upgrade found stays visible after it.

use crate::conditions::Verdict;
use crate::observe::Observed;
use crate::profile::{Advice, JobRun, Profile};

/// Each advisory condition the profile's reporting Jobs set.
pub fn verdicts(profile: &Profile, obs: &Observed) -> Vec<(&'static str, Verdict)> {
    let runs = profile.phase_job_runs(&obs.job_groups);
    let mut advices: Vec<Advice> = runs.iter().filter_map(|r| r.template.advice).collect();
    advices.dedup();
    advices
        .into_iter()
        .filter_map(|advice| {
            let verdict = judged(advice, &runs, obs).or_else(|| carried(advice, obs))?;
            Some((advice.condition, verdict))
        })
        .collect()
}

/// The verdict of every run of `advice`'s Job, once each has said its piece.
fn judged(advice: Advice, runs: &[JobRun], obs: &Observed) -> Option<Verdict> {
    let mut found = Vec::new();
    for run in runs.iter().filter(|r| r.template.advice == Some(advice)) {
        let said = obs.jobs.get(&run.key())?.said()?;
        if said != advice.all_clear {
            found.push(format!("{}: {said}", run.key()));
        }
    }
    Some(if found.is_empty() {
        Verdict::yes(advice.clear_reason, advice.all_clear)
    } else {
        Verdict::no(advice.found_reason, found.join("; ")).warn()
    })
}

/// The condition as the status holds it, if it is one of `advice`'s.
fn carried(advice: Advice, obs: &Observed) -> Option<Verdict> {
    let held = obs.status.condition(advice.condition)?;
    if held.reason == advice.found_reason {
        Some(Verdict::no(advice.found_reason, held.message.clone()).warn())
    } else if held.reason == advice.clear_reason {
        Some(Verdict::yes(advice.clear_reason, held.message.clone()))
    } else {
        None
    }
}
