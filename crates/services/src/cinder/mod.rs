//! Cinder: its resource (v1beta1, stored, and the deprecated v1alpha1, with
//! their conversion), its profile on the phase machine, and on the shared
//! controller its configuration and the workloads it runs, in roll order
//! (scheduler → every volume back end → backup → api).

pub mod config;
pub mod conversion;
pub mod drain;
pub mod filters;
pub mod model;
pub mod paste;
pub mod profile;
pub mod resource;
pub mod v1alpha1;
pub mod v1beta1;

pub use resource::{
    BackupSpec, CONVERSION_PATH, DEFAULT_CONVERSION_SERVICE, V1ALPHA1_DEPRECATION_WARNING, crd,
    crd_v1beta1_storage, example_manifest, example_v1alpha1,
};

use crate::cinder::v1beta1::Cinder;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::crd::MergeError;
use ratchet_phase_machine::{Profile, SpecView};

use ratchet_release::Release;

use ratchet_api::common::UpgradePolicy;
use ratchet_api::identity::IdentitySpec;
use ratchet_operator::service::ini::{DATABASE_CONNECTION, ManagedOption, TRANSPORT_URL};
use ratchet_operator::service::model::ServiceModel;
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::status;
use ratchet_operator::service::{Conversion, Example, OpenStackService};
use ratchet_operator::webhooks::validation::is_dns_label;

impl OpenStackService for Cinder {
    const SERVICE: &'static str = model::SERVICE;
    const INSTALLED_RELEASE_ANNOTATION: &'static str = "cinder.c5c3.io/installed-release";
    const CHECK_REPORTED_ANNOTATION: &'static str = "cinder.c5c3.io/last-upgrade-check-job-uid";
    const MANAGED_OPTIONS: &'static [ManagedOption] = &[
        DATABASE_CONNECTION,
        TRANSPORT_URL,
        config::HOST,
        config::API_PASTE_CONFIG,
    ];
    const ENVIRONMENT_OPTIONS: &'static [ManagedOption] = &[
        DATABASE_CONNECTION,
        TRANSPORT_URL,
        ENABLED_BACKENDS,
        config::HOST,
        config::API_PASTE_CONFIG,
    ];
    const DEFAULT_UID: i64 = 42407;

    fn served_crd() -> Result<CustomResourceDefinition, MergeError> {
        crate::cinder::crd()
    }

    fn conversion() -> Option<Conversion> {
        Some(Conversion {
            path: crate::cinder::CONVERSION_PATH,
            convert: |object, desired| {
                crate::cinder::conversion::convert(object, desired).map_err(|e| e.to_string())
            },
        })
    }

    fn example(name: &str, release: &str, repository: &str, scale: usize) -> Example {
        let backends: Vec<String> = (1..=scale).map(|i| format!("backend{i}")).collect();
        let backends: Vec<&str> = backends.iter().map(String::as_str).collect();
        Example {
            manifest: crate::cinder::example_manifest(
                name, release, repository, release, &backends,
            ),
            shape: format!("{scale} back end(s)"),
        }
    }

    fn real_example(name: &str, release: &str, repository: &str) -> Option<Example> {
        Some(Example {
            manifest: crate::cinder::resource::real_example_manifest(name, release, repository),
            shape: "2 APIs, 2 schedulers, 2 back ends (sparse files on claims), backup".into(),
        })
    }

    fn profile() -> Profile {
        model::profile()
    }

    fn spec_view(&self) -> SpecView {
        let mut view = status::spec_view::<Self>(
            self.metadata.generation,
            &self.spec.open_stack_release,
            &self.spec.image.to_image_spec(),
            ratchet_release::ImageLayout::Reference,
            &self.spec.extra_config,
            &self.spec.secret_options,
        );
        // The back ends' options are written into cinder.conf too.
        view.invalid_config
            .extend(config::backend_violations(&self.spec));
        view.invalid_config
            .extend(config::backup_violations(&self.spec));
        view.invalid_config
            .extend(config::identity_refusals(&self.spec));
        view.max_parallel = UpgradePolicy::parallel_bound(self.spec.upgrade.as_ref());
        view
    }

    fn model(&self, name: &str, _peers: &Peers) -> ServiceModel {
        model::model(self, name)
    }

    fn identity(&self) -> Option<&IdentitySpec> {
        self.spec.identity.as_ref()
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

    fn warnings(&self) -> Vec<String> {
        let mut warnings: Vec<String> = volume_names_privileged(self)
            .map(|name| format!(
                "spec.volumeBackends[{name:?}].privileged: its cinder-volume pods run as root, privileged, with privilege escalation allowed"
            ))
            .collect();
        if self.spec.backup.privileged && config::backup_replicas(&self.spec) > 0 {
            warnings.push(
                "spec.backup.privileged: its cinder-backup pods run as root, privileged, with privilege escalation allowed".to_string(),
            );
        }
        warnings.extend(shared_host_warnings(self));
        warnings
    }
}

/// `[DEFAULT] enabled_backends`: each volume Deployment serves its own back end
/// through the environment, so no secret option may set it.
const ENABLED_BACKENDS: ManagedOption = ManagedOption {
    section: "DEFAULT",
    option: "enabled_backends",
    set_from: "spec.volumeBackends (each volume Deployment's own back end)",
};

/// Back ends with more than one replica: their pods share the back end's
/// `backend_host`, and a cinder-volume that starts cleans up the unfinished
/// work recorded under that host, including a running sibling's, unless
/// `[DEFAULT] cluster` makes them one active-active cluster.
fn shared_host_warnings(cinder: &Cinder) -> Vec<String> {
    let clustered = cinder
        .spec
        .extra_config
        .get("DEFAULT")
        .is_some_and(|d| d.contains_key("cluster"));
    if clustered {
        return Vec::new();
    }
    cinder
        .spec
        .volume_backends
        .iter()
        .filter(|b| b.replicas.is_some_and(|r| r > 1))
        .map(|b| format!(
            "spec.volumeBackends[{:?}].replicas: its {} cinder-volume pods share one service host; without extraConfig.DEFAULT.cluster each cleans up the others' unfinished work when it starts",
            b.name,
            b.replicas.unwrap_or_default()
        ))
        .collect()
}

/// The entry of a per-release table (each entry keyed by the first release
/// series it holds for, oldest first) for `release`: the newest entry not after
/// it; the newest for a release that does not parse, the oldest for one before all.
fn for_release<'a, T>(table: &'a [(&'static str, T)], release: Option<Release>) -> Option<&'a T> {
    table
        .iter()
        .rev()
        .find(|(since, _)| release.is_none_or(|r| Release::parse(since).is_ok_and(|s| s <= r)))
        .or(table.first())
        .map(|(_, entry)| entry)
}

/// The names of the back ends that opted in to privilege, each once.
fn volume_names_privileged(cinder: &Cinder) -> impl Iterator<Item = String> + '_ {
    model::volume_names(cinder)
        .into_iter()
        .filter(|name| model::privileged(cinder, name))
}

#[cfg(test)]
mod tests {
    use ratchet_operator::service::peers::Peers;
    use std::collections::BTreeMap;

    use ratchet_phase_machine::vocabulary::{condition, reason};
    use ratchet_phase_machine::{Observed, Outcome, decide};

    use super::*;
    use ratchet_operator::service::status::observed_spec;

    fn cinder(extra: serde_json::Value) -> Cinder {
        cinder_with(
            serde_json::json!([{ "name": "lvm", "options": { "volume_driver": "lvm" } }]),
            extra,
        )
    }

    fn cinder_with(backends: serde_json::Value, extra: serde_json::Value) -> Cinder {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "cinder.openstack.c5c3.io/v1beta1",
            "kind": "Cinder",
            "metadata": { "name": "c", "namespace": "ns", "generation": 1 },
            "spec": {
                "openStackRelease": "2026.1",
                "image": { "repository": "cinder", "reference": { "tag": "2026.1" } },
                "database": { "secretName": "db", "key": "connection" },
                "transport": { "secretName": "mq", "key": "url" },
                "volumeBackends": backends,
                "extraConfig": extra,
            }
        }))
        .expect("cinder")
    }

    fn observed(cinder: &Cinder, model: &ServiceModel) -> Observed {
        Observed {
            spec: observed_spec(cinder, model),
            status: cinder.status_view(),
            config_hash: String::new(),
            missing_secrets: Vec::new(),
            children_in_the_way: Vec::new(),
            jobs: BTreeMap::new(),
            job_groups: Vec::new(),
            workloads: BTreeMap::new(),
            desired_workloads: model.workload_ids(),
            reported_check_job: None,
            registration: None,
            now: "2026-12-01T10:00:00Z".into(),
        }
    }

    /// With the schema and the webhook out of the way (an object written
    /// before they existed, or a cluster where they were edited), the renderer
    /// still refuses: nothing is rendered, and the machine blocks with
    /// InvalidConfig on DatabaseReady and Ready, creating nothing.
    #[test]
    fn an_injected_section_blocks_with_invalid_config_and_renders_nothing() {
        let hostile = cinder(serde_json::json!({
            "DEFAULT": { "debug": "true\n[database]\nconnection = mysql://evil" },
            "weird]\n[keystone_authtoken": { "auth_type": "none" },
        }));
        let model = hostile.model("c", &Peers::none());
        let refused = model.config.clone().expect_err("the renderer refuses");
        assert_eq!(refused.len(), 2, "{refused:?}");
        let decision = decide(&Cinder::profile(), &observed(&hostile, &model));
        assert!(
            decision.jobs.is_empty() && decision.workloads.is_empty(),
            "{decision:?}"
        );
        assert!(matches!(decision.outcome, Outcome::Failed { .. }));
        let of = |kind: &str| {
            decision
                .status
                .conditions
                .iter()
                .find(|c| c.kind == kind)
                .cloned()
                .expect(kind)
        };
        let db = of(condition::DATABASE_READY);
        assert_eq!(
            (db.status, db.reason.as_str()),
            (false, reason::INVALID_CONFIG)
        );
        for message in &refused {
            assert!(db.message.contains(message.as_str()), "{}", db.message);
        }
        assert!(!of(condition::READY).status);
        // The webhook refuses with the same messages.
        assert_eq!(
            ratchet_operator::webhooks::validation::validate(&hostile, None),
            refused
        );

        let fine = cinder(serde_json::json!({ "DEFAULT": { "debug": "true" } }));
        let model = fine.model("c", &Peers::none());
        assert!(
            model
                .config
                .as_ref()
                .is_ok_and(|t| t.contains("debug = true\n"))
        );
        assert!(observed_spec(&fine, &model).invalid_config.is_empty());
    }

    /// What only the renderer sees (a back-end name the schema would refuse)
    /// still reaches the machine.
    #[test]
    fn a_refusal_only_the_renderer_sees_still_blocks() {
        let mut odd = cinder(serde_json::json!({}));
        odd.spec.volume_backends[0].name = "lvm]\n[database".into();
        let model = odd.model("c", &Peers::none());
        assert!(model.config.is_err());
        assert!(odd.spec_view().invalid_config.is_empty());
        let spec = observed_spec(&odd, &model);
        assert!(!spec.invalid_config.is_empty(), "{spec:?}");
        let decision = decide(&Cinder::profile(), &observed(&odd, &model));
        assert!(decision.jobs.is_empty() && decision.workloads.is_empty());
    }

    /// Back end `two` runs two pods on one service host.
    fn shared(extra: serde_json::Value) -> Cinder {
        cinder_with(
            serde_json::json!([{ "name": "one" }, { "name": "two", "replicas": 2 }]),
            extra,
        )
    }

    #[test]
    fn a_back_end_with_replicas_sharing_its_host_is_warned_about_unless_clustered() {
        assert_eq!(
            shared(serde_json::json!({})).warnings(),
            [
                "spec.volumeBackends[\"two\"].replicas: its 2 cinder-volume pods share one service host; without extraConfig.DEFAULT.cluster each cleans up the others' unfinished work when it starts"
            ]
        );
        let clustered = shared(serde_json::json!({ "DEFAULT": { "cluster": "c" } }));
        assert!(clustered.warnings().is_empty());
    }
}
