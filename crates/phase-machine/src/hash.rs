//! The pod-spec hash gate: a Job is re-run when what its pod would run changes.

use sha2::{Digest, Sha256};

/// A short, stable hash of a Job's image, command and configuration.
pub fn job_spec_hash(image: &str, command: &[String], config_hash: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [image, config_hash] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    for arg in command {
        hasher.update(arg.as_bytes());
        hasher.update([0]);
    }
    hex::encode(&hasher.finalize()[..8])
}

/// A short, stable hash of any bytes (rendered configuration, pod templates).
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_input_change_changes_the_hash() {
        let cmd = vec!["db".to_string(), "sync".to_string()];
        let base = job_spec_hash("img:1", &cmd, "c1");
        assert_eq!(base, job_spec_hash("img:1", &cmd, "c1"));
        assert_ne!(base, job_spec_hash("img:2", &cmd, "c1"));
        assert_ne!(base, job_spec_hash("img:1", &cmd, "c2"));
        assert_ne!(base, job_spec_hash("img:1", &["db".to_string()], "c1"));
        // Concatenation ambiguity is ruled out by separators.
        assert_ne!(job_spec_hash("ab", &[], "c"), job_spec_hash("a", &[], "bc"));
    }
}
