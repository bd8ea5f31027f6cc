//! Summaries of repeated measurements.

use std::time::Duration;

/// Median, 99th percentile, min and max of a sample, in seconds.
pub fn summary(samples: &[Duration]) -> String {
    if samples.is_empty() {
        return "no samples".into();
    }
    let mut sorted = samples.to_vec();
    sorted.sort();
    let at = |q: f64| {
        let idx = ((sorted.len() as f64 - 1.0) * q).round() as usize;
        sorted[idx.min(sorted.len() - 1)]
    };
    format!(
        "n={} p50={:.3}s p99={:.3}s min={:.3}s max={:.3}s",
        sorted.len(),
        at(0.5).as_secs_f64(),
        at(0.99).as_secs_f64(),
        sorted[0].as_secs_f64(),
        sorted[sorted.len() - 1].as_secs_f64()
    )
}
