//! Keystone: its resource, its profile (keystone-manage's expand, migrate and
//! contract around the API's roll), and on the shared controller its
//! configuration, keys and API.

pub mod config;
pub mod model;
pub mod profile;
pub mod resource;
pub mod v1alpha1;

pub use profile::{CONFIG_DIR, SERVICE};
pub use resource::example_manifest;

use ratchet_operator::service::ini::{DATABASE_CONNECTION, ManagedOption};
use ratchet_operator::service::model::ServiceModel;
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::status;
use ratchet_operator::service::{Example, OpenStackService};
use ratchet_phase_machine::{Profile, SpecView};
use v1alpha1::Keystone;

impl OpenStackService for Keystone {
    const SERVICE: &'static str = SERVICE;
    const INSTALLED_RELEASE_ANNOTATION: &'static str = "keystone.c5c3.io/installed-release";
    const CHECK_REPORTED_ANNOTATION: &'static str = "keystone.c5c3.io/last-upgrade-check-job-uid";
    const MANAGED_OPTIONS: &'static [ManagedOption] = &[
        DATABASE_CONNECTION,
        config::FERNET_TOKENS_KEYS,
        config::FERNET_RECEIPTS_KEYS,
        config::CREDENTIAL_KEYS_OPTION,
    ];
    const DEFAULT_UID: i64 = 42425;

    fn example(name: &str, release: &str, repository: &str, _scale: usize) -> Example {
        Example {
            manifest: example_manifest(name, release, repository, release, 2),
            shape: "2 APIs".into(),
        }
    }

    /// The example runs for real as it is.
    fn real_example(name: &str, release: &str, repository: &str) -> Option<Example> {
        Some(Self::example(name, release, repository, 2))
    }

    fn profile() -> Profile {
        profile::profile()
    }

    fn spec_view(&self) -> SpecView {
        status::spec_view::<Self>(
            self.metadata.generation,
            &self.spec.open_stack_release,
            &self.spec.image,
            ratchet_release::ImageLayout::Flat,
            &self.spec.extra_config,
            &self.spec.secret_options,
        )
    }

    fn model(&self, name: &str, _peers: &Peers) -> ServiceModel {
        model::model(self, name)
    }
}
