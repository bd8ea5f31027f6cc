//! The service the demo installs and upgrades, read off the registry: its
//! resource, example manifest, image field, the phase Jobs a failure can be
//! injected into, and its profile (which phases can still be aborted).

use anyhow::Context;
use kube::api::{ApiResource, DynamicObject};
use ratchet_operator::registry::{Registered, ServiceFn};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::WorkloadKind;
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::plan::start_patch;
use ratchet_phase_machine::{JobRun, JobTemplate, Profile, SpecView, Step, job_runs};
use ratchet_release::Release;
use serde_json::Value;

use super::Inject;
use crate::local::EXAMPLE_REPOSITORY;
use ratchet_services::keystone::resource::authenticating;
use ratchet_services::{Registry, Services};
use ratchet_testenv::backing::MEMCACHED_PORT;
use ratchet_testenv::process_kubelet::images;

/// The OpenStack service of the demo, and its resource (named after the service).
#[derive(Clone, Debug)]
pub struct Service {
    registered: Registered,
    profile: Profile,
    manifest: Value,
    shape: String,
    spec: SpecView,
    /// The resource's Job groups (per-group Jobs run once for each).
    job_groups: Vec<String>,
    /// The workload a stuck roll hangs: the last StatefulSet in roll order, or
    /// the last workload when there is none (an API-only service).
    stalled_workload: String,
    /// Whether the resource authenticates through the demo's Keystone (a
    /// real run of a service whose model registers there).
    authenticated: bool,
}

/// The Keystone a real run's services authenticate through, and what they
/// find it and its token cache by.
pub const KEYSTONE: &str = "keystone";
pub const MEMCACHED: &str = "memcached";

/// The Secret holding `service`'s service user password.
pub fn password_secret(service: &str) -> String {
    format!("{service}-keystone")
}

/// The services `--service` accepts: every registered one.
pub fn names() -> Vec<&'static str> {
    Services::service_names()
}

impl Service {
    /// `service` at `release`, sized by `scale` (Cinder's volume back ends);
    /// `real`: as its real processes run it (`OpenStackService::real_example`).
    pub fn new(service: &str, release: &str, scale: usize, real: bool) -> anyhow::Result<Service> {
        struct Build<'a> {
            release: &'a str,
            scale: usize,
            real: bool,
        }
        impl ServiceFn for Build<'_> {
            type Output = anyhow::Result<Service>;
            fn call<S: OpenStackService>(self) -> Self::Output {
                let name = S::SERVICE;
                let mut example = if self.real {
                    S::real_example(name, self.release, &images::repository(name))
                        .with_context(|| format!("{name} has no real run yet"))?
                } else {
                    let repository = format!("{EXAMPLE_REPOSITORY}/{name}");
                    S::example(name, self.release, &repository, self.scale)
                };
                // A real run authenticates wherever the service can, as
                // production does: through the demo's Keystone.
                let with_identity = authenticating_here(name, example.manifest.clone());
                let authenticated = self.real && registers::<S>(name, &with_identity);
                if authenticated {
                    example.manifest = with_identity;
                }
                let object: S = serde_json::from_value(example.manifest.clone())
                    .with_context(|| format!("the example {name}"))?;
                let model = object.model(name, &Peers::none());
                let job_groups = model.job_group_names();
                let workloads = model.workloads;
                let stalled_workload = workloads
                    .iter()
                    .rfind(|w| w.kind == WorkloadKind::StatefulSet)
                    .or(workloads.last())
                    .map(|w| w.name.clone())
                    .unwrap_or_default();
                Ok(Service {
                    registered: Registered::of::<S>(),
                    profile: S::profile(),
                    manifest: example.manifest,
                    shape: example.shape,
                    spec: object.spec_view(),
                    job_groups,
                    stalled_workload,
                    authenticated,
                })
            }
        }
        Services::with_service(
            service,
            Build {
                release,
                scale,
                real,
            },
        )
        .with_context(|| format!("no service {service:?}: one of {:?}", names()))?
    }

    /// The name of the demo's resource (and the prefix of everything it owns).
    pub fn name(&self) -> &'static str {
        self.registered.service
    }

    pub fn kind(&self) -> &str {
        &self.registered.kind
    }

    pub fn resource(&self) -> ApiResource {
        self.registered.api_resource()
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The resource at the release it was made for.
    pub fn manifest(&self) -> Value {
        self.manifest.clone()
    }

    /// Whether the resource authenticates through the demo's Keystone.
    pub fn authenticated(&self) -> bool {
        self.authenticated
    }

    /// What the resource runs, in a few words.
    pub fn shape(&self) -> &str {
        &self.shape
    }

    /// Where the image tag lives, for what the demo prints.
    pub fn tag_field(&self) -> String {
        format!("{}.tag", self.spec.image_layout.pin_field())
    }

    /// The merge patch that moves release and image to `release` together.
    pub fn release_patch(&self, release: Release) -> Value {
        start_patch(&self.spec, &release.to_string())
    }

    /// The workload (a phase Job, or the roll's last step) an injected failure
    /// hits: the phase Jobs in the profile's order, then the workload to stall;
    /// empty when the service has nothing of the kind (no upgrade check).
    pub fn injected_into(&self, inject: Inject) -> String {
        let jobs: Vec<String> = self
            .profile
            .phase_job_runs(&self.job_groups)
            .iter()
            .map(JobRun::key)
            .collect();
        let job = match inject {
            Inject::FailSchema => jobs.first(),
            Inject::FailCheck | Inject::WarnCheck => {
                return self.check().map(|(job, _)| job).unwrap_or_default();
            }
            Inject::FailDataMigrations => jobs.last(),
            Inject::StuckRollout => return self.stalled_workload.clone(),
        };
        format!("{}-{}", self.name(), job.cloned().unwrap_or_default())
    }

    /// The phase Job that runs the upgrade check, and its template (which
    /// says what the check's wrapper writes as its termination message).
    pub fn check(&self) -> Option<(String, &JobTemplate)> {
        self.profile
            .phase_job_runs(&self.job_groups)
            .into_iter()
            .find(|run| run.template.reports_check())
            .map(|run| (format!("{}-{}", self.name(), run.key()), run.template))
    }

    /// The Jobs `phase` runs, in order (none for a roll).
    pub fn jobs_of(&self, phase: &str) -> Vec<String> {
        let Some((_, phase)) = self.profile.phase(phase) else {
            return Vec::new();
        };
        job_runs(phase.templates(), &self.job_groups)
            .iter()
            .map(|run| format!("{}-{}", self.name(), run.key()))
            .collect()
    }

    /// Whether DatabaseReady's `reason` says a phase (or the sync) failed for
    /// good: a phase's failure reason, one of its Jobs' named exit codes, or
    /// the steady-state sync's failure.
    pub fn is_failure(&self, reason: &str) -> bool {
        reason == ratchet_phase_machine::vocabulary::reason::DB_SYNC_FAILED
            || self.profile().phases.iter().any(|p| match &p.step {
                Step::Jobs {
                    templates,
                    failed_reason,
                    offline,
                } => {
                    *failed_reason == reason
                        || templates
                            .iter()
                            .chain(offline.as_ref().map(|o| &o.template))
                            .any(|t| t.exit_reasons.iter().any(|r| r.reason == reason))
                }
                Step::Roll { .. } => false,
            })
    }

    /// Whether reverting to the installed release still aborts in `phase`.
    pub fn abortable(&self, phase: &str) -> bool {
        self.profile().phase(phase).is_none_or(|(_, p)| p.abortable)
    }
}

/// `manifest` authenticating through the demo's Keystone and memcached.
fn authenticating_here(service: &str, manifest: Value) -> Value {
    let memcached = format!("{MEMCACHED}.{}.svc:{}", super::NAMESPACE, MEMCACHED_PORT);
    authenticating(manifest, KEYSTONE, &password_secret(service), &memcached)
}

/// Whether `S` authenticates through the Keystone `with_identity` (its
/// manifest) names: its model then registers it there (Keystone itself does
/// not).
fn registers<S: OpenStackService>(name: &str, with_identity: &Value) -> bool {
    serde_json::from_value::<S>(with_identity.clone())
        .is_ok_and(|object| object.model(name, &Peers::none()).registration.is_some())
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
        let service =
            |name: &str| Service::new(name, "2026.1", 1, false).expect("a registered service");
        let cases = [
            ("cinder", Inject::FailSchema, "cinder-db-expand"),
            ("cinder", Inject::FailCheck, "cinder-db-migrate"),
            ("cinder", Inject::WarnCheck, "cinder-db-migrate"),
            ("cinder", Inject::FailDataMigrations, "cinder-db-contract"),
            ("cinder", Inject::StuckRollout, "cinder-backup"),
            ("ironic", Inject::FailSchema, "ironic-db-upgrade"),
            ("ironic", Inject::FailCheck, "ironic-upgrade-check"),
            (
                "ironic",
                Inject::FailDataMigrations,
                "ironic-online-migrations",
            ),
            ("ironic", Inject::StuckRollout, "ironic-conductor"),
            ("keystone", Inject::FailSchema, "keystone-db-expand"),
            ("keystone", Inject::StuckRollout, "keystone-api"),
            // No upgrade check to fail: the demo refuses the flag.
            ("keystone", Inject::FailCheck, ""),
            ("glance", Inject::FailDataMigrations, "glance-db-contract"),
            ("glance", Inject::StuckRollout, "glance-api"),
        ];
        for (name, inject, workload) in cases {
            assert_eq!(
                service(name).injected_into(inject),
                workload,
                "{name} {inject:?}"
            );
        }
        let (cinder, ironic) = (service("cinder"), service("ironic"));
        let check = |s: &Service, rc| s.check().and_then(|(_, t)| t.check_result(rc));
        assert_eq!(
            check(&cinder, 0),
            Some((0, "cinder-status upgrade check exit 0".into()))
        );
        assert_eq!(
            check(&ironic, 1),
            Some((0, "ironic-status upgrade check exit 1".into()))
        );
        assert_eq!(
            ironic
                .jobs_of("OnlineMigrations")
                .last()
                .map(String::as_str),
            Some("ironic-online-migrations")
        );
        assert!(!ironic.abortable("OnlineMigrations"));
        assert!(ironic.is_failure("DatabaseNotCompatible"));
        assert!(cinder.is_failure("ContractFailed"));
        assert!(!cinder.is_failure("ExpandInProgress"));
        assert!(cinder.abortable("Contracting"));
        assert!(Service::new("heat", "2026.1", 1, false).is_err());
    }

    #[test]
    fn every_service_has_a_real_example_on_the_catalogues_images() {
        for name in names() {
            let service = Service::new(name, "2026.1", 1, true).expect("a real example");
            let image = &service.manifest()["spec"]["image"];
            assert_eq!(
                image["repository"],
                format!("ratchet.test/{name}"),
                "{name}: {image}"
            );
        }
    }

    #[test]
    fn a_real_run_authenticates_every_service_that_registers_in_keystone() {
        let authenticated: Vec<&str> = names()
            .into_iter()
            .filter(|name| {
                Service::new(name, "2026.1", 1, true)
                    .expect("a real example")
                    .authenticated()
            })
            .collect();
        assert_eq!(
            authenticated,
            ["cinder", "ironic", "glance", "placement", "nova", "neutron"]
        );
        let ironic = Service::new("ironic", "2026.1", 1, true).expect("ironic");
        let spec = &ironic.manifest()["spec"];
        assert_eq!(spec["identity"]["keystone"], KEYSTONE);
        assert_eq!(
            spec["identity"]["memcachedServers"][0],
            "memcached.demo.svc:11211"
        );
        assert!(spec["extraConfig"]["DEFAULT"]["auth_strategy"].is_null());
        // The simulated demo stays as the example is.
        let simulated = Service::new("ironic", "2026.1", 1, false).expect("ironic");
        assert!(!simulated.authenticated());
        assert!(simulated.manifest()["spec"]["identity"].is_null());
    }

    #[test]
    fn the_release_patch_moves_release_and_tag_where_each_keeps_its_tag() {
        let release: Release = "2026.2".parse().expect("release");
        let cinder = Service::new("cinder", "2026.1", 2, false).expect("cinder");
        assert_eq!(cinder.tag_field(), "spec.image.reference.tag");
        assert_eq!(cinder.shape(), "2 back end(s)");
        assert_eq!(
            cinder.release_patch(release),
            serde_json::json!({ "spec": {
                "openStackRelease": "2026.2",
                "image": { "reference": { "tag": "2026.2" } },
            } })
        );
        let ironic = Service::new("ironic", "2026.1", 1, false).expect("ironic");
        assert_eq!(ironic.tag_field(), "spec.image.tag");
        assert_eq!(
            ironic.release_patch(release),
            serde_json::json!({ "spec": { "openStackRelease": "2026.2", "image": { "tag": "2026.2" } } })
        );
    }
}
