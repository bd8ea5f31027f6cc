//! Small helpers the tests, benchmarks and the demo share: waiting predicates,
//! example Cinders, clients that act as a ServiceAccount, and a [`witness`]
//! of upgrades under faults.

pub mod witness;

use kube::api::PostParams;
use kube::{Api, Client, Config};
use ratchet_api::cinder::v1beta1::{Cinder, CinderUpgradePhase};

use crate::error::Result;

pub const EXAMPLE_REPOSITORY: &str = "registry.invalid/openstack/cinder";

/// Installed at `release`, no upgrade running, Ready and every workload rolled
/// out (the second roll too) for the current generation.
pub fn settled_at(release: &str) -> impl Fn(&Cinder) -> bool + use<> {
    let release = release.to_string();
    move |c: &Cinder| {
        c.status.as_ref().is_some_and(|s| {
            let holds = |kind: &str| {
                s.conditions
                    .iter()
                    .any(|x| x.type_ == kind && x.status == "True")
            };
            s.installed_release == release
                && s.upgrade_phase == CinderUpgradePhase::None
                && s.observed_generation == c.metadata.generation
                && holds("Ready")
                && holds("DeploymentsReady")
        })
    }
}

/// Creates an example Cinder (tag = release) in `namespace`; returns the namespaced Api.
pub async fn create_example_cinder(
    client: &Client,
    namespace: &str,
    name: &str,
    release: &str,
    backends: &[&str],
) -> Result<Api<Cinder>> {
    let cinder: Cinder = serde_json::from_value(ratchet_api::cinder::example_manifest(
        name,
        release,
        EXAMPLE_REPOSITORY,
        release,
        backends,
    ))?;
    let api: Api<Cinder> = Api::namespaced(client.clone(), namespace);
    api.create(&PostParams::default(), &cinder).await?;
    Ok(api)
}

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
