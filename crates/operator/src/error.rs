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
            Error::Tls(_) => "tls".into(),
            Error::Crd(_) => "crd".into(),
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

#[cfg(test)]
mod tests {
    use super::backoff;
    use std::time::Duration;

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(5), Duration::from_secs(16));
        assert_eq!(backoff(20), Duration::from_secs(300));
        assert_eq!(backoff(200), Duration::from_secs(300));
    }
}
