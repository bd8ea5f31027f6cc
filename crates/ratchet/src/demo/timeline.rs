//! The upgrade's timeline and verdict, built from what the demo observed.

use std::fmt::Write;
use std::time::Duration;

/// One phase as observed: name, start and end (seconds since the upgrade began).
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSpan {
    pub phase: String,
    pub start: Duration,
    pub end: Duration,
}

/// Turns the phase seen at each instant into spans; consecutive repeats merge,
/// steady state ("") is not a phase.
pub fn spans(observations: &[(Duration, String)], finished: Duration) -> Vec<PhaseSpan> {
    let mut out: Vec<PhaseSpan> = Vec::new();
    for (at, phase) in observations {
        if out.last().is_some_and(|s| &s.phase == phase) {
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.end = *at;
        }
        out.push(PhaseSpan {
            phase: phase.clone(),
            start: *at,
            end: finished,
        });
    }
    out.retain(|s| !s.phase.is_empty());
    out
}

pub fn render(spans: &[PhaseSpan]) -> String {
    let mut out = String::from("  phase           start     end       duration\n");
    for s in spans {
        let _ = writeln!(
            out,
            "  {:<15} {:>6.1}s  {:>6.1}s  {:>7.1}s",
            s.phase,
            s.start.as_secs_f64(),
            s.end.as_secs_f64(),
            s.end.saturating_sub(s.start).as_secs_f64()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    #[test]
    fn merges_repeats_and_closes_each_phase_at_the_next() {
        let seen = vec![
            (s(0.0), "".to_string()),
            (s(0.1), "Expanding".to_string()),
            (s(0.5), "Expanding".to_string()),
            (s(1.0), "Migrating".to_string()),
            (s(2.0), "RollingUpdate".to_string()),
            (s(4.0), "Contracting".to_string()),
            (s(5.0), "".to_string()),
        ];
        let spans = spans(&seen, s(6.0));
        let names: Vec<&str> = spans.iter().map(|x| x.phase.as_str()).collect();
        assert_eq!(
            names,
            ["Expanding", "Migrating", "RollingUpdate", "Contracting"]
        );
        assert_eq!(spans[0].start, s(0.1));
        assert_eq!(spans[0].end, s(1.0));
        assert_eq!(spans[3].end, s(5.0));
        let text = render(&spans);
        assert!(
            text.contains("RollingUpdate") && text.contains("2.0s"),
            "{text}"
        );
    }

    #[test]
    fn an_unfinished_phase_ends_at_the_end() {
        let seen = vec![(s(0.0), "Expanding".to_string())];
        assert_eq!(spans(&seen, s(3.0))[0].end, s(3.0));
    }
}
