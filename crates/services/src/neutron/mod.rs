//! Neutron: its resource, its profile (expand online, the check, servers
//! then agents, the contract online or, when `has_offline_migrations` says
//! so and the spec allows the outage, with every server stopped), and on the
//! shared controller its configuration, servers and per-node agents.
//! Upgraded after Nova, before Cinder.

pub mod config;
pub mod model;
pub mod paste;
pub mod profile;
pub mod resource;
pub mod v1alpha1;

pub use profile::{CONFIG_DIR, SERVICE};
pub use resource::example_manifest;

use ratchet_api::common::UpgradePolicy;
use ratchet_api::identity::IdentitySpec;
use ratchet_operator::service::ini::{DATABASE_CONNECTION, ManagedOption, TRANSPORT_URL};
use ratchet_operator::service::model::ServiceModel;
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::status;
use ratchet_operator::service::{Example, OpenStackService};
use ratchet_phase_machine::{Profile, SpecView};
use v1alpha1::Neutron;

impl OpenStackService for Neutron {
    const SERVICE: &'static str = SERVICE;
    const PEERS: &'static [&'static str] = &[crate::nova::SERVICE];
    const INSTALLED_RELEASE_ANNOTATION: &'static str = "neutron.c5c3.io/installed-release";
    const CHECK_REPORTED_ANNOTATION: &'static str = "neutron.c5c3.io/last-upgrade-check-job-uid";
    const MANAGED_OPTIONS: &'static [ManagedOption] = &[
        DATABASE_CONNECTION,
        TRANSPORT_URL,
        config::HOST,
        config::API_PASTE_CONFIG,
    ];
    const DEFAULT_UID: i64 = 42435;

    fn example(name: &str, release: &str, repository: &str, _scale: usize) -> Example {
        Example {
            manifest: example_manifest(name, release, repository, release),
            shape: resource::SHAPE.into(),
        }
    }

    fn real_example(name: &str, release: &str, repository: &str) -> Option<Example> {
        Some(Example {
            manifest: resource::real_example_manifest(name, release, repository),
            shape: resource::SHAPE.into(),
        })
    }

    fn profile() -> Profile {
        profile::profile()
    }

    fn spec_view(&self) -> SpecView {
        let mut view = status::spec_view::<Self>(
            self.metadata.generation,
            &self.spec.open_stack_release,
            &self.spec.image,
            ratchet_release::ImageLayout::Flat,
            &self.spec.extra_config,
            &self.spec.secret_options,
        );
        view.allows_outage = self.spec.upgrade.allow_outage;
        view.max_parallel = UpgradePolicy::parallel_bound(Some(&self.spec.upgrade));
        // Refused at admission too, not only when the file is rendered.
        view.invalid_config
            .extend(config::identity_refusals(&self.spec));
        view
    }

    fn model(&self, name: &str, peers: &Peers) -> ServiceModel {
        model::model(self, name, peers)
    }

    fn identity(&self) -> Option<&IdentitySpec> {
        self.spec.identity.as_ref()
    }
}
