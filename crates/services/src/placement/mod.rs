//! Placement: its resource, its profile (db sync as the expand, the upgrade
//! check, the API's roll, online data migrations as the contract), and on
//! the shared controller its configuration and API. Upgraded before Nova.

pub mod config;
pub mod model;
pub mod profile;
pub mod resource;
pub mod v1alpha1;

pub use profile::{CONFIG_DIR, SERVICE};
pub use resource::example_manifest;

use ratchet_api::identity::IdentitySpec;
use ratchet_operator::service::ini::ManagedOption;
use ratchet_operator::service::model::ServiceModel;
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::status;
use ratchet_operator::service::{Example, OpenStackService};
use ratchet_phase_machine::{Profile, SpecView};
use v1alpha1::Placement;

impl OpenStackService for Placement {
    const SERVICE: &'static str = SERVICE;
    const INSTALLED_RELEASE_ANNOTATION: &'static str = "placement.c5c3.io/installed-release";
    const CHECK_REPORTED_ANNOTATION: &'static str = "placement.c5c3.io/last-upgrade-check-job-uid";
    const MANAGED_OPTIONS: &'static [ManagedOption] = &[config::DATABASE_CONNECTION];
    const DEFAULT_UID: i64 = 42482;

    fn example(name: &str, release: &str, repository: &str, _scale: usize) -> Example {
        Example {
            manifest: example_manifest(name, release, repository, release, 2),
            shape: "2 APIs".into(),
        }
    }

    fn real_example(name: &str, release: &str, repository: &str) -> Option<Example> {
        Some(Example {
            manifest: resource::real_example_manifest(name, release, repository),
            shape: "2 APIs".into(),
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
        // Refused at admission too, not only when the file is rendered.
        view.invalid_config
            .extend(config::identity_refusals(&self.spec));
        view
    }

    fn model(&self, name: &str, _peers: &Peers) -> ServiceModel {
        model::model(self, name)
    }

    fn identity(&self) -> Option<&IdentitySpec> {
        self.spec.identity.as_ref()
    }
}
