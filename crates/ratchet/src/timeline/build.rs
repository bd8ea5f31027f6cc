//! The timeline of a resource's last upgrade, built from what was read of it
//! (pure): its phases from the phase-complete events, every roll of its
//! workloads (one per revision, so a workload that rolled twice shows twice),
//! its Jobs, and the events on the way.

use k8s_openapi::jiff::Timestamp;
use ratchet_phase_machine::vocabulary::{event, reason};
use ratchet_phase_machine::{Phase, Profile, Step};

use super::record::{EventRecord, JobRecord, JobVerdict, Record, RevisionRecord, WorkloadRecord};

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
    /// Every roll since the upgrade began, by start: a workload that rolled
    /// twice (Cinder's second roll, Ironic's unpinning) has a row per roll.
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
    let phases = phase_spans(profile, events, clock, &outcome, ended);
    let workloads = rolls(profile, record, clock, &phases, &outcome, ended);
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
        phases,
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
        Step::Jobs {
            templates,
            failed_reason,
            offline,
        } => {
            reason_seen == *failed_reason
                || templates
                    .iter()
                    .chain(offline.as_ref().map(|o| &o.template))
                    .any(|t| t.exit_reasons.iter().any(|r| r.reason == reason_seen))
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

/// One revision a workload rolled to since the upgrade began; its end is
/// worked out once every roll is known.
struct Roll<'a> {
    workload: &'a WorkloadRecord,
    revision: &'a RevisionRecord,
    /// Its start as recorded, to the second.
    recorded: f64,
    /// Its start no earlier than where it began (a phase, or the upgrade's end).
    start: f64,
    /// Whether it replaced an earlier revision (rather than making the workload).
    replaced: bool,
    /// Its workload's next roll: number and start, when this one was superseded.
    successor: Option<(i64, f64)>,
    /// `n` of `count` rolls of its workload.
    ordinal: usize,
    count: usize,
    place: Place,
}

impl Roll<'_> {
    /// The order rolls began in: by start; within a second, ControllerRevisions
    /// in the order they were written, then ReplicaSets.
    fn order(&self, other: &Roll) -> std::cmp::Ordering {
        self.start
            .total_cmp(&other.start)
            .then(self.recorded.total_cmp(&other.recorded))
            .then(
                self.revision
                    .sequence
                    .unwrap_or(u64::MAX)
                    .cmp(&other.revision.sequence.unwrap_or(u64::MAX)),
            )
            .then_with(|| self.workload.name.cmp(&other.workload.name))
            .then(self.revision.number.cmp(&other.revision.number))
    }
}

/// Where a roll began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// In the phase of this index (of the profile and of the phase spans).
    Phase(usize),
    AfterCompletion,
    AfterAbort,
}

/// Every roll since the upgrade began: one per revision (ReplicaSet or
/// ControllerRevision) made since then, in the order they began.
fn rolls(
    profile: &Profile,
    record: &Record,
    clock: Clock,
    phases: &[Span],
    outcome: &Outcome,
    ended: f64,
) -> Vec<Span> {
    let mut rolls: Vec<Roll> = Vec::new();
    for workload in &record.workloads {
        let mut revisions: Vec<&RevisionRecord> = workload.revisions.iter().collect();
        revisions.sort_by_key(|r| r.number);
        let first = rolls.len();
        let mut placed: Vec<usize> = Vec::new();
        for (index, revision) in revisions.iter().enumerate() {
            let previous = index.checked_sub(1).map(|i| revisions[i]);
            let newest = index + 1 == revisions.len();
            let Some(recorded) = roll_start(revision, previous, newest, clock) else {
                continue;
            };
            let place = place(profile, phases, outcome, ended, recorded, &placed);
            // Recorded before the upgrade began, it began with it only if a
            // roll phase did (no profile begins so): else the install made it.
            if recorded < 0.0 && !matches!(place, Place::Phase(index) if is_roll(profile, index)) {
                continue;
            }
            // Where it began is timed to the microsecond (an event), its
            // revision to the second: it cannot have begun before.
            let since = match place {
                Place::Phase(index) => {
                    placed.push(index);
                    phases.get(index).map_or(0.0, |p| p.start)
                }
                Place::AfterCompletion | Place::AfterAbort => ended,
            };
            rolls.push(Roll {
                workload,
                revision,
                recorded,
                start: recorded.max(since).max(0.0),
                // A roll back renumbers the revision it reuses: an older one
                // may have a higher number.
                replaced: revisions.iter().any(|other| {
                    other.number < revision.number || other.created < revision.created
                }),
                successor: None,
                ordinal: 0,
                count: 0,
                place,
            });
        }
        let count = rolls.len() - first;
        for k in first..rolls.len() {
            rolls[k].ordinal = k - first + 1;
            rolls[k].count = count;
            rolls[k].successor = match rolls.get(k + 1) {
                Some(next) => Some((next.revision.number, next.start)),
                // Superseded by a revision that is no roll of this upgrade.
                None => revisions
                    .last()
                    .filter(|newest| newest.number != rolls[k].revision.number)
                    .map(|newest| (newest.number, rolls[k].start)),
            };
        }
    }
    rolls.sort_by(|a, b| a.order(b));
    let now = clock.at(record.read_at);
    rolls
        .iter()
        .enumerate()
        .map(|(index, roll)| roll_span(roll, &rolls[index + 1..], profile, phases, clock, now))
        .collect()
}

/// When the roll to `revision` began, as recorded (to the second, so up to a
/// second before the upgrade began): its ReplicaSet's or ControllerRevision's
/// creation. A roll back to an earlier template reuses that revision (created
/// long before), so the newest revision, when reused, began with its first
/// pod. `None`: not a roll of this upgrade.
fn roll_start(
    revision: &RevisionRecord,
    previous: Option<&RevisionRecord>,
    newest: bool,
    clock: Clock,
) -> Option<f64> {
    let reused = previous.is_some_and(|p| revision.created < p.created);
    let since = |t: Timestamp| Some(clock.at(t)).filter(|at| *at >= -SECOND_PRECISION);
    if reused {
        newest
            .then(|| revision.pods.iter().map(|p| p.created).min())
            .flatten()
            .and_then(since)
    } else {
        since(revision.created)
    }
}

/// The phase a roll recorded at `start` belongs to. Revisions are timed to
/// the second, so its true start lies within a second after `start`: among
/// the roll phases that overlap that second, the first its workload has not
/// rolled in yet (a roll phase rolls each workload once). Failing that, a
/// roll that began once the upgrade had completed or was aborted is after it
/// (Cinder's second roll; an abort's roll back).
fn place(
    profile: &Profile,
    phases: &[Span],
    outcome: &Outcome,
    ended: f64,
    start: f64,
    placed: &[usize],
) -> Place {
    let candidates: Vec<usize> = phases
        .iter()
        .enumerate()
        .filter(|(index, span)| {
            is_roll(profile, *index) && span.start < start + SECOND_PRECISION && start <= span.end
        })
        .map(|(index, _)| index)
        .collect();
    if let Some(index) = candidates.iter().find(|index| !placed.contains(index)) {
        return Place::Phase(*index);
    }
    if start > ended - SECOND_PRECISION {
        match outcome {
            Outcome::Complete => return Place::AfterCompletion,
            Outcome::Aborted => return Place::AfterAbort,
            Outcome::InProgress(_) => {}
        }
    }
    candidates
        .last()
        .copied()
        .or_else(|| phases.iter().rposition(|span| span.start <= start))
        .map_or(Place::AfterCompletion, Place::Phase)
}

fn is_roll(profile: &Profile, phase: usize) -> bool {
    profile
        .phases
        .get(phase)
        .is_some_and(|p| matches!(p.step, Step::Roll { .. }))
}

/// A roll's row. The newest revision ends when its last pod became ready
/// (running until every replica is). An earlier revision's pods are gone, so
/// its end is inferred from the machine's rule for a roll phase: one workload
/// at a time, the next only once this one has rolled out, the phase complete
/// only once every one has. Otherwise it ran until its successor replaced
/// it, and whether it finished first is not recorded. `later`: the rolls
/// that began after it.
fn roll_span(
    roll: &Roll,
    later: &[Roll],
    profile: &Profile,
    phases: &[Span],
    clock: Clock,
    now: f64,
) -> Span {
    let (end, state, how) = match roll.successor {
        None => newest_end(roll, clock, now),
        Some(successor) => superseded_end(roll, successor, later, profile, phases),
    };
    let place = match roll.place {
        Place::Phase(index) => phases
            .get(index)
            .map(|p| format!("in {}", p.label))
            .unwrap_or_default(),
        Place::AfterCompletion => "after the upgrade completed".into(),
        Place::AfterAbort => "after the abort".into(),
    };
    let head = match (roll.count, roll.replaced) {
        (1, true) => place,
        (_, true) => format!("roll {} of {} {place}", roll.ordinal, roll.count),
        (_, false) => format!("created {place}"),
    };
    let revision = format!("{} revision {}", roll.workload.kind, roll.revision.number);
    Span {
        label: roll.workload.name.clone(),
        start: roll.start,
        end: end.max(roll.start),
        state,
        note: [head, revision, how].join(" · "),
    }
}

/// The newest revision: done when every replica's pod is ready.
fn newest_end(roll: &Roll, clock: Clock, now: f64) -> (f64, State, String) {
    let pods = &roll.revision.pods;
    let replicas = usize::try_from(roll.workload.replicas).unwrap_or_default();
    let ready: Vec<Timestamp> = pods.iter().filter_map(|p| p.ready_at).collect();
    if ready.len() == pods.len() && pods.len() >= replicas {
        let end = ready.iter().max().map_or(roll.start, |t| clock.at(*t));
        let plural = if pods.len() == 1 { "" } else { "s" };
        (end, State::Done, format!("{} pod{plural}", pods.len()))
    } else {
        let of = replicas.max(pods.len());
        (
            now,
            State::Running,
            format!("{}/{of} pods ready", ready.len()),
        )
    }
}

/// An earlier revision, whose pods have been replaced since.
fn superseded_end(
    roll: &Roll,
    (successor, replaced_at): (i64, f64),
    later: &[Roll],
    profile: &Profile,
    phases: &[Span],
) -> (f64, State, String) {
    if let Place::Phase(index) = roll.place
        && is_roll(profile, index)
    {
        // Another workload's roll begun in the same phase since: this one had
        // rolled out (a workload's own next roll says nothing of the kind).
        let next = later.iter().find(|r| r.place == roll.place && r.replaced);
        match next {
            Some(next) if !std::ptr::eq(next.workload, roll.workload) => {
                return (
                    next.start,
                    State::Done,
                    format!(
                        "done by the time {} began rolling (its pods are replaced since)",
                        next.workload.name
                    ),
                );
            }
            None if phases.get(index).is_some_and(|p| p.state == State::Done) => {
                let phase = &phases[index];
                return (
                    phase.end,
                    State::Done,
                    format!(
                        "done by the time {} completed (its pods are replaced since)",
                        phase.label
                    ),
                );
            }
            _ => {}
        }
    }
    (
        replaced_at,
        State::Aborted,
        format!(
            "replaced by revision {successor} at {replaced_at:.1}s; whether it finished first is not recorded"
        ),
    )
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

    pub fn pod(created: f64, ready: f64) -> PodRecord {
        PodRecord {
            created: t(created),
            ready_at: Some(t(ready)),
        }
    }

    /// A revision made at `created` whose pods are `pods`.
    pub fn revision(number: i64, created: f64, pods: Vec<PodRecord>) -> RevisionRecord {
        RevisionRecord {
            number,
            created: t(created),
            sequence: None,
            pods,
        }
    }

    pub fn workload(kind: &str, name: &str, revisions: Vec<RevisionRecord>) -> WorkloadRecord {
        let replicas = revisions.last().map_or(1, |r| r.pods.len().max(1));
        WorkloadRecord {
            kind: kind.into(),
            name: name.into(),
            replicas: i32::try_from(replicas).expect("few pods"),
            revisions,
        }
    }

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
                workload(
                    "StatefulSet",
                    "c-scheduler",
                    vec![
                        revision(2, 104.0, vec![pod(104.0, 105.0)]),
                        revision(1, 5.0, vec![]),
                    ],
                ),
                workload(
                    "Deployment",
                    "c",
                    vec![
                        revision(1, 5.0, vec![]),
                        revision(2, 107.0, vec![pod(107.0, 108.0), pod(107.0, 109.0)]),
                    ],
                ),
                workload(
                    "Deployment",
                    "untouched",
                    vec![revision(1, 10.0, vec![pod(10.0, 11.0)])],
                ),
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
        assert_eq!(
            timeline.workloads[1].note,
            "in RollingUpdate · Deployment revision 2 · 2 pods"
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

    /// The rows of the rolls: label, start, end, state and note.
    fn roll_rows(timeline: &Timeline) -> Vec<(&str, f64, f64, State, &str)> {
        timeline
            .workloads
            .iter()
            .map(|s| (s.label.as_str(), s.start, s.end, s.state, s.note.as_str()))
            .collect()
    }

    /// Cinder's ordered roll in RollingUpdate (scheduler, volume, API), then
    /// the second roll after promotion (scheduler, volume): the first
    /// revisions' pods are gone, the second ones' are there.
    pub fn rolled_twice() -> Record {
        let mut record = completed();
        record.workloads = vec![
            workload(
                "StatefulSet",
                "c-scheduler",
                vec![
                    revision(1, 5.0, vec![]),
                    revision(2, 104.0, vec![]),
                    revision(3, 112.0, vec![pod(112.0, 113.0)]),
                ],
            ),
            workload(
                "StatefulSet",
                "c-volume-lvm",
                vec![
                    revision(3, 113.0, vec![pod(113.0, 114.0)]),
                    revision(2, 105.0, vec![]),
                    revision(1, 5.0, vec![]),
                ],
            ),
            workload(
                "Deployment",
                "c",
                vec![
                    revision(1, 5.0, vec![]),
                    revision(2, 107.0, vec![pod(107.0, 108.0), pod(107.0, 109.0)]),
                ],
            ),
        ];
        record.read_at = t(120.0);
        record
    }

    #[test]
    fn a_workload_that_rolled_twice_shows_the_ordered_roll_and_the_second_roll() {
        let timeline = build(&cinder(), &rolled_twice()).expect("an upgrade");
        assert_eq!(
            roll_rows(&timeline),
            [
                (
                    "c-scheduler",
                    4.0,
                    5.0,
                    State::Done,
                    "roll 1 of 2 in RollingUpdate · StatefulSet revision 2 · done by the time \
                     c-volume-lvm began rolling (its pods are replaced since)"
                ),
                (
                    "c-volume-lvm",
                    5.0,
                    7.0,
                    State::Done,
                    "roll 1 of 2 in RollingUpdate · StatefulSet revision 2 · done by the time \
                     c began rolling (its pods are replaced since)"
                ),
                (
                    "c",
                    7.0,
                    9.0,
                    State::Done,
                    "in RollingUpdate · Deployment revision 2 · 2 pods"
                ),
                (
                    "c-scheduler",
                    12.0,
                    13.0,
                    State::Done,
                    "roll 2 of 2 after the upgrade completed · StatefulSet revision 3 · 1 pod"
                ),
                (
                    "c-volume-lvm",
                    13.0,
                    14.0,
                    State::Done,
                    "roll 2 of 2 after the upgrade completed · StatefulSet revision 3 · 1 pod"
                ),
            ]
        );
        assert_eq!(
            timeline.extent(),
            14.0,
            "the second roll outlasts the upgrade"
        );
    }

    /// The demo's pods are ready within a second: revisions made in the same
    /// second, and recorded as before the phase began.
    #[test]
    fn rolls_within_one_second_keep_the_order_their_revisions_were_written() {
        let mut record = rolled_twice();
        let mut backup = record.workloads[1].clone();
        backup.name = "c-backup".into();
        let sequenced = |number, created, sequence| RevisionRecord {
            sequence: Some(sequence),
            ..revision(number, created, vec![])
        };
        // Listed out of roll order, as the API lists them (by name).
        record.workloads[0].revisions[1] = sequenced(2, 103.0, 366);
        record.workloads[1].revisions[1] = sequenced(2, 103.0, 391);
        backup.revisions[1] = sequenced(2, 104.0, 413);
        record.workloads[2].revisions[1].created = t(104.0);
        record.workloads.insert(0, backup);
        let timeline = build(&cinder(), &record).expect("an upgrade");
        let rows: Vec<(&str, f64, f64)> = timeline
            .workloads
            .iter()
            .map(|s| (s.label.as_str(), s.start, s.end))
            .collect();
        assert_eq!(
            &rows[..4],
            [
                ("c-scheduler", 3.5, 3.5),
                ("c-volume-lvm", 3.5, 4.0),
                ("c-backup", 4.0, 4.0),
                ("c", 4.0, 9.0),
            ]
        );
    }

    /// The API's roll and the contract took under a second: the API's
    /// revision, recorded to the second, lies within a second of the
    /// upgrade's end, and so does the scheduler's second roll.
    #[test]
    fn a_roll_begun_in_the_upgrades_last_second_stays_in_its_phase() {
        let mut record = rolled_twice();
        record.events.retain(|e| e.at < t(110.0));
        record.events.extend([
            ev(112.3, false, "DeploymentRolloutComplete", ""),
            ev(112.9, false, "UpgradeComplete", ""),
        ]);
        record.workloads.remove(1);
        record.workloads[0].revisions[2] = revision(3, 112.0, vec![pod(112.0, 113.0)]);
        record.workloads[1].revisions[1] =
            revision(2, 112.0, vec![pod(112.0, 112.0), pod(112.0, 112.0)]);
        let timeline = build(&cinder(), &record).expect("an upgrade");
        let rows: Vec<(&str, f64, f64, &str)> = timeline
            .workloads
            .iter()
            .map(|s| {
                let head = s.note.split(" · ").next().unwrap_or_default();
                (s.label.as_str(), s.start, s.end, head)
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("c-scheduler", 4.0, 12.0, "roll 1 of 2 in RollingUpdate"),
                ("c", 12.0, 12.0, "in RollingUpdate"),
                (
                    "c-scheduler",
                    12.9,
                    13.0,
                    "roll 2 of 2 after the upgrade completed"
                ),
            ]
        );
    }

    /// Upgraded the moment the install settled: the install's revisions are
    /// recorded within the second before the upgrade began.
    #[test]
    fn revisions_the_install_made_just_before_the_upgrade_are_no_rolls() {
        let mut record = rolled_twice();
        for workload in &mut record.workloads {
            for revision in &mut workload.revisions {
                if revision.number == 1 {
                    revision.created = t(99.0);
                }
            }
        }
        record.workloads.push(workload(
            "Deployment",
            "untouched",
            vec![revision(1, 99.0, vec![pod(99.0, 99.0)])],
        ));
        let timeline = build(&cinder(), &record).expect("an upgrade");
        let rolls: Vec<&str> = timeline
            .workloads
            .iter()
            .map(|s| s.note.split(" · ").next().unwrap_or_default())
            .collect();
        assert_eq!(
            rolls,
            [
                "roll 1 of 2 in RollingUpdate",
                "roll 1 of 2 in RollingUpdate",
                "in RollingUpdate",
                "roll 2 of 2 after the upgrade completed",
                "roll 2 of 2 after the upgrade completed",
            ]
        );
    }

    #[test]
    fn the_last_roll_of_a_phase_was_done_when_the_phase_completed() {
        let mut record = rolled_twice();
        record.workloads.truncate(2);
        let timeline = build(&cinder(), &record).expect("an upgrade");
        let volume = &timeline.workloads[1];
        assert_eq!(
            (
                volume.label.as_str(),
                volume.start,
                volume.end,
                volume.state
            ),
            ("c-volume-lvm", 5.0, 10.0, State::Done)
        );
        assert!(
            volume.note.ends_with(
                "done by the time RollingUpdate completed (its pods are replaced since)"
            ),
            "{}",
            volume.note
        );
    }

    #[test]
    fn a_second_roll_still_running_counts_its_ready_replicas() {
        let mut record = rolled_twice();
        record.workloads[1].replicas = 2;
        record.workloads[1].revisions[0].pods.push(PodRecord {
            created: t(115.0),
            ready_at: None,
        });
        let timeline = build(&cinder(), &record).expect("an upgrade");
        let last = timeline.workloads.last().expect("rolls");
        assert_eq!(
            (last.label.as_str(), last.start, last.end, last.state),
            ("c-volume-lvm", 13.0, 20.0, State::Running)
        );
        assert!(last.note.ends_with("· 1/2 pods ready"), "{}", last.note);
    }

    /// A roll that stalled and was replaced by the abort's roll back, which
    /// reuses the revision from before the upgrade (created long before).
    #[test]
    fn a_roll_replaced_by_the_aborts_roll_back_does_not_claim_to_have_finished() {
        let mut record = completed();
        record.events.truncate(5);
        record.events.extend([
            ev(
                105.0,
                true,
                "RolloutStalled",
                "c-scheduler made no progress",
            ),
            ev(105.5, false, "UpgradeAborted", "aborted in RollingUpdate"),
        ]);
        record.workloads = vec![workload(
            "StatefulSet",
            "c-scheduler",
            vec![
                revision(2, 104.0, vec![]),
                revision(3, 5.0, vec![pod(106.0, 107.0)]),
            ],
        )];
        let timeline = build(&cinder(), &record).expect("an upgrade");
        assert_eq!(
            roll_rows(&timeline),
            [
                (
                    "c-scheduler",
                    4.0,
                    6.0,
                    State::Aborted,
                    "roll 1 of 2 in RollingUpdate · StatefulSet revision 2 · replaced by \
                     revision 3 at 6.0s; whether it finished first is not recorded"
                ),
                (
                    "c-scheduler",
                    6.0,
                    7.0,
                    State::Done,
                    "roll 2 of 2 after the abort · StatefulSet revision 3 · 1 pod"
                ),
            ]
        );
    }

    /// Ironic rolls its conductors in PinnedRoll and again in Unpinning, which
    /// begins the moment PinnedRoll completes: a revision timed to the second
    /// before that still belongs to Unpinning.
    #[test]
    fn rolls_in_adjacent_roll_phases_go_one_to_each() {
        let record = Record {
            subject: "Ironic ns/i".into(),
            read_at: t(30.0),
            events: vec![
                ev(
                    0.0,
                    false,
                    "UpgradeInitiated",
                    "2026.1 → 2026.2: upgrade initiated",
                ),
                ev(2.0, false, "DBUpgradeComplete", ""),
                ev(3.0, false, "UpgradeCheckComplete", ""),
                ev(6.6, false, "PinnedRollComplete", ""),
                ev(9.5, false, "UnpinComplete", ""),
                ev(12.0, false, "UpgradeComplete", ""),
            ],
            workloads: vec![
                workload(
                    "StatefulSet",
                    "i-conductor",
                    vec![
                        revision(1, -50.0, vec![]),
                        revision(2, 3.0, vec![]),
                        // Made at 6.7s, recorded as 6s.
                        revision(3, 6.0, vec![pod(7.0, 8.0)]),
                    ],
                ),
                workload(
                    "Deployment",
                    "i-api",
                    vec![
                        revision(1, -50.0, vec![]),
                        revision(2, 5.0, vec![]),
                        revision(3, 8.0, vec![pod(8.0, 9.0)]),
                    ],
                ),
            ],
            ..Record::default()
        };
        let profile = ratchet_services::ironic::profile::profile();
        let timeline = build(&profile, &record).expect("an upgrade");
        let rows: Vec<(&str, f64, f64, &str)> = timeline
            .workloads
            .iter()
            .map(|s| {
                let head = s.note.split(" · ").next().unwrap_or_default();
                (s.label.as_str(), s.start, s.end, head)
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("i-conductor", 3.0, 5.0, "roll 1 of 2 in PinnedRoll"),
                ("i-api", 5.0, 6.6, "roll 1 of 2 in PinnedRoll"),
                ("i-conductor", 6.6, 8.0, "roll 2 of 2 in Unpinning"),
                ("i-api", 8.0, 9.0, "roll 2 of 2 in Unpinning"),
            ]
        );
    }

    #[test]
    fn no_initiation_means_no_upgrade_recorded() {
        let mut record = completed();
        record.events.retain(|e| e.reason != "UpgradeInitiated");
        assert_eq!(build(&cinder(), &record), None);
    }
}
