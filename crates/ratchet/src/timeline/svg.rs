//! The timeline as an SVG Gantt chart: one row per phase, workload roll and
//! Job on a time axis in seconds from the upgrade's start, warnings as red
//! lines. Hand-built text: a few rectangles, lines and labels need no
//! library, and every string from the cluster passes through [`escape`].

use std::fmt::Write;

use super::build::{Marker, Outcome, Span, State, Timeline};
use super::text::outcome;

const WIDTH: f64 = 1200.0;
const CHART_LEFT: f64 = 250.0;
const CHART_RIGHT: f64 = 720.0;
const NOTE_LEFT: f64 = 735.0;
const ROW: f64 = 22.0;
const BAR: f64 = 14.0;
const TOP: f64 = 104.0;
const LABEL_CHARS: usize = 34;
const NOTE_CHARS: usize = 74;

const FAILED: &str = "#d0453b";
const RUNNING: &str = "#e0a030";
const ABORTED: &str = "#9aa0a6";

/// A row group: heading and its colour when done.
struct Group<'a> {
    heading: &'a str,
    done: &'a str,
    spans: &'a [Span],
}

pub fn render(timeline: &Timeline) -> String {
    let groups = [
        Group {
            heading: "Phases",
            done: "#3d7cc9",
            spans: &timeline.phases,
        },
        Group {
            heading: "Workloads rolled",
            done: "#47a37a",
            spans: &timeline.workloads,
        },
        Group {
            heading: "Jobs",
            done: "#7b6cc4",
            spans: &timeline.jobs,
        },
    ];
    let warnings: Vec<&Marker> = timeline.warnings().collect();
    let rows: usize = groups
        .iter()
        .filter(|g| !g.spans.is_empty())
        .map(|g| g.spans.len() + 1)
        .sum();
    let chart_bottom = TOP + rows as f64 * ROW;
    let height = chart_bottom + 30.0 + (warnings.len() + 1) as f64 * ROW;
    let scale = Scale::new(timeline.extent());

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    header(&mut out, timeline);
    legend(&mut out, &groups);
    axis(&mut out, &scale, chart_bottom);
    let mut y = TOP;
    for group in groups.iter().filter(|g| !g.spans.is_empty()) {
        text(
            &mut out,
            12.0,
            y + 15.0,
            "font-weight=\"bold\"",
            group.heading,
        );
        y += ROW;
        for span in group.spans {
            bar(&mut out, &scale, y, span, group.done);
            y += ROW;
        }
    }
    warning_lines(&mut out, &scale, &warnings, chart_bottom);
    end_line(&mut out, &scale, timeline, chart_bottom);
    warning_list(&mut out, &warnings, chart_bottom + 30.0);
    out.push_str("</svg>\n");
    out
}

/// Title (resource, releases, outcome and total time) and when it began.
fn header(out: &mut String, timeline: &Timeline) {
    let title = format!(
        "{}: {} → {}, {}",
        timeline.subject,
        timeline.from,
        timeline.to,
        outcome(timeline)
    );
    let _ = writeln!(out, "<title>{}</title>", escape(&title));
    let _ = writeln!(
        out,
        r##"<rect width="100%" height="100%" fill="#ffffff"/>"##
    );
    text(
        out,
        12.0,
        24.0,
        "font-size=\"16\" font-weight=\"bold\"",
        &title,
    );
    let started = format!(
        "started {} (UpgradeInitiated); seconds since then (Jobs and pods to the second)",
        timeline.started
    );
    text(out, 12.0, 44.0, "fill=\"#555555\"", &started);
}

/// A red dashed line across the chart at each warning, its message as a tooltip.
fn warning_lines(out: &mut String, scale: &Scale, warnings: &[&Marker], bottom: f64) {
    for warning in warnings {
        let x = scale.x(warning.at);
        let tooltip = format!("{:.1}s {}: {}", warning.at, warning.reason, warning.message);
        let _ = writeln!(
            out,
            r#"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom}" stroke="{FAILED}" stroke-width="1.5" stroke-dasharray="4 3"><title>{}</title></line>"#,
            escape(&tooltip)
        );
    }
}

/// The warnings under the chart, one a line.
fn warning_list(out: &mut String, warnings: &[&Marker], top: f64) {
    if warnings.is_empty() {
        return;
    }
    text(out, 12.0, top, "font-weight=\"bold\"", "Warnings");
    for (index, warning) in warnings.iter().enumerate() {
        let line = format!(
            "{:>6.1}s  {}: {}",
            warning.at, warning.reason, warning.message
        );
        let y = top + (index + 1) as f64 * ROW;
        text(
            out,
            12.0,
            y,
            &format!("fill=\"{FAILED}\""),
            &clip(&line, 150),
        );
    }
}

/// Where the upgrade completed or was aborted (a second roll may follow it).
fn end_line(out: &mut String, scale: &Scale, timeline: &Timeline, bottom: f64) {
    let word = match timeline.outcome {
        Outcome::Complete => "complete",
        Outcome::Aborted => "aborted",
        Outcome::InProgress(_) => return,
    };
    let x = scale.x(timeline.ended);
    let _ = writeln!(
        out,
        r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom}" stroke="#333333" stroke-width="1"/>"##
    );
    text(
        out,
        x,
        bottom + 14.0,
        "text-anchor=\"middle\" fill=\"#333333\"",
        &format!("{word} {:.1}s", timeline.ended),
    );
}

/// Seconds to pixels across the chart's width.
struct Scale {
    extent: f64,
}

impl Scale {
    fn new(extent: f64) -> Scale {
        Scale {
            extent: extent.max(1.0),
        }
    }

    fn x(&self, seconds: f64) -> f64 {
        CHART_LEFT + seconds.clamp(0.0, self.extent) / self.extent * (CHART_RIGHT - CHART_LEFT)
    }

    /// A round step (1, 2 or 5 times a power of ten) giving at most ten ticks.
    fn tick(&self) -> f64 {
        let rough = self.extent / 10.0;
        let power = 10f64.powf(rough.log10().floor());
        [1.0, 2.0, 5.0, 10.0]
            .into_iter()
            .map(|m| m * power)
            .find(|step| *step >= rough)
            .unwrap_or(10.0 * power)
    }
}

fn axis(out: &mut String, scale: &Scale, bottom: f64) {
    let step = scale.tick();
    let ticks = (scale.extent / step).floor() as usize;
    let decimals = if step < 1.0 { 1 } else { 0 };
    for i in 0..=ticks {
        let seconds = i as f64 * step;
        let x = scale.x(seconds);
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{bottom}" stroke="#e4e4e4"/>"##,
            TOP - 6.0
        );
        let _ = writeln!(
            out,
            r##"<text x="{x:.1}" y="{}" text-anchor="middle" fill="#555555">{seconds:.decimals$}s</text>"##,
            TOP - 10.0
        );
    }
}

fn legend(out: &mut String, groups: &[Group]) {
    let entries = groups.iter().map(|g| (g.done, g.heading)).chain([
        (FAILED, "failed / warning"),
        (RUNNING, "running"),
        (ABORTED, "aborted"),
    ]);
    let mut x = 12.0;
    for (colour, label) in entries {
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="56" width="12" height="12" fill="{colour}"/>"#
        );
        text(out, x + 16.0, 66.0, "", label);
        x += 24.0 + label.len() as f64 * 7.0;
    }
}

fn bar(out: &mut String, scale: &Scale, y: f64, span: &Span, done: &str) {
    let colour = match span.state {
        State::Done => done,
        State::Failed => FAILED,
        State::Running => RUNNING,
        State::Aborted => ABORTED,
    };
    let (x, end) = (scale.x(span.start), scale.x(span.end));
    // Second-precision times make zero-length spans: keep them visible.
    let width = (end - x).max(2.0);
    let tooltip = format!(
        "{}: {:.1}s → {:.1}s ({:.1}s) {}",
        span.label,
        span.start,
        span.end,
        (span.end - span.start).max(0.0),
        span.note
    )
    .trim_end()
    .to_string();
    text(out, 24.0, y + 15.0, "", &clip(&span.label, LABEL_CHARS));
    let _ = writeln!(
        out,
        r#"<rect x="{x:.1}" y="{:.1}" width="{width:.1}" height="{BAR}" rx="2" fill="{colour}"><title>{}</title></rect>"#,
        y + (ROW - BAR) / 2.0,
        escape(&tooltip)
    );
    let note = format!("{:.1}s  {}", (span.end - span.start).max(0.0), span.note);
    text(
        out,
        NOTE_LEFT,
        y + 15.0,
        "fill=\"#333333\"",
        &clip_note(&note, NOTE_CHARS),
    );
}

/// A `<text>` element; `attributes` are ours, `content` is escaped.
fn text(out: &mut String, x: f64, y: f64, attributes: &str, content: &str) {
    let _ = writeln!(
        out,
        r#"<text x="{x:.1}" y="{y:.1}"{}{attributes}>{}</text>"#,
        if attributes.is_empty() { "" } else { " " },
        escape(content)
    );
}

/// A note of ` · `-separated parts in at most `max` characters: whole parts
/// when they fill most of the room (the rest is in the bar's tooltip), else
/// cut mid-part (a Job's message is worth its first words).
fn clip_note(note: &str, max: usize) -> String {
    let line = clip(note, usize::MAX);
    if line.chars().count() <= max {
        return line;
    }
    let mut kept = String::new();
    for part in line.split(" · ") {
        let longer = if kept.is_empty() {
            part.to_string()
        } else {
            format!("{kept} · {part}")
        };
        if longer.chars().count() + " · …".chars().count() > max {
            break;
        }
        kept = longer;
    }
    if kept.chars().count() * 3 >= max * 2 {
        format!("{kept} · …")
    } else {
        clip(&line, max)
    }
}

/// At most `max` characters, on one line.
fn clip(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let kept: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// Text safe inside an element or a quoted attribute: markup characters as
/// entities, and characters XML 1.0 cannot carry at all (most control
/// characters) as U+FFFD.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::build::{build, tests::*};
    use super::*;

    fn parse(svg: &str) -> roxmltree::Document<'_> {
        roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}\n{svg}"))
    }

    /// Every text the reader sees, in document order.
    fn texts(svg: &str) -> Vec<String> {
        parse(svg)
            .descendants()
            .filter(|n| n.has_tag_name("text") || n.has_tag_name("title"))
            .map(|n| n.text().unwrap_or_default().to_string())
            .collect()
    }

    #[test]
    fn the_chart_has_a_row_per_phase_roll_and_job_and_a_line_per_warning() {
        let timeline = build(&cinder(), &completed()).expect("an upgrade");
        let svg = render(&timeline);
        let document = parse(&svg);
        let seen = texts(&svg);
        for label in [
            "Cinder ns/c: 2026.1 → 2026.2, complete in 12.0s",
            "Expanding",
            "Contracting",
            "c-scheduler",
            "c-db-expand",
            "Warnings",
            "complete 12.0s",
        ] {
            assert!(seen.iter().any(|t| t == label), "no {label} in {seen:?}");
        }
        let bars = document
            .descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("rx").is_some())
            .count();
        assert_eq!(bars, 4 + 2 + 1);
        let warning_lines = document
            .descendants()
            .filter(|n| n.has_tag_name("line") && n.attribute("stroke") == Some(FAILED))
            .count();
        assert_eq!(warning_lines, 1);
    }

    #[test]
    fn a_workload_that_rolled_twice_has_a_row_per_roll_saying_which() {
        let timeline = build(&cinder(), &rolled_twice()).expect("an upgrade");
        let seen = texts(&render(&timeline));
        let rows = |label: &str| seen.iter().filter(|t| *t == label).count();
        assert_eq!(
            (rows("c-scheduler"), rows("c-volume-lvm"), rows("c")),
            (2, 2, 1)
        );
        for note in [
            "1.0s roll 1 of 2 in RollingUpdate · StatefulSet revision 2 · …",
            "1.0s roll 2 of 2 after the upgrade completed · StatefulSet revision 3 · …",
            "2.0s in RollingUpdate · Deployment revision 2 · 2 pods",
        ] {
            assert!(seen.iter().any(|t| t == note), "no {note:?} in {seen:?}");
        }
        assert!(
            seen.iter().any(
                |t| t.starts_with("c-scheduler: 4.0s → 5.0s (1.0s) roll 1 of 2")
                    && t.ends_with(
                        "done by the time c-volume-lvm began rolling (its pods are replaced since)"
                    )
            ),
            "the whole note in the tooltip: {seen:?}"
        );
    }

    #[test]
    fn a_long_note_keeps_whole_parts_or_a_jobs_first_words() {
        assert_eq!(clip_note("a · b · c", 9), "a · b · c");
        assert_eq!(
            clip_note("abcdefgh · ijkl · mnop", 20),
            "abcdefgh · ijkl · …"
        );
        assert_eq!(
            clip_note("ok · 1 attempt · a long message", 24),
            "ok · 1 attempt · a long…"
        );
    }

    #[test]
    fn failures_have_their_own_colour() {
        let mut timeline = build(&cinder(), &completed()).expect("an upgrade");
        timeline.jobs[0].state = State::Failed;
        let svg = render(&timeline);
        let failed = parse(&svg)
            .descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(FAILED))
            .filter(|n| n.attribute("rx").is_some())
            .count();
        assert_eq!(failed, 1, "{svg}");
    }

    #[test]
    fn hostile_names_and_messages_stay_text() {
        let hostile = "x<&\"'>]]></text><script>alert(1)</script>\u{1}";
        let mut timeline = build(&cinder(), &completed()).expect("an upgrade");
        timeline.subject = hostile.into();
        timeline.jobs[0].label = hostile.into();
        timeline.jobs[0].note = hostile.into();
        timeline.events[3].message = hostile.into();
        let svg = render(&timeline);
        let document = parse(&svg);
        assert!(
            !document.descendants().any(|n| n.has_tag_name("script")),
            "{svg}"
        );
        let seen = texts(&svg);
        let kept = "x<&\"'>]]></text><script>alert(1)</script>\u{FFFD}";
        assert!(
            seen.iter()
                .any(|t| t.starts_with(&format!("{kept}: 2026.1 → 2026.2"))),
            "the title: {seen:?}"
        );
        assert!(
            seen.iter().any(|t| t.ends_with(&format!("(2.0s) {kept}"))),
            "the Job's tooltip: {seen:?}"
        );
        assert!(
            seen.iter()
                .any(|t| t.ends_with(&format!("UpgradeCheckWarnings: {kept}"))),
            "{seen:?}"
        );
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(Scale::new(12.0).tick(), 2.0);
        assert_eq!(Scale::new(95.0).tick(), 10.0);
        assert_eq!(Scale::new(400.0).tick(), 50.0);
    }
}
