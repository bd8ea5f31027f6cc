//! The OpenStack services Ratchet upgrades, one folder each: a service's
//! resource types (every API version and their conversion), its profile on
//! the phase machine, and the model and configuration of what it runs. The
//! operator (`ratchet-operator`) is generic over a [`Registry`]; [`Services`]
//! is the one Ratchet ships. Adding a service is its folder and a line in
//! [`Services::visit_all`].

pub mod cinder;
pub mod glance;
pub mod ironic;
pub mod keystone;
pub mod neutron;
pub mod nova;
pub mod placement;
#[cfg(test)]
mod shared_tests;
pub mod testing;

pub use ratchet_operator::registry::Registry;
use ratchet_operator::registry::ServiceVisitor;

/// Every service Ratchet runs, in the order the CLI lists them.
pub struct Services;

impl Registry for Services {
    fn visit_all<V: ServiceVisitor>(visitor: &mut V) {
        visitor.visit::<cinder::v1beta1::Cinder>();
        visitor.visit::<ironic::v1alpha1::Ironic>();
        visitor.visit::<keystone::v1alpha1::Keystone>();
        visitor.visit::<glance::v1alpha1::Glance>();
        visitor.visit::<placement::v1alpha1::Placement>();
        visitor.visit::<nova::v1alpha1::Nova>();
        visitor.visit::<neutron::v1alpha1::Neutron>();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::core::crd::MergeError;
    use ratchet_operator::registry::{Registered, ServiceFn, ServiceVisitor, crd_file};
    use ratchet_operator::service::OpenStackService;

    fn crds() -> Result<Vec<CustomResourceDefinition>, MergeError> {
        Services::crds()
    }

    fn services() -> Vec<Registered> {
        Services::services()
    }

    fn with_service<F: ServiceFn>(service: &str, work: F) -> Option<F::Output> {
        Services::with_service(service, work)
    }

    #[test]
    fn every_service_has_one_crd_named_after_it() {
        let crds = crds().expect("the CRDs build");
        let names: Vec<String> = crds
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        let expected: Vec<String> = services().iter().map(Registered::crd_name).collect();
        assert_eq!(names, expected);
        assert_eq!(
            expected,
            [
                "cinders.cinder.openstack.c5c3.io",
                "ironics.ironic.openstack.c5c3.io",
                "keystones.keystone.openstack.c5c3.io",
                "glances.glance.openstack.c5c3.io",
                "placements.placement.openstack.c5c3.io",
                "novas.nova.openstack.c5c3.io",
                "neutrons.neutron.openstack.c5c3.io"
            ]
        );
        for (crd, service) in crds.iter().zip(services()) {
            let storage: Vec<&str> = crd
                .spec
                .versions
                .iter()
                .filter(|v| v.storage)
                .map(|v| v.name.as_str())
                .collect();
            assert_eq!(storage, [service.version.as_str()], "{}", service.service);
        }
    }

    #[test]
    fn checked_in_crds_match_the_types() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds");
        for crd in crds().expect("the CRDs build") {
            let file = crd_file(&crd);
            let generated = ratchet_api::crd_yaml(&crd).expect("CRD serialises");
            let checked_in = std::fs::read_to_string(dir.join(&file)).unwrap_or_default();
            assert!(
                generated == checked_in,
                "deploy/crds/{file} is out of date: run `cargo run -p ratchet -- crds --write deploy/crds`"
            );
        }
    }

    /// The phase names a profile decides and the ones its CRD can store are one
    /// vocabulary: a phase missing from the CRD's enum could not be written.
    #[test]
    fn every_profile_phase_is_a_phase_its_crd_stores() {
        struct Vocabularies(Vec<(&'static str, Vec<String>, Vec<String>)>);
        impl ServiceVisitor for Vocabularies {
            fn visit<S: OpenStackService>(&mut self) {
                let crd = serde_json::to_value(S::served_crd().expect("the CRD builds"))
                    .expect("CRD serialises");
                let stored = crd["spec"]["versions"]
                    .as_array()
                    .and_then(|versions| versions.iter().find(|v| v["storage"] == true))
                    .map(|v| {
                        v["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
                            ["upgradePhase"]["enum"]
                            .clone()
                    })
                    .unwrap_or_default();
                let stored: Vec<String> = serde_json::from_value(stored).unwrap_or_default();
                let decided = std::iter::once(String::new())
                    .chain(S::profile().phases.iter().map(|p| p.name.to_string()))
                    .collect();
                self.0.push((S::SERVICE, decided, stored));
            }
        }
        let mut vocabularies = Vocabularies(Vec::new());
        Services::visit_all(&mut vocabularies);
        assert_eq!(vocabularies.0.len(), services().len());
        for (service, decided, stored) in vocabularies.0 {
            assert_eq!(
                decided, stored,
                "{service}: profile phases vs the CRD's enum"
            );
        }
    }

    #[test]
    fn a_name_picks_its_service_and_nothing_else() {
        struct Kind;
        impl ServiceFn for Kind {
            type Output = String;
            fn call<S: OpenStackService>(self) -> String {
                S::kind(&()).into_owned()
            }
        }
        assert_eq!(with_service("cinder", Kind).as_deref(), Some("Cinder"));
        assert_eq!(with_service("ironic", Kind).as_deref(), Some("Ironic"));
        assert_eq!(with_service("keystone", Kind).as_deref(), Some("Keystone"));
        assert_eq!(with_service("glance", Kind).as_deref(), Some("Glance"));
        assert_eq!(with_service("neutron", Kind).as_deref(), Some("Neutron"));
        assert_eq!(with_service("Cinder", Kind), None);
        assert_eq!(with_service("nova", Kind).as_deref(), Some("Nova"));
        assert_eq!(with_service("swift", Kind), None);
    }
}
