//! Small helpers the tests, benchmarks and the demo share: clients that act as
//! a ServiceAccount, seeded moments for chaos, and a [`witness`] of upgrades
//! under faults (example resources of each service are `ratchet-services`').

pub mod witness;

use kube::{Client, Config};

use crate::error::Result;

/// A client that acts as `system:serviceaccount:<namespace>:<name>` (the
/// config's identity must be allowed to impersonate).
pub fn impersonating(config: &Config, namespace: &str, name: &str) -> Result<Client> {
    let mut config = config.clone();
    config.auth_info.impersonate = Some(format!("system:serviceaccount:{namespace}:{name}"));
    Ok(Client::try_from(config)?)
}

/// Seeded moments for chaos (xorshift64*): the same seed gives the same kill
/// moments, so a failing chaos run can be repeated.
pub struct Moments(u64);

impl Moments {
    pub fn seeded(seed: u64) -> Moments {
        Moments(seed | 1)
    }

    /// A delay between `min` and `max`.
    pub fn between(
        &mut self,
        min: std::time::Duration,
        max: std::time::Duration,
    ) -> std::time::Duration {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let unit = (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
        min + (max - min).mul_f64(unit)
    }
}
