//! Which CRD the storage runner migrates next, decided without I/O: each CRD
//! generation is migrated once; a failed one is retried with backoff on its
//! own, so one CRD that keeps failing (an object refusing its rewrite) never
//! holds back another.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::error::backoff;

#[derive(Default)]
pub struct Schedule {
    /// The generation last migrated, per CRD.
    migrated: HashMap<String, i64>,
    /// CRDs whose last attempt failed: the generation, failures so far, when
    /// to try again.
    retrying: HashMap<String, Retry>,
}

struct Retry {
    generation: i64,
    failures: u32,
    due: Instant,
}

impl Schedule {
    /// A CRD was seen at `generation`: whether to migrate it now.
    pub fn wants(&self, name: &str, generation: i64) -> bool {
        self.migrated.get(name) != Some(&generation)
            && self
                .retrying
                .get(name)
                .is_none_or(|r| r.generation != generation)
    }

    /// Records how migrating `name` at `generation` ended.
    pub fn finished(&mut self, name: &str, generation: i64, succeeded: bool, now: Instant) {
        if succeeded {
            self.migrated.insert(name.to_owned(), generation);
            self.retrying.remove(name);
            return;
        }
        let failures = self.retrying.get(name).map_or(0, |r| r.failures) + 1;
        let delay = backoff(failures).max(Duration::from_secs(1));
        self.retrying.insert(
            name.to_owned(),
            Retry {
                generation,
                failures,
                due: now + delay,
            },
        );
    }

    /// When the next retry is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        self.retrying.values().map(|r| r.due).min()
    }

    /// The CRDs (and generations) whose retry is due at `now`.
    pub fn due(&self, now: Instant) -> Vec<(String, i64)> {
        let mut due: Vec<(String, i64)> = self
            .retrying
            .iter()
            .filter(|(_, r)| r.due <= now)
            .map(|(name, r)| (name.clone(), r.generation))
            .collect();
        due.sort();
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_generation_is_migrated_once() {
        let mut s = Schedule::default();
        let now = Instant::now();
        assert!(s.wants("cinders", 1));
        s.finished("cinders", 1, true, now);
        assert!(!s.wants("cinders", 1));
        assert!(s.wants("cinders", 2), "a changed CRD is migrated again");
        assert_eq!(s.next_due(), None);
    }

    #[test]
    fn a_failing_crd_backs_off_alone() {
        let mut s = Schedule::default();
        let now = Instant::now();
        s.finished("cinders", 1, false, now);
        assert!(
            !s.wants("cinders", 1),
            "its retry is scheduled, not repeated"
        );
        assert!(s.wants("ironics", 1), "another CRD is not held back");
        s.finished("ironics", 1, true, now);
        assert!(s.due(now).is_empty());
        let first = s.next_due().expect("a retry");
        assert_eq!(s.due(first), [("cinders".to_string(), 1)]);
        s.finished("cinders", 1, false, first);
        let second = s.next_due().expect("a retry");
        assert!(
            second - first > first - now,
            "backs off: {:?}",
            second - first
        );
        assert!(s.wants("cinders", 2), "a new generation is tried at once");
        s.finished("cinders", 2, true, second);
        assert_eq!(s.next_due(), None);
    }
}
