//! The timeline of a resource's last upgrade, built from what was read of it
//! (pure): its phases from the phase-complete events, the workloads it rolled,
//! its Jobs, and the events on the way.

use k8s_openapi::jiff::Timestamp;
use ratchet_phase_machine::vocabulary::{event, reason};
use ratchet_phase_machine::{Phase, Profile, Step};

use super::record::{EventRecord, JobRecord, JobVerdict, Record, WorkloadRecord};

/// Pods and Jobs carry second-precision times: anything created up to a
/// second before the upgrade began may still belong to it.
const SECOND_PRECISION: f64 = 1.0;

#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    pub subject: String,
    pub from: String,
    pub to: String,
    /// The latest `UpgradeInitiated`: every time below is seconds since then.
    pub started: Timestamp,
    pub outcome: Outcome,
    /// When the upgrade completed or was aborted, or when it was read while running.
    pub ended: f64,
    pub phases: Vec<Span>,
    pub workloads: Vec<Span>,
    pub jobs: Vec<Span>,
    /// Every event since the upgrade began.
    pub events: Vec<Marker>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Complete,
    Aborted,
    /// Still running, in this phase.
    InProgress(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Done,
    Failed,
    Running,
    Aborted,
}

/// One row of the chart: a phase, a workload's roll or a Job.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub label: String,
    pub start: f64,
    pub end: f64,
    pub state: State,
    pub note: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    pub at: f64,
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

impl Timeline {
    /// The last instant anything shown ends (a second roll may outlast the upgrade).
    pub fn extent(&self) -> f64 {
        self.phases
            .iter()
            .chain(&self.workloads)
            .chain(&self.jobs)
            .map(|s| s.end)
            .chain(self.events.iter().map(|m| m.at))
            .fold(self.ended, f64::max)
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Marker> {
        self.events.iter().filter(|m| m.warning)
    }
}

/// Seconds since the upgrade began.
#[derive(Clone, Copy)]
struct Clock(Timestamp);

impl Clock {
    fn at(self, t: Timestamp) -> f64 {
        t.duration_since(self.0).as_secs_f64()
    }
}

/// The timeline from the latest `UpgradeInitiated` on; `None` when no upgrade
/// is recorded (never upgraded, or its events have expired).
pub fn build(profile: &Profile, record: &Record) -> Option<Timeline> {
    let first = record
        .events
        .iter()
        .rposition(|e| e.reason == event::UPGRADE_INITIATED)?;
    let events = &record.events[first..];
    let clock = Clock(events[0].at);
    let (outcome, ended) = outcome(events, record, clock);
    let (from, to) = releases(&events[0], record);
    let mut workloads: Vec<Span> = record
        .workloads
        .iter()
        .filter_map(|w| roll_span(w, clock, clock.at(record.read_at)))
        .map(|roll| after_completion(roll, &outcome, ended))
        .collect();
    workloads.sort_by(|a, b| a.start.total_cmp(&b.start));
    let mut jobs: Vec<Span> = record
        .jobs
        .iter()
        .filter_map(|j| job_span(j, clock, clock.at(record.read_at)))
        .collect();
    jobs.sort_by(|a, b| a.start.total_cmp(&b.start));
    Some(Timeline {
        subject: record.subject.clone(),
        from,
        to,
        started: clock.0,
        phases: phase_spans(profile, events, clock, &outcome, ended),
        outcome,
        ended,
        workloads,
        jobs,
        events: events
            .iter()
            .map(|e| Marker {
                at: clock.at(e.at),
                warning: e.warning,
                reason: e.reason.clone(),
                message: e.message.clone(),
            })
            .collect(),
    })
}

/// How the upgrade ended (its first `UpgradeComplete` or `UpgradeAborted`) and when.
fn outcome(events: &[EventRecord], record: &Record, clock: Clock) -> (Outcome, f64) {
    events
        .iter()
        .find_map(|e| match e.reason.as_str() {
            event::UPGRADE_COMPLETE => Some((Outcome::Complete, clock.at(e.at))),
            event::UPGRADE_ABORTED => Some((Outcome::Aborted, clock.at(e.at))),
            _ => None,
        })
        .unwrap_or_else(|| {
            (
                Outcome::InProgress(record.upgrade_phase.clone()),
                clock.at(record.read_at),
            )
        })
}

/// The machine's `UpgradeInitiated` reads `<from> → <to>: …`; the status says
/// the same only while the upgrade runs.
fn releases(initiated: &EventRecord, record: &Record) -> (String, String) {
    let head = initiated.message.split(':').next().unwrap_or_default();
    match head.split_once(" → ") {
        Some((from, to)) => (from.trim().to_string(), to.trim().to_string()),
        None => (
            record.installed_release.clone(),
            record.target_release.clone(),
        ),
    }
}

/// Each phase runs from the previous one's end to its own `complete_event`
/// (the last phase, which has none, to `UpgradeComplete`); the first phase
/// without an end is where the upgrade stopped or still runs.
fn phase_spans(
    profile: &Profile,
    events: &[EventRecord],
    clock: Clock,
    outcome: &Outcome,
    ended: f64,
) -> Vec<Span> {
    let upgrade: Vec<Timed> = events
        .iter()
        .map(|e| (clock.at(e.at), e))
        .take_while(|(at, _)| *at <= ended)
        .collect();
    let mut spans = Vec::new();
    let mut start = 0.0;
    for (index, phase) in profile.phases.iter().enumerate() {
        let is_last = index + 1 == profile.phases.len();
        let end = phase
            .complete_event
            .and_then(|done| first_since(&upgrade, done, start))
            .or_else(|| (is_last && *outcome == Outcome::Complete).then_some(ended));
        let failures = failures_in(phase, &upgrade, start, end.unwrap_or(ended));
        let state = match end {
            Some(_) => State::Done,
            None => unfinished(&failures, outcome),
        };
        spans.push(Span {
            label: phase.name.to_string(),
            start,
            end: end.unwrap_or(ended),
            state,
            note: phase_note(state, &failures, outcome),
        });
        match end {
            Some(end) => start = end,
            None => break,
        }
    }
    spans
}

/// An event and its time in seconds since the upgrade began.
type Timed<'a> = (f64, &'a EventRecord);

/// When the event `reason` first happened at or after `start`.
fn first_since(events: &[Timed], reason: &str, start: f64) -> Option<f64> {
    events
        .iter()
        .find(|(at, e)| e.reason == reason && *at >= start)
        .map(|(at, _)| *at)
}

/// The state of the phase the upgrade stopped in, or still runs.
fn unfinished(failures: &[String], outcome: &Outcome) -> State {
    match (failures.is_empty(), outcome) {
        (false, _) => State::Failed,
        (true, Outcome::Aborted) => State::Aborted,
        (true, _) => State::Running,
    }
}

/// The Warning reasons that say this phase failed: its Job's failure reasons,
/// or, for a roll, a stalled rollout.
fn failures_in(phase: &Phase, events: &[Timed], start: f64, end: f64) -> Vec<String> {
    let failed = |reason_seen: &str| match &phase.step {
        Step::Job {
            template,
            failed_reason,
        } => {
            reason_seen == *failed_reason
                || template
                    .exit_reasons
                    .iter()
                    .any(|r| r.reason == reason_seen)
        }
        Step::Roll { .. } => reason_seen == reason::ROLLOUT_STALLED,
    };
    events
        .iter()
        .filter(|(at, e)| e.warning && failed(&e.reason) && (start..=end).contains(at))
        .map(|(_, e)| e.reason.clone())
        .collect()
}

fn phase_note(state: State, failures: &[String], outcome: &Outcome) -> String {
    let failed = failures.join(", ");
    match (state, outcome) {
        (State::Done, _) if !failures.is_empty() => format!("recovered after {failed}"),
        (State::Failed, Outcome::Aborted) => format!("{failed}; aborted"),
        (State::Failed, _) => failed,
        (State::Aborted, _) => "aborted".into(),
        (State::Running, _) => "running".into(),
        (State::Done, _) => String::new(),
    }
}

/// A workload's roll: from its first current-revision pod's creation to the
/// last one's readiness. Pods made before the upgrade mean it did not roll.
fn roll_span(workload: &WorkloadRecord, clock: Clock, now: f64) -> Option<Span> {
    let created = workload.pods.iter().map(|p| p.created).min()?;
    let start = clock.at(created);
    if start < -SECOND_PRECISION {
        return None;
    }
    let ready: Option<Vec<Timestamp>> = workload.pods.iter().map(|p| p.ready_at).collect();
    let (end, state) = match ready.and_then(|times| times.into_iter().max()) {
        Some(last) => (clock.at(last), State::Done),
        None => (now, State::Running),
    };
    let pods = workload.pods.len();
    let plural = if pods == 1 { "" } else { "s" };
    Some(Span {
        label: workload.name.clone(),
        start: start.max(0.0),
        end,
        state,
        note: format!("{} · {pods} pod{plural}", workload.kind),
    })
}

/// A roll that began once the upgrade had completed is the one its promotion
/// started (Cinder's second roll): the earlier roll's pods are gone. A pod's
/// creation is recorded to the second, so "began" allows for that.
fn after_completion(mut roll: Span, outcome: &Outcome, ended: f64) -> Span {
    if *outcome == Outcome::Complete && roll.start > ended - SECOND_PRECISION {
        roll.note.push_str(" · after the upgrade completed");
    }
    roll
}

/// A Job of this upgrade: from its start to its completion or failure.
fn job_span(job: &JobRecord, clock: Clock, now: f64) -> Option<Span> {
    if clock.at(job.created) < -SECOND_PRECISION {
        return None;
    }
    let state = match job.verdict {
        JobVerdict::Running => State::Running,
        JobVerdict::Succeeded => State::Done,
        JobVerdict::Failed(_) => State::Failed,
    };
    Some(Span {
        label: job.name.clone(),
        start: clock.at(job.started.unwrap_or(job.created)).max(0.0),
        end: job.finished.map_or(now, |t| clock.at(t)),
        state,
        note: job_note(job),
    })
}

/// `failed (BackoffLimitExceeded) · 5 attempts · exit 1, 1, 1, 1, 1 · <last message>`.
fn job_note(job: &JobRecord) -> String {
    let verdict = match &job.verdict {
        JobVerdict::Running => "running".to_string(),
        JobVerdict::Succeeded => "succeeded".to_string(),
        JobVerdict::Failed(why) => format!("failed ({why})"),
    };
    let attempts = usize::try_from(job.counted_attempts)
        .unwrap_or_default()
        .max(job.attempts.len());
    let plural = if attempts == 1 { "" } else { "s" };
    let mut parts = vec![verdict, format!("{attempts} attempt{plural}")];
    let codes: Vec<String> = job
        .attempts
        .iter()
        .filter_map(|a| a.exit_code.map(|c| c.to_string()))
        .collect();
    if !codes.is_empty() {
        parts.push(format!("exit {}", codes.join(", ")));
    }
    if let Some(message) = job.attempts.iter().rev().find_map(|a| {
        a.message
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
    }) {
        parts.push(message.to_string());
    }
    parts.join(" · ")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::record::{AttemptRecord, PodRecord};
    use super::*;

    pub fn t(secs: f64) -> Timestamp {
        let base: Timestamp = "2026-12-01T10:00:00Z".parse().expect("a timestamp");
        base.checked_add(k8s_openapi::jiff::SignedDuration::from_secs_f64(secs))
            .expect("in range")
    }

    pub fn ev(at: f64, warning: bool, reason: &str, message: &str) -> EventRecord {
        EventRecord {
            at: t(at),
            warning,
            reason: reason.into(),
            message: message.into(),
        }
    }

    pub fn cinder() -> Profile {
        ratchet_services::cinder::profile::profile()
    }

    /// A completed Cinder upgrade 100 s after an earlier one was recorded.
    pub fn completed() -> Record {
        let pod = |created: f64, ready: f64| PodRecord {
            created: t(created),
            ready_at: Some(t(ready)),
        };
        Record {
            subject: "Cinder ns/c".into(),
            installed_release: "2026.2".into(),
            read_at: t(130.0),
            events: vec![
                ev(
                    0.0,
                    false,
                    "UpgradeInitiated",
                    "2025.2 → 2026.1: upgrade initiated",
                ),
                ev(50.0, false, "UpgradeComplete", "old"),
                ev(
                    100.0,
                    false,
                    "UpgradeInitiated",
                    "2026.1 → 2026.2: upgrade initiated with img",
                ),
                ev(102.0, false, "ExpandComplete", ""),
                ev(103.5, false, "MigrateComplete", ""),
                ev(103.5, true, "UpgradeCheckWarnings", "exit 1"),
                ev(110.0, false, "DeploymentRolloutComplete", ""),
                ev(
                    112.0,
                    false,
                    "UpgradeComplete",
                    "2026.1 → 2026.2: upgrade complete",
                ),
            ],
            jobs: vec![
                JobRecord {
                    name: "c-db-expand".into(),
                    created: t(100.0),
                    started: Some(t(100.0)),
                    finished: Some(t(102.0)),
                    verdict: JobVerdict::Succeeded,
                    counted_attempts: 1,
                    attempts: vec![AttemptRecord {
                        exit_code: Some(0),
                        message: None,
                    }],
                },
                JobRecord {
                    name: "c-db-sync".into(),
                    created: t(20.0),
                    started: Some(t(20.0)),
                    finished: Some(t(21.0)),
                    verdict: JobVerdict::Succeeded,
                    counted_attempts: 1,
                    attempts: vec![],
                },
            ],
            workloads: vec![
                WorkloadRecord {
                    kind: "StatefulSet".into(),
                    name: "c-scheduler".into(),
                    pods: vec![pod(104.0, 105.0)],
                },
                WorkloadRecord {
                    kind: "Deployment".into(),
                    name: "c".into(),
                    pods: vec![pod(107.0, 108.0), pod(107.0, 109.0)],
                },
                WorkloadRecord {
                    kind: "Deployment".into(),
                    name: "untouched".into(),
                    pods: vec![pod(10.0, 11.0)],
                },
            ],
            ..Record::default()
        }
    }

    #[test]
    fn a_completed_upgrade_is_read_from_its_latest_initiation() {
        let timeline = build(&cinder(), &completed()).expect("an upgrade");
        assert_eq!(
            (timeline.from.as_str(), timeline.to.as_str()),
            ("2026.1", "2026.2")
        );
        assert_eq!(timeline.outcome, Outcome::Complete);
        assert_eq!(timeline.ended, 12.0);
        let phases: Vec<(&str, f64, f64, State)> = timeline
            .phases
            .iter()
            .map(|s| (s.label.as_str(), s.start, s.end, s.state))
            .collect();
        assert_eq!(
            phases,
            [
                ("Expanding", 0.0, 2.0, State::Done),
                ("Migrating", 2.0, 3.5, State::Done),
                ("RollingUpdate", 3.5, 10.0, State::Done),
                ("Contracting", 10.0, 12.0, State::Done),
            ]
        );
        let rolls: Vec<(&str, f64, f64)> = timeline
            .workloads
            .iter()
            .map(|s| (s.label.as_str(), s.start, s.end))
            .collect();
        assert_eq!(rolls, [("c-scheduler", 4.0, 5.0), ("c", 7.0, 9.0)]);
        assert_eq!(timeline.workloads[1].note, "Deployment · 2 pods");
        let mut late = completed();
        late.workloads[0].pods[0] = PodRecord {
            created: t(112.0),
            ready_at: Some(t(113.0)),
        };
        let timeline_late = build(&cinder(), &late).expect("an upgrade");
        assert_eq!(
            timeline_late.workloads[1].note,
            "StatefulSet · 1 pod · after the upgrade completed"
        );
        let jobs: Vec<&str> = timeline.jobs.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            jobs,
            ["c-db-expand"],
            "the install's sync is not this upgrade's"
        );
        assert_eq!(timeline.jobs[0].note, "succeeded · 1 attempt · exit 0");
        let expand = &timeline.jobs[0];
        assert_eq!(expand.end - expand.start, 2.0);
        let warnings: Vec<&str> = timeline.warnings().map(|m| m.reason.as_str()).collect();
        assert_eq!(warnings, ["UpgradeCheckWarnings"]);
    }

    #[test]
    fn an_aborted_upgrade_with_a_failed_job_ends_at_the_abort() {
        let mut record = completed();
        record.events.truncate(3);
        record.events.extend([
            ev(
                105.0,
                true,
                "ExpandFailed",
                "2026.1 → 2026.2: db sync failed",
            ),
            ev(109.0, false, "UpgradeAborted", "aborted in Expanding"),
            ev(111.0, false, "DatabaseSynced", "re-synced"),
        ]);
        let failed = |code: i32| AttemptRecord {
            exit_code: Some(code),
            message: Some("OperationalError: simulated failure".into()),
        };
        record.jobs[0] = JobRecord {
            finished: Some(t(105.0)),
            verdict: JobVerdict::Failed("BackoffLimitExceeded".into()),
            counted_attempts: 5,
            attempts: vec![failed(1), failed(1), failed(3)],
            ..record.jobs[0].clone()
        };
        record.workloads.clear();
        let timeline = build(&cinder(), &record).expect("an upgrade");
        assert_eq!(timeline.outcome, Outcome::Aborted);
        assert_eq!(timeline.ended, 9.0);
        assert_eq!(timeline.phases.len(), 1, "{:?}", timeline.phases);
        let expanding = &timeline.phases[0];
        assert_eq!((expanding.end, expanding.state), (9.0, State::Failed));
        assert_eq!(expanding.note, "ExpandFailed; aborted");
        let job = &timeline.jobs[0];
        assert_eq!((job.end, job.state), (5.0, State::Failed));
        assert_eq!(
            job.note,
            "failed (BackoffLimitExceeded) · 5 attempts · exit 1, 1, 3 · OperationalError: simulated failure"
        );
        assert_eq!(timeline.extent(), 11.0, "events after the abort still show");
    }

    #[test]
    fn an_abort_before_any_failure_marks_the_phase_aborted_and_a_running_one_runs() {
        let mut record = completed();
        record.events.truncate(4);
        record.upgrade_phase = "Migrating".into();
        let timeline = build(&cinder(), &record).expect("an upgrade");
        assert_eq!(timeline.outcome, Outcome::InProgress("Migrating".into()));
        let last = timeline.phases.last().expect("phases");
        assert_eq!(
            (last.label.as_str(), last.state, last.end),
            ("Migrating", State::Running, 30.0)
        );
        record.events.push(ev(104.0, false, "UpgradeAborted", ""));
        let timeline = build(&cinder(), &record).expect("an upgrade");
        let last = timeline.phases.last().expect("phases");
        assert_eq!(
            (last.state, last.end, last.note.as_str()),
            (State::Aborted, 4.0, "aborted")
        );
    }

    #[test]
    fn a_phase_that_failed_and_then_completed_says_it_recovered() {
        let mut record = completed();
        record
            .events
            .insert(3, ev(101.0, true, "ExpandFailed", "x"));
        let timeline = build(&cinder(), &record).expect("an upgrade");
        assert_eq!(timeline.phases[0].state, State::Done);
        assert_eq!(timeline.phases[0].note, "recovered after ExpandFailed");
    }

    #[test]
    fn no_initiation_means_no_upgrade_recorded() {
        let mut record = completed();
        record.events.retain(|e| e.reason != "UpgradeInitiated");
        assert_eq!(build(&cinder(), &record), None);
    }
}
