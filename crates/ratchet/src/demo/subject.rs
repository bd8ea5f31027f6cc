//! The service the demo installs and upgrades, and what differs between them:
//! its resource, manifest, image field, the phase Jobs a failure can be
//! injected into, and its profile (which phases can still be aborted).

use kube::api::{ApiResource, DynamicObject};
use ratchet_api::cinder::v1beta1::Cinder;
use ratchet_api::ironic::v1alpha1::Ironic;
use ratchet_operator::service::OpenStackService;
use ratchet_phase_machine::{Profile, Step};
use ratchet_release::Release;
use serde_json::{Value, json};

use super::Inject;

const REPOSITORY: &str = "registry.invalid/openstack";

/// The OpenStack service of the demo.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Service {
    /// Expand, migrate (upgrade check), roll, contract, then the second roll.
    Cinder,
    /// Schema upgrade, upgrade check, pinned roll, unpin, online data migrations.
    Ironic,
}

impl Service {
    /// The name of the demo's resource (and the prefix of everything it owns).
    pub fn name(self) -> &'static str {
        match self {
            Service::Cinder => "cinder",
            Service::Ironic => "ironic",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Service::Cinder => "Cinder",
            Service::Ironic => "Ironic",
        }
    }

    pub fn resource(self) -> ApiResource {
        match self {
            Service::Cinder => ApiResource::erase::<Cinder>(&()),
            Service::Ironic => ApiResource::erase::<Ironic>(&()),
        }
    }

    pub fn profile(self) -> Profile {
        match self {
            Service::Cinder => Cinder::profile(),
            Service::Ironic => Ironic::profile(),
        }
    }

    /// The resource at `release`; Cinder with `backends` volume back ends,
    /// Ironic with two APIs and two conductors.
    pub fn manifest(self, release: &str, backends: usize) -> Value {
        let repository = format!("{REPOSITORY}/{}", self.name());
        match self {
            Service::Cinder => {
                let names: Vec<String> = (1..=backends).map(|i| format!("backend{i}")).collect();
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                ratchet_api::cinder::example_manifest(
                    self.name(),
                    release,
                    &repository,
                    release,
                    &refs,
                )
            }
            Service::Ironic => {
                ratchet_api::ironic::example_manifest(self.name(), release, &repository, release, 2)
            }
        }
    }

    /// Where the image tag lives, for what the demo prints.
    pub fn tag_field(self) -> &'static str {
        match self {
            Service::Cinder => "spec.image.reference.tag",
            Service::Ironic => "spec.image.tag",
        }
    }

    /// The merge patch that moves release and image to `release` together.
    pub fn release_patch(self, release: Release) -> Value {
        let release = release.to_string();
        match self {
            Service::Cinder => json!({ "spec": {
                "openStackRelease": release,
                "image": { "reference": { "tag": release } },
            } }),
            Service::Ironic => json!({ "spec": {
                "openStackRelease": release,
                "image": { "tag": release },
            } }),
        }
    }

    /// The workload (a phase Job, or the roll's last step) an injected failure
    /// hits: the phase Jobs in the profile's order, then the workload to stall.
    pub fn injected_into(self, inject: Inject) -> String {
        let jobs: Vec<&str> = self
            .profile()
            .phases
            .iter()
            .filter_map(|p| match &p.step {
                Step::Job { template, .. } => Some(template.suffix),
                Step::Roll { .. } => None,
            })
            .collect();
        let suffix = match (inject, self) {
            (Inject::FailSchema, _) => jobs.first().copied(),
            (Inject::FailCheck, _) => jobs.get(1).copied(),
            (Inject::FailDataMigrations, _) => jobs.last().copied(),
            (Inject::StuckRollout, Service::Cinder) => Some("backup"),
            (Inject::StuckRollout, Service::Ironic) => Some("conductor"),
        };
        format!("{}-{}", self.name(), suffix.unwrap_or_default())
    }

    /// The phase Job of `phase`, if that phase runs one.
    pub fn job_of(self, phase: &str) -> Option<String> {
        match &self.profile().phase(phase)?.1.step {
            Step::Job { template, .. } => Some(format!("{}-{}", self.name(), template.suffix)),
            Step::Roll { .. } => None,
        }
    }

    /// Whether DatabaseReady's `reason` says a phase (or the sync) failed for
    /// good: a phase's failure reason, one of its Jobs' named exit codes, or
    /// the steady-state sync's failure.
    pub fn is_failure(self, reason: &str) -> bool {
        reason == ratchet_phase_machine::vocabulary::reason::DB_SYNC_FAILED
            || self.profile().phases.iter().any(|p| match &p.step {
                Step::Job {
                    template,
                    failed_reason,
                } => {
                    *failed_reason == reason
                        || template.exit_reasons.iter().any(|r| r.reason == reason)
                }
                Step::Roll { .. } => false,
            })
    }

    /// Whether reverting to the installed release still aborts in `phase`.
    pub fn abortable(self, phase: &str) -> bool {
        self.profile().phase(phase).is_none_or(|(_, p)| p.abortable)
    }
}

/// Whether the status describes the current spec.
pub fn observed_current(object: &DynamicObject) -> bool {
    object.data["status"]["observedGeneration"].as_i64() == object.metadata.generation
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_land_in_each_services_own_jobs() {
        let cases = [
            (Service::Cinder, Inject::FailSchema, "cinder-db-expand"),
            (Service::Cinder, Inject::FailCheck, "cinder-db-migrate"),
            (
                Service::Cinder,
                Inject::FailDataMigrations,
                "cinder-db-contract",
            ),
            (Service::Cinder, Inject::StuckRollout, "cinder-backup"),
            (Service::Ironic, Inject::FailSchema, "ironic-db-upgrade"),
            (Service::Ironic, Inject::FailCheck, "ironic-upgrade-check"),
            (
                Service::Ironic,
                Inject::FailDataMigrations,
                "ironic-online-migrations",
            ),
            (Service::Ironic, Inject::StuckRollout, "ironic-conductor"),
        ];
        for (service, inject, workload) in cases {
            assert_eq!(
                service.injected_into(inject),
                workload,
                "{service:?} {inject:?}"
            );
        }
        assert_eq!(
            Service::Ironic.job_of("OnlineMigrations").as_deref(),
            Some("ironic-online-migrations")
        );
        assert!(!Service::Ironic.abortable("OnlineMigrations"));
        assert!(Service::Ironic.is_failure("DatabaseNotCompatible"));
        assert!(Service::Cinder.is_failure("ContractFailed"));
        assert!(!Service::Cinder.is_failure("ExpandInProgress"));
        assert!(Service::Cinder.abortable("Contracting"));
    }
}
