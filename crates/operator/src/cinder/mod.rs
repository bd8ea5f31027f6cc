//! The Cinder service on the shared controller: its configuration and the
//! workloads it runs, in roll order (scheduler → every volume back end → backup
//! → api).

pub mod config;
pub mod profile;

use ratchet_api::cinder::v1beta1::{Cinder, CinderStatus, CinderUpgradePhase};
use ratchet_phase_machine::{DesiredStatus, Profile, SpecView, StatusView};

use crate::service::OpenStackService;
use crate::service::ini::{DATABASE_CONNECTION, ManagedOption, TRANSPORT_URL};
use crate::service::model::ServiceModel;
use crate::service::status::{self, Stored};
use crate::webhooks::validation::is_dns_label;

impl OpenStackService for Cinder {
    type Status = CinderStatus;

    const SERVICE: &'static str = profile::SERVICE;
    const INSTALLED_RELEASE_ANNOTATION: &'static str = "cinder.c5c3.io/installed-release";
    const CHECK_REPORTED_ANNOTATION: &'static str = "cinder.c5c3.io/last-upgrade-check-job-uid";
    const MANAGED_OPTIONS: &'static [ManagedOption] = &[DATABASE_CONNECTION, TRANSPORT_URL];

    fn profile() -> Profile {
        profile::profile()
    }

    fn spec_view(&self) -> SpecView {
        status::spec_view(
            self.metadata.generation,
            &self.spec.open_stack_release,
            &self.spec.image.to_image_spec(),
            ratchet_release::ImageLayout::Reference,
            &self.spec.extra_config,
            Self::MANAGED_OPTIONS,
        )
    }

    fn status_view(&self) -> StatusView {
        let Some(s) = self.status.as_ref() else {
            return StatusView::default();
        };
        status::view(Stored {
            installed_release: &s.installed_release,
            target_release: &s.target_release,
            phase: status::phase_name(&s.upgrade_phase),
            phase_started_at: &s.upgrade_phase_started_at,
            conditions: &s.conditions,
        })
    }

    fn current_status(&self) -> Option<&CinderStatus> {
        self.status.as_ref()
    }

    fn desired_status(_: &Profile, decided: &DesiredStatus) -> CinderStatus {
        CinderStatus {
            installed_release: decided.installed_release.clone(),
            target_release: decided.target_release.clone(),
            upgrade_phase: status::phase_of::<CinderUpgradePhase>(&decided.phase),
            upgrade_phase_started_at: decided.phase_started_at.clone(),
            rolling_workload: decided.rolling_workload.clone(),
            conditions: status::conditions(decided),
            observed_generation: Some(decided.observed_generation),
        }
    }

    fn model(&self, name: &str) -> ServiceModel {
        profile::model(self, name)
    }

    fn violations(&self) -> Vec<String> {
        let mut seen = std::collections::BTreeSet::new();
        let mut violations: Vec<String> = self
            .spec
            .volume_backends
            .iter()
            .map(|b| b.name.as_str())
            .filter(|name| !is_dns_label(name) || name.len() > 40)
            .map(|name| format!(
                "spec.volumeBackends: back-end name {name:?} must be a lowercase DNS label of at most 40 characters"
            ))
            .collect();
        // The list is keyed by name on the server, but a client-side update
        // (PUT) can still send a repeated name.
        for backend in &self.spec.volume_backends {
            if !seen.insert(backend.name.as_str()) {
                violations.push(format!(
                    "spec.volumeBackends: back-end name {:?} appears more than once",
                    backend.name
                ));
            }
        }
        violations
    }
}
