use std::time::Duration;

/// Why a reconcile pass did not finish.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API error: {0}")]
    Kube(#[from] kube::Error),

    /// A failure that needs a retry, already said on the resource (the
    /// machine's conditions and Warning event, or the operator's Warning event).
    #[error("{reason}: {message}")]
    Blocked { reason: String, message: String },

    #[error("serialisation error: {0}")]
    Serde(#[from] serde_json::Error),

    #[error("webhook TLS: {0}")]
    Tls(String),

    #[error("the object has no {0}")]
    MissingField(&'static str),

    /// A service's model contradicts its profile (a defect in Ratchet's
    /// service folder, caught by the shared tests).
    #[error("the service's model: {0}")]
    Model(&'static str),

    /// Ratchet's own CRD versions do not merge (a defect in Ratchet's types).
    #[error("building Ratchet's CRDs: {0}")]
    Crd(#[from] kube::core::crd::MergeError),
}

impl Error {
    /// A low-cardinality label for metrics.
    pub fn metric_label(&self) -> String {
        match self {
            Error::Kube(_) => "kube".into(),
            Error::Blocked { reason, .. } => reason.clone(),
            Error::Serde(_) => "serde".into(),
            Error::MissingField(_) => "missing_field".into(),
            Error::Model(_) => "model".into(),
            Error::Tls(_) => "tls".into(),
            Error::Crd(_) => "crd".into(),
        }
    }
}

impl Error {
    /// Whether the failure says nothing about the resource: the API server
    /// unreachable, restarting, overloaded or briefly failing, or a write that
    /// lost a race. Retrying soon is the cure, and such failures must not grow
    /// the resource's back-off: an outage of seconds would otherwise delay the
    /// next reaction by minutes.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Kube(kube::Error::Api(status)) => {
                matches!(status.code, 408 | 409 | 429 | 500 | 502 | 503 | 504)
            }
            Error::Kube(
                kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_),
            ) => true,
            _ => false,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Per-object retry delay after `failures` consecutive failures: 1 s doubling to 5 min.
pub fn backoff(failures: u32) -> Duration {
    let secs = 1u64
        .checked_shl(failures.saturating_sub(1))
        .unwrap_or(u64::MAX);
    Duration::from_secs(secs.min(300))
}

/// Retry delay after `attempts` consecutive transient failures: 100 ms doubling
/// to 1 s, so a resource is retried within a second of the API server serving again.
pub fn transient_backoff(attempts: u32) -> Duration {
    let millis = 100u64
        .checked_shl(attempts.saturating_sub(1))
        .unwrap_or(u64::MAX);
    Duration::from_millis(millis.min(1000))
}

/// One object's consecutive failures, counted apart by kind: transient ones
/// retry fast and leave the real failures' back-off where it was.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Failures {
    pub real: u32,
    pub transient: u32,
}

impl Failures {
    /// Whether the failure just counted is worth a Warning event, so a user
    /// sees why nothing moves without a flood: a transient one once it has
    /// repeated for about ten seconds (the 10th, 100th, 1000th… in a row), any
    /// other from its third in a row (3rd, 30th, 300th…).
    pub fn worth_an_event(&self, transient: bool) -> bool {
        let (count, first) = if transient {
            (self.transient, 10)
        } else {
            (self.real, 3)
        };
        std::iter::successors(Some(first), |n: &u32| n.checked_mul(10)).any(|n| n == count)
    }

    /// Counts one more failure and says how long to wait before the next try.
    pub fn record(&mut self, transient: bool) -> Duration {
        if transient {
            self.transient = self.transient.saturating_add(1);
            transient_backoff(self.transient)
        } else {
            self.transient = 0;
            self.real = self.real.saturating_add(1);
            backoff(self.real)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Failures, backoff, transient_backoff};

    /// Which of `count` failures in a row are worth an event.
    fn told(transient: bool, count: u32) -> Vec<u32> {
        let mut failures = Failures::default();
        (1..=count)
            .filter(|_| {
                failures.record(transient);
                failures.worth_an_event(transient)
            })
            .collect()
    }

    #[test]
    fn repeated_failures_are_told_at_growing_intervals_only() {
        assert_eq!(told(true, 1000), [10, 100, 1000]);
        assert_eq!(told(false, 300), [3, 30, 300]);
    }
    use std::time::Duration;

    #[test]
    fn transient_failures_retry_within_a_second_and_keep_the_real_backoff() {
        let mut failures = Failures::default();
        for _ in 0..3 {
            failures.record(false);
        }
        let delays: Vec<Duration> = (0..20).map(|_| failures.record(true)).collect();
        assert_eq!(delays[0], Duration::from_millis(100));
        assert!(delays.iter().all(|d| *d <= Duration::from_secs(1)));
        assert_eq!(
            failures.real, 3,
            "an outage does not grow the real back-off"
        );
        assert_eq!(failures.record(false), Duration::from_secs(8));
        assert_eq!(failures.transient, 0);
        assert_eq!(transient_backoff(200), Duration::from_secs(1));
    }

    #[test]
    fn only_api_server_trouble_is_transient() {
        let api = |code: u16| {
            super::Error::Kube(kube::Error::Api(Box::new(kube::core::Status {
                code,
                ..Default::default()
            })))
        };
        for code in [408, 409, 429, 500, 502, 503, 504] {
            assert!(api(code).is_transient(), "{code}");
        }
        for code in [400, 403, 404, 422] {
            assert!(!api(code).is_transient(), "{code}");
        }
        let blocked = super::Error::Blocked {
            reason: "ExpandFailed".into(),
            message: "the Job failed".into(),
        };
        assert!(!blocked.is_transient());
    }

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(5), Duration::from_secs(16));
        assert_eq!(backoff(20), Duration::from_secs(300));
        assert_eq!(backoff(200), Duration::from_secs(300));
    }
}
