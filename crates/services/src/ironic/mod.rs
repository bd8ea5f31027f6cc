//! Ironic: its resource, its profile, and on the shared controller its
//! conductors (a StatefulSet, for stable host names), which roll before the
//! API, pinned through `[DEFAULT] pin_release_version` during an upgrade's
//! first roll.

pub mod config;
pub mod model;
pub mod profile;
pub mod resource;
pub mod v1alpha1;

pub use resource::example_manifest;

use crate::ironic::v1alpha1::{Ironic, IronicStatus};
use ratchet_api::common::PendingEvent;
use ratchet_phase_machine::{DesiredStatus, Profile, SpecView, StatusView};

pub use crate::ironic::profile::{CONFIG_DIR, SERVICE};

use ratchet_api::identity::IdentitySpec;
use ratchet_operator::service::ServiceStatus;
use ratchet_operator::service::ini::{DATABASE_CONNECTION, ManagedOption, TRANSPORT_URL};
use ratchet_operator::service::model::ServiceModel;
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::status;
use ratchet_operator::service::{Example, OpenStackService};

impl OpenStackService for Ironic {
    const SERVICE: &'static str = SERVICE;
    const INSTALLED_RELEASE_ANNOTATION: &'static str = "ironic.c5c3.io/installed-release";
    const CHECK_REPORTED_ANNOTATION: &'static str = "ironic.c5c3.io/last-upgrade-check-job-uid";
    const MANAGED_OPTIONS: &'static [ManagedOption] = &[
        DATABASE_CONNECTION,
        TRANSPORT_URL,
        config::PIN_RELEASE_VERSION,
        config::HTTP_ROOT_OPTION,
        config::TFTP_ROOT_OPTION,
        config::API_WORKERS_OPTION,
    ];
    const DEFAULT_UID: i64 = 42422;

    fn example(name: &str, release: &str, repository: &str, _scale: usize) -> Example {
        Example {
            manifest: crate::ironic::example_manifest(name, release, repository, release, 2),
            shape: "2 APIs and 2 conductors".into(),
        }
    }

    fn real_example(name: &str, release: &str, repository: &str) -> Option<Example> {
        Some(Example {
            manifest: crate::ironic::resource::real_example_manifest(
                name, release, repository, 2, 2,
            ),
            shape: "2 APIs and 2 conductors (fake hardware)".into(),
        })
    }

    fn profile() -> Profile {
        crate::ironic::profile::profile()
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

    fn warnings(&self) -> Vec<String> {
        conductor_warnings(self.spec.conductor.replicas_or_default())
    }
}

/// Ironic stores the pin new pods run with beside what every service stores.
impl ServiceStatus for IronicStatus {
    fn view(&self) -> StatusView {
        self.upgrade.view()
    }

    fn decided(profile: &Profile, decided: &DesiredStatus) -> Self {
        IronicStatus {
            upgrade: ServiceStatus::decided(profile, decided),
            pinned_release: profile
                .pin_during(&decided.phase, &decided.installed_release)
                .unwrap_or_default(),
        }
    }

    fn pending_events(&self) -> &[PendingEvent] {
        self.upgrade.pending_events()
    }

    fn pending_events_mut(&mut self) -> &mut Vec<PendingEvent> {
        self.upgrade.pending_events_mut()
    }
}

/// Two conductors upgrade, but a stopping conductor waits for the other
/// services' hash rings to drop it only while more than one other conductor is
/// online (`get_online_conductor_count() > 1`, counted after it deregistered):
/// with two it stops taking RPC two seconds after deregistering, and a request
/// an API still routes to it is lost (docs/ironic.md, "Why three conductors").
fn conductor_warnings(replicas: i32) -> Vec<String> {
    if replicas == 2 {
        vec![
            "spec.conductor.replicas: with 2 conductors, a conductor that stops during a roll does not wait for the APIs' hash rings to drop it, and requests routed to it in those seconds fail; run 3 where requests must not fail during a roll".into(),
        ]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_conductors_are_warned_about_three_are_not() {
        assert_eq!(conductor_warnings(2).len(), 1);
        assert!(conductor_warnings(2)[0].starts_with("spec.conductor.replicas: with 2 conductors"));
        assert!(conductor_warnings(3).is_empty());
        // One conductor is HighlyAvailable's concern (a condition), not this warning's.
        assert!(conductor_warnings(1).is_empty());
    }
}
