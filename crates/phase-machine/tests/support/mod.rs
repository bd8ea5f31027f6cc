//! A tiny world for the pure machine: it applies decisions the way the
//! controller and the cluster would (Jobs finish with scripted outcomes,
//! applied workloads roll out at once unless told to hang) so tests can drive
//! whole upgrades without I/O.

#![allow(dead_code)] // each test binary uses a different part

use std::collections::{BTreeMap, BTreeSet};

use ratchet_phase_machine::*;

pub const REPO: &str = "cinder";

/// The real Cinder profile.
pub fn cinder_profile() -> Profile {
    ratchet_services::cinder::profile::profile()
}

/// The real Ironic profile.
pub fn ironic_profile() -> Profile {
    ratchet_services::ironic::profile::profile()
}

/// The condition `kind` of a decision's status.
pub fn condition_of<'a>(d: &'a Decision, kind: &str) -> &'a ConditionState {
    d.status
        .conditions
        .iter()
        .find(|c| c.kind == kind)
        .expect("condition present")
}

/// How a Job the world creates ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Script {
    Succeed { message: Option<String> },
    Fail { exit_code: i32 },
    Hang,
}

pub struct World {
    pub profile: Profile,
    pub obs: Observed,
    /// Outcome of Jobs created from now on, by suffix (default: succeed).
    pub scripts: BTreeMap<String, Script>,
    /// Workloads whose new pods never become ready.
    pub hanging: BTreeSet<String>,
    /// Every decision taken, in order.
    pub history: Vec<Decision>,
    next_uid: u64,
}

impl World {
    pub fn new(profile: Profile, release: &str, tag: &str, workloads: &[(&str, bool)]) -> World {
        World {
            profile,
            obs: Observed {
                spec: SpecView {
                    generation: 1,
                    release: release.into(),
                    image_repository: REPO.into(),
                    image_tag: Some(tag.into()),
                    image_digest: None,
                    image_layout: ratchet_release::ImageLayout::Flat,
                    allows_outage: false,
                    max_parallel: 1,
                    invalid_config: vec![],
                },
                status: StatusView::default(),
                config_hash: "config".into(),
                missing_secrets: vec![],
                children_in_the_way: vec![],
                jobs: BTreeMap::new(),
                job_groups: vec![],
                workloads: BTreeMap::new(),
                desired_workloads: workloads
                    .iter()
                    .map(|(name, carries)| WorkloadId {
                        name: name.to_string(),
                        component: name.to_string(),
                        carries_installed_release: *carries,
                        replicas: Replicas::Fixed(1),
                        drain: None,
                        role: name.to_string(),
                    })
                    .collect(),
                reported_check_job: None,
                registration: None,
                now: "2026-11-30T00:00:00Z".into(),
            },
            scripts: BTreeMap::new(),
            hanging: BTreeSet::new(),
            history: Vec::new(),
            next_uid: 0,
        }
    }

    pub fn cinder(release: &str) -> World {
        World::new(
            cinder_profile(),
            release,
            release,
            &[
                ("c-scheduler", true),
                ("c-volume-lvm", true),
                ("c-backup", true),
                ("c", false),
            ],
        )
    }

    /// `profile` widened the way a service with Job groups (Nova's cells)
    /// is: a per-group Job after the steady-state sync and after the Jobs of
    /// each phase whose bit is set in `mask`.
    pub fn grouped(mut profile: Profile, mask: u8) -> Profile {
        let per_group = |suffix: &'static str| JobTemplate {
            suffix,
            command: vec!["sync".into(), suffix.into()],
            per_group: true,
            ..JobTemplate::default()
        };
        profile.db_sync.push(per_group("cell-sync"));
        const SUFFIXES: [&str; 8] = ["g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"];
        profile.phases = profile
            .phases
            .into_iter()
            .enumerate()
            .map(|(i, phase)| {
                if mask & (1 << i) == 0 {
                    phase
                } else {
                    phase.then(per_group(SUFFIXES[i % SUFFIXES.len()]))
                }
            })
            .collect();
        profile
    }

    /// Sets release and tag together, as an upgrade or abort patch does.
    pub fn set_release(&mut self, release: &str) {
        self.obs.spec.release = release.into();
        self.obs.spec.image_tag = Some(release.into());
        self.obs.spec.image_digest = None;
        self.obs.spec.generation += 1;
    }

    /// Decides once and applies the decision to the world.
    pub fn step(&mut self) -> Decision {
        let d = decide(&self.profile, &self.obs);
        for action in &d.jobs {
            match action {
                JobAction::Ensure {
                    suffix, spec_hash, ..
                } => {
                    let exists = self
                        .obs
                        .jobs
                        .get(suffix)
                        .is_some_and(|j| &j.spec_hash == spec_hash);
                    if !exists {
                        self.next_uid += 1;
                        let (outcome, exit_code, message) = match self
                            .scripts
                            .get(suffix)
                            .cloned()
                            .unwrap_or(Script::Succeed { message: None })
                        {
                            Script::Succeed { message } => {
                                (JobOutcome::Succeeded, Some(0), message)
                            }
                            Script::Fail { exit_code } => (
                                JobOutcome::Failed {
                                    message: "BackoffLimitExceeded".into(),
                                },
                                Some(exit_code),
                                None,
                            ),
                            Script::Hang => (JobOutcome::Running, None, None),
                        };
                        self.obs.jobs.insert(
                            suffix.clone(),
                            ObservedJob {
                                name: format!("c-{suffix}"),
                                uid: format!("uid-{}", self.next_uid),
                                spec_hash: spec_hash.clone(),
                                outcome,
                                exit_code,
                                termination_message: message,
                                failed_seconds_ago: None,
                            },
                        );
                    }
                }
                JobAction::Delete { suffix } => {
                    self.obs.jobs.remove(suffix);
                }
            }
        }
        for action in &d.workloads {
            match action {
                WorkloadAction::Apply {
                    name,
                    image,
                    installed_release,
                    pin,
                    stopped,
                    partition,
                } => {
                    let id = self.obs.desired_workloads.iter().find(|w| &w.name == name);
                    // Pods of a multi-replica StatefulSet drained pod by pod;
                    // everything else runs one pod, as before.
                    let replicas = id
                        .filter(|w| w.drain.as_ref().is_some_and(|d| d.per_pod))
                        .and_then(|w| w.replicas.fixed())
                        .unwrap_or(1);
                    let partition = partition.unwrap_or(0).clamp(0, replicas);
                    let carries = self
                        .obs
                        .desired_workloads
                        .iter()
                        .find(|w| &w.name == name)
                        .is_some_and(|w| w.carries_installed_release);
                    let annotation = carries.then(|| installed_release.clone());
                    let previous = self.obs.workloads.get(name).cloned();
                    let config_hash = Some(self.obs.config_hash.clone());
                    let desired = if *stopped { 0 } else { replicas };
                    let template_changed = previous.as_ref().is_none_or(|p| {
                        &p.image != image
                            || p.pin != *pin
                            || p.installed_release != annotation
                            || p.config_hash != config_hash
                    });
                    let changed = template_changed
                        || previous.as_ref().is_some_and(|p| {
                            p.rollout.desired != desired || p.partition != partition
                        });
                    let generation = previous.as_ref().map(|p| p.rollout.generation).unwrap_or(0)
                        + i64::from(changed);
                    let hang = self.hanging.contains(name) && changed;
                    let rollout = if !changed {
                        previous.as_ref().map(|p| p.rollout).unwrap_or_default()
                    } else if *stopped {
                        // A hanging workload's pods linger on.
                        Rollout {
                            generation,
                            observed_generation: generation,
                            total: i32::from(hang),
                            ..Rollout::default()
                        }
                    } else if hang {
                        Rollout {
                            generation,
                            observed_generation: generation,
                            desired: 1,
                            total: 2,
                            updated: 1,
                            ready: 1,
                            available: 1,
                        }
                    } else {
                        // Pods from the partition up take the template at once.
                        let released = replicas - partition;
                        let updated = match &previous {
                            Some(p) if !template_changed => p.rollout.updated.max(released),
                            _ => released,
                        };
                        Rollout {
                            generation,
                            observed_generation: generation,
                            desired: replicas,
                            total: replicas,
                            updated,
                            ready: replicas,
                            available: replicas,
                        }
                    };
                    self.obs.workloads.insert(
                        name.clone(),
                        ObservedWorkload {
                            name: name.clone(),
                            image: image.clone(),
                            installed_release: annotation,
                            pin: pin.clone(),
                            config_hash,
                            rollout,
                            stalled: false,
                            partition,
                        },
                    );
                }
                WorkloadAction::Delete { name } => {
                    self.obs.workloads.remove(name);
                }
            }
        }
        if let Some(report) = &d.check_report {
            self.obs.reported_check_job = Some(report.job_uid.clone());
        }
        self.obs.status = StatusView {
            installed_release: d.status.installed_release.clone(),
            target_release: d.status.target_release.clone(),
            phase: d.status.phase.clone(),
            phase_started_at: d.status.phase_started_at.clone(),
            conditions: d.status.conditions.clone(),
        };
        self.history.push(d.clone());
        d
    }

    /// Steps until `done` holds for a decision, at most `limit` times.
    pub fn run_until(&mut self, limit: usize, done: impl Fn(&Decision) -> bool) -> &Decision {
        for _ in 0..limit {
            let d = self.step();
            if done(&d) {
                break;
            }
        }
        self.history.last().expect("at least one step")
    }

    /// Steps until nothing changes any more (settled or stuck).
    pub fn settle(&mut self) -> &Decision {
        for _ in 0..50 {
            let before = self.obs.clone();
            self.step();
            if self.obs == before {
                break;
            }
        }
        self.history.last().expect("at least one step")
    }

    /// Cinder installed at `release` with `back_ends` volume back ends, one
    /// role (`volume`): independent hosts a roll may restart side by side.
    pub fn with_back_ends(release: &str, back_ends: usize) -> World {
        let names: Vec<String> = (0..back_ends).map(|i| format!("c-volume-{i}")).collect();
        let mut workloads = vec![("c-scheduler", true)];
        workloads.extend(names.iter().map(|n| (n.as_str(), true)));
        workloads.extend([("c-backup", true), ("c", false)]);
        let mut w = World::new(cinder_profile(), release, release, &workloads);
        for workload in &mut w.obs.desired_workloads {
            if names.contains(&workload.name) {
                workload.role = "volume".into();
            }
        }
        w.settle();
        assert_eq!(w.obs.status.installed_release, release);
        w
    }

    pub fn install(release: &str) -> World {
        let mut w = World::cinder(release);
        w.settle();
        assert_eq!(w.obs.status.installed_release, release);
        w
    }

    /// Every event decided so far, check reports included, in order.
    fn all_events(&self) -> impl Iterator<Item = &Event> {
        self.history.iter().flat_map(|d| {
            d.events
                .iter()
                .chain(d.check_report.as_ref().map(|r| &r.event))
        })
    }

    pub fn events(&self) -> Vec<String> {
        self.all_events().map(|e| e.reason.clone()).collect()
    }

    /// The type of every event with `reason` so far, in order.
    pub fn event_kinds(&self, reason: &str) -> Vec<EventType> {
        self.all_events()
            .filter(|e| e.reason == reason)
            .map(|e| e.kind)
            .collect()
    }

    pub fn phases(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for d in &self.history {
            if out.last() != Some(&d.status.phase) {
                out.push(d.status.phase.clone());
            }
        }
        out
    }

    pub fn database(&self) -> (bool, String, String) {
        let c = self
            .obs
            .status
            .conditions
            .iter()
            .find(|c| c.kind == "DatabaseReady")
            .expect("DatabaseReady");
        (c.status, c.reason.clone(), c.message.clone())
    }
}

impl World {
    /// The same world with a per-node agent rolled last (Neutron's agents,
    /// Nova's computes on their hypervisors): one pod on the world's one node.
    pub fn with_agent(mut self, name: &str) -> World {
        self.obs.desired_workloads.push(WorkloadId {
            name: name.to_string(),
            component: name.to_string(),
            carries_installed_release: false,
            replicas: Replicas::PerNode,
            drain: None,
            role: name.to_string(),
        });
        self
    }
}
