//! Properties of the machine over random sequences of observations and spec
//! edits, for both the Cinder-shaped and the Ironic-shaped profile.

mod support;

use proptest::prelude::*;
use ratchet_phase_machine::*;
use ratchet_release::Release;
use ratchet_services::{Registry, Services};
use support::{Script, World};

#[derive(Clone, Debug)]
enum Action {
    Step,
    /// Move release and tag together: 0 installed, 1 next, 2 skip, 3 previous, 4 garbage.
    SetRelease(u8),
    /// Move only the release (tag stays).
    SetReleaseOnly(u8),
    Script(u8, u8),
    DeleteJob(u8),
    Hang(u8),
    Unhang,
    PatchTag,
    /// Edit the rendered configuration (every workload's template changes).
    EditConfig,
    /// A new service password in the Secret (with `spec.identity`).
    RotatePassword,
    /// Allow or forbid an outage for an offline step.
    ToggleOutage,
    /// How many workloads of one role may roll at once (1 to 6).
    SetMaxParallel(u8),
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => Just(Action::Step),
        2 => (0u8..5).prop_map(Action::SetRelease),
        1 => (0u8..5).prop_map(Action::SetReleaseOnly),
        1 => (0u8..12, 0u8..5).prop_map(|(j, s)| Action::Script(j, s)),
        1 => (0u8..12).prop_map(Action::DeleteJob),
        1 => (0u8..4).prop_map(Action::Hang),
        1 => Just(Action::Unhang),
        1 => Just(Action::PatchTag),
        1 => Just(Action::EditConfig),
        1 => Just(Action::RotatePassword),
        1 => Just(Action::ToggleOutage),
        1 => (1u8..7).prop_map(Action::SetMaxParallel),
    ]
}

fn release_choice(w: &World, choice: u8) -> String {
    let installed = Release::parse(&w.obs.status.installed_release)
        .or_else(|_| Release::parse(&w.obs.spec.release))
        .unwrap_or_else(|_| Release::new(2026, 1).expect("valid"));
    let pick = match choice {
        0 => Some(installed),
        1 => installed.next(),
        2 => installed.next().and_then(Release::next),
        3 => installed.previous(),
        _ => None,
    };
    pick.map(|r| r.to_string())
        .unwrap_or_else(|| "20x6.1".into())
}

fn job_keys(w: &World) -> Vec<String> {
    let groups = &w.obs.job_groups;
    let mut all: Vec<String> = job_runs(&w.profile.db_sync, groups)
        .iter()
        .chain(&w.profile.phase_job_runs(groups))
        .map(JobRun::key)
        .collect();
    if w.obs.registration.is_some() {
        all.push(registration::SUFFIX.to_string());
    }
    all.extend(w.profile.offline_job_runs().map(|run| run.key()));
    for workload in &w.obs.desired_workloads {
        let Some(d) = &workload.drain else { continue };
        let replicas = workload.replicas.fixed().unwrap_or(1);
        for host in drain::hosts(&workload.name, d, replicas) {
            all.push(host.drain_key());
            all.push(host.undrain_key());
        }
    }
    all
}

/// A workload whose host is drained restarts only once this roll's drain Job
/// ended: the pass that restarts it names that Job, as it was observed.
fn check_drains(before: &Observed, d: &Decision) -> Result<(), TestCaseError> {
    for workload in before
        .desired_workloads
        .iter()
        .filter(|x| x.drain.as_ref().is_some_and(|d| !d.per_pod))
    {
        if !restarts(before, d, workload) {
            continue;
        }
        let key = drain::Host::workload(&workload.name).drain_key();
        let drained = d.jobs.iter().any(|action| match action {
            JobAction::Ensure {
                suffix, spec_hash, ..
            } if *suffix == key => before
                .jobs
                .get(&key)
                .is_some_and(|j| j.spec_hash == *spec_hash && j.outcome != JobOutcome::Running),
            _ => false,
        });
        prop_assert!(
            drained,
            "{} restarted before its drain ended: jobs {:?}, decided {:?}",
            workload.name,
            before.jobs.get(&key),
            d.jobs
        );
    }
    Ok(())
}

/// A workload drained pod by pod releases at most one pod not yet on its
/// template at a time, and only once that pod's drain Job for this roll ended
/// (the pass that releases it names that Job, as it was observed).
fn check_pod_drains(before: &Observed, d: &Decision) -> Result<(), TestCaseError> {
    for workload in before
        .desired_workloads
        .iter()
        .filter(|x| x.drain.as_ref().is_some_and(|d| d.per_pod))
    {
        let Some(live) = before.workloads.get(&workload.name) else {
            continue;
        };
        let replicas = workload.replicas.fixed().unwrap_or(1);
        let Some(host_drain) = &workload.drain else {
            continue;
        };
        // A pod's drain starts only while every other drained pod is back.
        let hosts = drain::hosts(&workload.name, host_drain, replicas);
        let starting = hosts.iter().find(|h| {
            let key = h.drain_key();
            d.jobs.iter().any(|a| {
                matches!(a, JobAction::Ensure { suffix, spec_hash, .. }
                    if *suffix == key && before.jobs.get(&key).is_none_or(|j| j.spec_hash != *spec_hash))
            })
        });
        if let Some(starting) = starting {
            let out: Vec<String> = hosts
                .iter()
                .filter(|h| h != &starting)
                .filter(|h| {
                    before
                        .jobs
                        .get(&h.drain_key())
                        .is_some_and(|j| j.outcome == JobOutcome::Succeeded)
                        && drain::after_restart(before, **h, host_drain, "").is_some()
                })
                .map(drain::Host::name)
                .collect();
            prop_assert!(
                out.is_empty(),
                "{} drained while {out:?} still out",
                starting.name()
            );
        }
        for action in &d.workloads {
            let WorkloadAction::Apply {
                name,
                stopped: false,
                partition,
                ..
            } = action
            else {
                continue;
            };
            if *name != workload.name {
                continue;
            }
            let template_changes = restarts(before, d, workload);
            let (held, updated) = if template_changes {
                (replicas, 0)
            } else {
                (live.partition, live.rollout.updated)
            };
            let released: Vec<i32> = (partition.unwrap_or(0)..held)
                .filter(|k| *k < replicas - updated)
                .collect();
            prop_assert!(
                released.len() <= 1,
                "{} released {released:?} at once",
                workload.name
            );
            for k in released {
                let key = drain::Host::pod(&workload.name, k).drain_key();
                let drained = d.jobs.iter().any(|a| match a {
                    JobAction::Ensure {
                        suffix, spec_hash, ..
                    } if *suffix == key => before.jobs.get(&key).is_some_and(|j| {
                        j.spec_hash == *spec_hash && j.outcome != JobOutcome::Running
                    }),
                    _ => false,
                });
                prop_assert!(
                    drained,
                    "pod {k} of {} released before its drain ended: {:?}, decided {:?}",
                    workload.name,
                    before.jobs.get(&key),
                    d.jobs
                );
            }
        }
    }
    Ok(())
}

const OFFLINE_EXIT: i32 = 3;

/// `profile` with an offline step on its last Job phase: exit 3 of its Jobs
/// asks for it; it stops the workload `first` and runs Job `offline`.
fn with_offline(mut profile: Profile) -> Profile {
    let last = profile
        .phases
        .iter()
        .rposition(|p| !p.templates().is_empty());
    if let Some(i) = last {
        profile.phases[i] = profile.phases[i].clone().with_offline(Offline {
            exit_code: OFFLINE_EXIT,
            stops: vec!["first"],
            template: JobTemplate {
                suffix: "offline",
                command: vec!["contract".into(), "--offline".into()],
                ..JobTemplate::default()
            },
        });
    }
    profile
}

/// Whether `obs` shows the Jobs of `phase` asking for its offline step.
fn offline_asked(obs: &Observed, phase: &Phase) -> bool {
    let Some(offline) = phase.offline() else {
        return false;
    };
    job_runs(phase.templates(), &obs.job_groups)
        .iter()
        .any(|run| {
            obs.jobs.get(&run.key()).is_some_and(|j| {
                matches!(j.outcome, JobOutcome::Failed { .. })
                    && j.exit_code == Some(offline.exit_code)
            })
        })
}

/// The offline step's rules: a workload is stopped only by an offline step
/// its phase's Jobs asked for, with the outage allowed, and only those it
/// names; its Job runs only once they have no pod left; the phase ends only
/// once they are back.
fn check_offline(profile: &Profile, before: &Observed, d: &Decision) -> Result<(), TestCaseError> {
    let phase = profile.phase(&before.status.phase).map(|(_, p)| p);
    for action in &d.workloads {
        if let WorkloadAction::Apply {
            name,
            stopped: true,
            ..
        } = action
        {
            let asked = phase.is_some_and(|p| offline_asked(before, p));
            let named = phase.and_then(Phase::offline).is_some_and(|o| {
                before
                    .desired_workloads
                    .iter()
                    .any(|w| &w.name == name && o.stops.contains(&w.component.as_str()))
            });
            prop_assert!(
                asked && named && before.spec.allows_outage,
                "{name} stopped in {:?} (asked {asked}, named {named}, allowed {})",
                before.status.phase,
                before.spec.allows_outage
            );
        }
    }
    let Some(offline) = phase.and_then(Phase::offline) else {
        return Ok(());
    };
    let stops: Vec<&WorkloadId> = before
        .desired_workloads
        .iter()
        .filter(|w| offline.stops.contains(&w.component.as_str()))
        .collect();
    let gone = stops.iter().all(|w| {
        before
            .workloads
            .get(&w.name)
            .is_none_or(|l| l.rollout.desired == 0 && l.rollout.total == 0)
    });
    let runs_offline_job = d.jobs.iter().any(
        |a| matches!(a, JobAction::Ensure { suffix, .. } if suffix == offline.template.suffix),
    );
    let already = before.jobs.contains_key(offline.template.suffix);
    prop_assert!(
        !runs_offline_job || gone || already,
        "the offline Job started while a stopped workload still had pods"
    );
    let moved_on = d.status.phase != before.status.phase;
    let aborted = d.events.iter().any(|e| e.reason == "UpgradeAborted");
    if moved_on && !aborted && offline_asked(before, phase.expect("offline phase")) {
        let back = stops.iter().all(|w| {
            before
                .workloads
                .get(&w.name)
                .is_some_and(|l| l.rollout.desired > 0 && l.rollout.complete())
        });
        prop_assert!(
            back,
            "left the offline phase before its workloads were back"
        );
    }
    Ok(())
}

/// Whether `phase` has an offline step whose Job succeeded in `obs`.
fn offline_succeeded(obs: &Observed, phase: &Phase) -> bool {
    phase
        .offline()
        .is_some_and(|o| all_succeeded(obs, &[o.run()]))
}

/// Whether every Job of `runs` succeeded in `obs`.
fn all_succeeded(obs: &Observed, runs: &[JobRun]) -> bool {
    runs.iter().all(|run| {
        obs.jobs
            .get(&run.key())
            .is_some_and(|j| j.outcome == JobOutcome::Succeeded)
    })
}

fn phase_index(profile: &Profile, name: &str) -> Option<usize> {
    profile.phase(name).map(|(i, _)| i)
}

/// Checks the invariants for one decision taken on `before`.
fn check(profile: &Profile, before: &Observed, d: &Decision) -> Result<(), TestCaseError> {
    let was = &before.status;
    let now = &d.status;
    // Steady state rolls nothing before the registration in Keystone holds.
    if was.phase.is_empty() && now.phase.is_empty() && !registration::registered(before) {
        prop_assert!(
            !d.workloads
                .iter()
                .any(|w| matches!(w, WorkloadAction::Apply { .. })),
            "a workload rolled before the registration: {:?}",
            d.workloads
        );
    }
    let groups = &before.job_groups;
    let phase_runs = profile.phase_job_runs(groups);
    let phase_keys: Vec<String> = phase_runs.iter().map(JobRun::key).collect();
    let sync_runs = job_runs(&profile.db_sync, groups);

    // A chain's Job is created only after every Job before it succeeded.
    let chains = std::iter::once(sync_runs.clone()).chain(
        profile
            .phases
            .iter()
            .map(|p| job_runs(p.templates(), groups)),
    );
    for chain in chains {
        for (i, run) in chain.iter().enumerate() {
            let ensured = d
                .jobs
                .iter()
                .any(|a| matches!(a, JobAction::Ensure { suffix, .. } if *suffix == run.key()));
            prop_assert!(
                !ensured || all_succeeded(before, &chain[..i]),
                "{} created before the Jobs ahead of it succeeded",
                run.key()
            );
        }
    }

    // A schema Job that still runs is never replaced, whatever changed under it.
    for action in &d.jobs {
        if let JobAction::Ensure {
            suffix, spec_hash, ..
        } = action
        {
            let running = before.jobs.get(suffix).filter(|j| {
                j.outcome == JobOutcome::Running
                    && (phase_keys.contains(suffix) || sync_runs.iter().any(|r| r.key() == *suffix))
            });
            prop_assert!(
                running.is_none_or(|j| &j.spec_hash == spec_hash),
                "{suffix} replaced while it ran"
            );
        }
    }

    // installedRelease changes only after a fresh-install db-sync or the last phase's Job succeeded.
    if now.installed_release != was.installed_release {
        let fresh = was.installed_release.is_empty()
            && was.phase.is_empty()
            && all_succeeded(before, &sync_runs)
            && now.installed_release == before.spec.release;
        let last_jobs = profile
            .phases
            .last()
            .map(|p| job_runs(p.templates(), groups))
            .unwrap_or_default();
        // The last phase's Jobs succeeded, or its offline step's did.
        let offline_done = profile
            .phases
            .last()
            .is_some_and(|p| offline_succeeded(before, p));
        let contracted = !was.phase.is_empty()
            && !last_jobs.is_empty()
            && (all_succeeded(before, &last_jobs) || offline_done)
            && now.installed_release == was.target_release;
        prop_assert!(
            fresh || contracted,
            "installed moved {:?} → {:?} without a sync or contract",
            was.installed_release,
            now.installed_release
        );
    }

    // Phases are never skipped or reordered within one upgrade.
    if let (Some(from), Some(to)) = (
        phase_index(profile, &was.phase),
        phase_index(profile, &now.phase),
    ) && was.target_release == now.target_release
    {
        prop_assert!(to >= from, "phase went back {} → {}", was.phase, now.phase);
        for passed in &profile.phases[from..to] {
            prop_assert!(
                all_succeeded(before, &job_runs(passed.templates(), groups))
                    || offline_succeeded(before, passed),
                "left {} without its Jobs succeeding",
                passed.name
            );
        }
    }
    if was.phase.is_empty() && !now.phase.is_empty() {
        prop_assert_eq!(
            phase_index(profile, &now.phase),
            Some(0),
            "an upgrade starts at the first phase"
        );
    }

    // Phase Jobs run the spec image, which names the target release.
    for action in &d.jobs {
        if let JobAction::Ensure { suffix, image, .. } = action
            && phase_keys.contains(suffix)
        {
            let spec_image = format!(
                "{}:{}",
                support::REPO,
                before.spec.image_tag.clone().unwrap_or_default()
            );
            prop_assert_eq!(image, &spec_image);
            prop_assert_eq!(
                &before.spec.release,
                &now.target_release,
                "phase Job outside the target"
            );
        }
    }

    // Pods restart one role at a time, in roll order: a workload's template
    // changes only while every workload of an earlier role is fully rolled
    // out and stays, and fewer than `max_parallel` workloads of its own role
    // before it are rolling or restart with it.
    for (index, workload) in before.desired_workloads.iter().enumerate() {
        if !restarts(before, d, workload) {
            continue;
        }
        // A role of several keeps one in service.
        let role_size = before
            .desired_workloads
            .iter()
            .filter(|w| w.role == workload.role)
            .count();
        let bound = (before.spec.max_parallel as usize)
            .min(role_size.saturating_sub(1))
            .max(1);
        let mut alongside = Vec::new();
        for earlier in &before.desired_workloads[..index] {
            let rolled_out = before
                .workloads
                .get(&earlier.name)
                .is_some_and(|l| l.rollout.complete());
            let settled = rolled_out && !restarts(before, d, earlier);
            if earlier.role != workload.role {
                prop_assert!(
                    settled,
                    "{} restarts while {} of an earlier role is not settled",
                    workload.name,
                    earlier.name
                );
            } else if !settled {
                alongside.push(earlier.name.as_str());
            }
        }
        prop_assert!(
            alongside.len() < bound,
            "{} restarts beside {:?}, more than {} of one role at once",
            workload.name,
            alongside,
            bound
        );
    }

    // A held or aborted upgrade creates no Job.
    let db_reason = now
        .conditions
        .iter()
        .find(|c| c.kind == "DatabaseReady")
        .map(|c| c.reason.as_str());
    let held = matches!(
        db_reason,
        Some("UpgradeTargetChanged" | "ImageReleaseMismatch" | "AbortNotSafe")
    );
    let aborted = d.events.iter().any(|e| e.reason == "UpgradeAborted");
    if held || aborted {
        prop_assert!(
            d.jobs.iter().all(|a| matches!(a, JobAction::Delete { .. })),
            "held/aborted pass created a Job: {:?}",
            d.jobs
        );
    }
    Ok(())
}

/// Whether the decision changes the pod template of a live workload.
fn restarts(before: &Observed, d: &Decision, workload: &WorkloadId) -> bool {
    let Some(live) = before.workloads.get(&workload.name) else {
        return false;
    };
    d.workloads.iter().any(|action| match action {
        // Stopping and starting for an offline step: `check_offline`'s.
        WorkloadAction::Apply { stopped: true, .. } => false,
        WorkloadAction::Apply { name, .. }
            if *name == workload.name && live.rollout.desired == 0 =>
        {
            false
        }
        WorkloadAction::Apply {
            name,
            image,
            installed_release,
            pin,
            ..
        } if *name == workload.name => {
            let annotation = workload
                .carries_installed_release
                .then(|| installed_release.clone());
            live.image != *image
                || live.pin != *pin
                || live.installed_release != annotation
                || live.config_hash.as_deref() != Some(before.config_hash.as_str())
        }
        _ => false,
    })
}

fn run(mut w: World, actions: Vec<Action>) -> Result<(), TestCaseError> {
    let suffixes = job_keys(&w);
    let names: Vec<String> = w
        .obs
        .desired_workloads
        .iter()
        .map(|x| x.name.clone())
        .collect();
    for action in actions {
        match action {
            Action::Step => {
                let before = w.obs.clone();
                let d = w.step();
                check(&w.profile, &before, &d)?;
                check_offline(&w.profile, &before, &d)?;
                check_drains(&before, &d)?;
                check_pod_drains(&before, &d)?;
            }
            Action::SetRelease(c) => {
                let r = release_choice(&w, c);
                w.set_release(&r);
            }
            Action::SetReleaseOnly(c) => {
                w.obs.spec.release = release_choice(&w, c);
                w.obs.spec.generation += 1;
            }
            Action::Script(j, s) => {
                let script = match s {
                    0 => Script::Succeed {
                        message: Some("check exit 1".into()),
                    },
                    1 => Script::Fail { exit_code: 2 },
                    2 => Script::Hang,
                    // "Run me offline", for a profile with an offline step.
                    3 => Script::Fail {
                        exit_code: OFFLINE_EXIT,
                    },
                    _ => Script::Succeed { message: None },
                };
                w.scripts
                    .insert(suffixes[j as usize % suffixes.len()].clone(), script);
            }
            Action::DeleteJob(j) => {
                w.obs.jobs.remove(&suffixes[j as usize % suffixes.len()]);
            }
            Action::Hang(i) => {
                w.hanging.insert(names[i as usize % names.len()].clone());
            }
            Action::Unhang => {
                w.hanging.clear();
                for wl in w.obs.workloads.values_mut() {
                    wl.rollout.total = wl.rollout.desired;
                }
            }
            Action::EditConfig => {
                w.obs.config_hash = format!("{}+", w.obs.config_hash);
            }
            Action::SetMaxParallel(n) => {
                w.obs.spec.max_parallel = u32::from(n);
                w.obs.spec.generation += 1;
            }
            Action::ToggleOutage => {
                w.obs.spec.allows_outage = !w.obs.spec.allows_outage;
                w.obs.spec.generation += 1;
            }
            Action::RotatePassword => {
                if let Some(r) = w.obs.registration.as_mut() {
                    r.inputs.push('+');
                    w.obs.config_hash = format!("{}+", w.obs.config_hash);
                }
            }
            Action::PatchTag => {
                let release = w.obs.spec.release.clone();
                w.obs.spec.image_tag = Some(format!("{release}-p1"));
                w.obs.spec.generation += 1;
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Cinder as the operator models it; then every profile, a new one included.
    #[test]
    fn cinder_profile_invariants(actions in proptest::collection::vec(action(), 1..80)) {
        run(World::install("2026.1"), actions)?;
    }

    /// Back ends of one role rolled side by side, up to the bound.
    #[test]
    fn batched_role_invariants(actions in proptest::collection::vec(action(), 1..80)) {
        run(World::with_back_ends("2026.1", 4), actions)?;
    }

    #[test]
    fn every_profile_s_invariants(actions in proptest::collection::vec(action(), 1..80)) {
        for profile in Services::profiles() {
            let mut w = World::new(profile, "2026.1", "2026.1", &[("first", true), ("last", false)])
                .with_agent("agent");
            // A profile with per-group Jobs (Nova's cells) runs for one group
            // at least: its model always declares cell0.
            w.obs.job_groups = vec!["cell0".into()];
            w.settle();
            run(w, actions.clone())?;
        }
    }

    /// Every profile widened with per-group Jobs (Nova's cells): in the sync,
    /// in any set of phases, for one to three groups.
    #[test]
    fn grouped_profile_invariants(
        actions in proptest::collection::vec(action(), 1..80),
        mask in any::<u8>(),
        groups in 1usize..4,
    ) {
        for profile in Services::profiles() {
            let mut w = World::new(
                World::grouped(profile, mask),
                "2026.1",
                "2026.1",
                &[("first", true), ("last", false)],
            );
            w.obs.job_groups = (0..groups).map(|g| format!("cell{g}")).collect();
            w.settle();
            run(w, actions.clone())?;
        }
    }

    /// Every profile with an offline step on its last Job phase: asked for
    /// or not, allowed or not, its Jobs failing, hanging or deleted.
    #[test]
    fn offline_step_invariants(actions in proptest::collection::vec(action(), 1..80)) {
        for profile in Services::profiles() {
            let mut w = World::new(
                with_offline(profile),
                "2026.1",
                "2026.1",
                &[("first", true), ("last", false)],
            )
            .with_agent("agent");
            w.obs.job_groups = vec!["cell0".into()];
            w.settle();
            // The offline step is asked for unless an action scripts otherwise.
            let asking = w.profile.phases.iter().filter(|p| p.offline().is_some());
            for phase in asking {
                for template in phase.templates() {
                    w.scripts.insert(
                        template.suffix.to_string(),
                        Script::Fail { exit_code: OFFLINE_EXIT },
                    );
                }
            }
            run(w, actions.clone())?;
        }
    }

    #[test]
    fn fresh_install_invariants(actions in proptest::collection::vec(action(), 1..40)) {
        run(World::cinder("2026.2"), actions)?;
    }

    /// With `spec.identity`: the registration Job among the others, failing,
    /// hanging, deleted, its password rotated, through installs and upgrades.
    #[test]
    /// Hosts drained before their restarts: drains and returns succeeding,
    /// failing, hanging or deleted, through upgrades, aborts and config rolls.
    #[test]
    fn drained_host_invariants(actions in proptest::collection::vec(action(), 1..80)) {
        let mut w = World::cinder("2026.1");
        for workload in &mut w.obs.desired_workloads {
            if workload.name == "c-volume-lvm" || workload.name == "c-backup" {
                workload.drain = Some(HostDrain {
                    drain: vec!["drain".into(), workload.name.clone()],
                    undrain: vec!["undrain".into(), workload.name.clone()],
                    waits_for: "its work".into(),
                    per_pod: false,
                });
            }
        }
        w.settle();
        run(w, actions)?;
    }

    /// A StatefulSet of three hosts drained pod by pod beside a drained
    /// back end: drains and returns succeeding, failing, hanging or deleted,
    /// through upgrades, aborts and config rolls.
    #[test]
    fn pod_drain_invariants(actions in proptest::collection::vec(action(), 1..80)) {
        let mut w = World::cinder("2026.1");
        for workload in &mut w.obs.desired_workloads {
            let per_pod = workload.name == "c-backup";
            if per_pod || workload.name == "c-volume-lvm" {
                if per_pod {
                    workload.replicas = Replicas::Fixed(3);
                }
                workload.drain = Some(HostDrain {
                    drain: vec!["drain".into()],
                    undrain: vec!["undrain".into()],
                    waits_for: "its work".into(),
                    per_pod,
                });
            }
        }
        w.settle();
        run(w, actions)?;
    }

    #[test]
    fn registered_service_invariants(actions in proptest::collection::vec(action(), 1..60)) {
        let mut w = World::cinder("2026.1");
        w.obs.registration = Some(ObservedRegistration {
            image: "keystone:2026.1".into(),
            command: Ok(vec!["register".into()]),
            inputs: "v1".into(),
            summary: "user cinder".into(),
        });
        run(w, actions)?;
    }
}
