//! The timeline as a table for a terminal.

use std::fmt::Write;

use super::build::{Outcome, Span, Timeline};

/// `complete in 12.3s`, `aborted after 4.0s`, `in Migrating for 30.0s`.
pub fn outcome(timeline: &Timeline) -> String {
    let took = timeline.ended;
    match &timeline.outcome {
        Outcome::Complete => format!("complete in {took:.1}s"),
        Outcome::Aborted => format!("aborted after {took:.1}s"),
        Outcome::InProgress(phase) if phase.is_empty() => format!("running for {took:.1}s"),
        Outcome::InProgress(phase) => format!("in {phase} for {took:.1}s"),
    }
}

pub fn render(timeline: &Timeline) -> String {
    let mut out = format!(
        "{}: {} → {}, {}\nstarted {} (UpgradeInitiated); times in seconds since then \
         (Kubernetes records Jobs and pods to the second)\n",
        timeline.subject,
        timeline.from,
        timeline.to,
        outcome(timeline),
        timeline.started,
    );
    section(&mut out, "PHASE", &timeline.phases);
    section(&mut out, "WORKLOAD ROLLED", &timeline.workloads);
    section(&mut out, "JOB", &timeline.jobs);
    if !timeline.events.is_empty() {
        out.push_str("\nEVENTS\n");
    }
    for event in &timeline.events {
        let kind = if event.warning { "Warning" } else { "Normal" };
        let _ = writeln!(
            out,
            "  {:>7.1}s  {kind:<7}  {}: {}",
            event.at,
            event.reason,
            one_line(&event.message)
        );
    }
    out
}

fn section(out: &mut String, heading: &str, spans: &[Span]) {
    if spans.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n{heading:<30} {:>8} {:>8} {:>9}",
        "START", "END", "DURATION"
    );
    for s in spans {
        let row = format!(
            "  {:<28} {:>7.1}s {:>7.1}s {:>8.1}s  {}",
            s.label,
            s.start,
            s.end,
            (s.end - s.start).max(0.0),
            one_line(&s.note)
        );
        let _ = writeln!(out, "{}", row.trim_end());
    }
}

/// Messages may span lines; a table row may not.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::super::build::{build, tests::*};
    use super::*;

    #[test]
    fn the_table_names_phases_rolls_jobs_and_events_in_order() {
        let timeline = build(&cinder(), &completed()).expect("an upgrade");
        let text = render(&timeline);
        assert!(
            text.starts_with("Cinder ns/c: 2026.1 → 2026.2, complete in 12.0s\n"),
            "{text}"
        );
        let order = [
            "Expanding",
            "Contracting",
            "WORKLOAD ROLLED",
            "c-scheduler",
            "JOB",
            "c-db-expand",
            "EVENTS",
            "UpgradeCheckWarnings",
        ];
        let positions: Vec<usize> = order
            .iter()
            .map(|word| {
                text.find(word)
                    .unwrap_or_else(|| panic!("no {word} in\n{text}"))
            })
            .collect();
        assert!(positions.is_sorted(), "{text}");
        assert!(
            text.contains("  RollingUpdate                    3.5s    10.0s      6.5s"),
            "{text}"
        );
        assert!(
            text.contains("Warning  UpgradeCheckWarnings: exit 1"),
            "{text}"
        );
    }

    #[test]
    fn outcomes_read_as_words() {
        let mut timeline = build(&cinder(), &completed()).expect("an upgrade");
        timeline.outcome = Outcome::Aborted;
        assert_eq!(outcome(&timeline), "aborted after 12.0s");
        timeline.outcome = Outcome::InProgress("Migrating".into());
        assert_eq!(outcome(&timeline), "in Migrating for 12.0s");
    }
}
