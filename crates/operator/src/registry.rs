//! Every OpenStack service Ratchet runs, listed once: [`visit_all`]. Each list
//! of services elsewhere (the controllers, the admission routes and their
//! registration, the RBAC rules, the CRDs, the CLI's targets) is derived from
//! it. Adding a service is its folder and a line here.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, GroupVersionKind};
use kube::core::crd::MergeError;

use crate::service::OpenStackService;

/// Something done once for each registered service, with its type.
pub trait ServiceVisitor {
    fn visit<S: OpenStackService>(&mut self);
}

/// Visits every service, in the order the CLI lists them.
pub fn visit_all<V: ServiceVisitor>(visitor: &mut V) {
    visitor.visit::<ratchet_api::cinder::v1beta1::Cinder>();
    visitor.visit::<ratchet_api::ironic::v1alpha1::Ironic>();
}

/// A value computed from a service's type, for [`map`].
pub trait PerService {
    type Item;
    fn of<S: OpenStackService>(&self) -> Self::Item;
}

/// One item per registered service, in [`visit_all`]'s order.
pub fn map<P: PerService>(per_service: &P) -> Vec<P::Item> {
    struct Collect<'a, P: PerService>(&'a P, Vec<P::Item>);
    impl<P: PerService> ServiceVisitor for Collect<'_, P> {
        fn visit<S: OpenStackService>(&mut self) {
            let item = self.0.of::<S>();
            self.1.push(item);
        }
    }
    let mut collect = Collect(per_service, Vec::new());
    visit_all(&mut collect);
    collect.1
}

/// Work for the one service a name picks, e.g. a CLI command's target.
pub trait ServiceFn {
    type Output;
    fn call<S: OpenStackService>(self) -> Self::Output;
}

/// Runs `work` with the type of the service named `service` ([`OpenStackService::SERVICE`]);
/// `None` when no service has that name.
pub fn with_service<F: ServiceFn>(service: &str, work: F) -> Option<F::Output> {
    struct Pick<'a, F: ServiceFn> {
        service: &'a str,
        work: Option<F>,
        output: Option<F::Output>,
    }
    impl<F: ServiceFn> ServiceVisitor for Pick<'_, F> {
        fn visit<S: OpenStackService>(&mut self) {
            if S::SERVICE == self.service
                && let Some(work) = self.work.take()
            {
                self.output = Some(work.call::<S>());
            }
        }
    }
    let mut pick = Pick {
        service,
        work: Some(work),
        output: None,
    };
    visit_all(&mut pick);
    pick.output
}

/// What lists of services need to know of one, without its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registered {
    /// [`OpenStackService::SERVICE`]: labels, metrics, CLI targets.
    pub service: &'static str,
    pub kind: String,
    pub group: String,
    /// The version the operator's types speak (the storage version).
    pub version: String,
    pub plural: String,
}

impl Registered {
    pub fn of<S: OpenStackService>() -> Self {
        Registered {
            service: S::SERVICE,
            kind: S::kind(&()).into_owned(),
            group: S::group(&()).into_owned(),
            version: S::version(&()).into_owned(),
            plural: S::plural(&()).into_owned(),
        }
    }

    /// The resource, for dynamic APIs that list any service's objects.
    pub fn api_resource(&self) -> ApiResource {
        let gvk = GroupVersionKind::gvk(&self.group, &self.version, &self.kind);
        ApiResource::from_gvk_with_plural(&gvk, &self.plural)
    }

    /// The CRD's name, `<plural>.<group>`.
    pub fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }
}

/// Every registered service, in [`visit_all`]'s order.
pub fn services() -> Vec<Registered> {
    struct Info;
    impl PerService for Info {
        type Item = Registered;
        fn of<S: OpenStackService>(&self) -> Registered {
            Registered::of::<S>()
        }
    }
    map(&Info)
}

/// The CRDs Ratchet ships, one per service, every served version in each.
pub fn crds() -> Result<Vec<CustomResourceDefinition>, MergeError> {
    struct Crd;
    impl PerService for Crd {
        type Item = Result<CustomResourceDefinition, MergeError>;
        fn of<S: OpenStackService>(&self) -> Self::Item {
            S::served_crd()
        }
    }
    map(&Crd).into_iter().collect()
}

/// The file a CRD is checked in as, under `deploy/crds/` and the chart's `crds/`.
pub fn crd_file(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

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
                "ironics.ironic.openstack.c5c3.io"
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
        visit_all(&mut vocabularies);
        assert_eq!(vocabularies.0.len(), services().len());
        for (service, decided, stored) in vocabularies.0 {
            assert_eq!(
                decided, stored,
                "{service}: profile phases vs the CRD's enum"
            );
        }
    }

    #[test]
    fn the_machine_s_profiles_are_the_registered_services() {
        let profiles: Vec<&str> = ratchet_phase_machine::profiles::all()
            .iter()
            .map(|p| p.service)
            .collect();
        let registered: Vec<&str> = services().iter().map(|s| s.service).collect();
        assert_eq!(profiles, registered);
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
        assert_eq!(with_service("Cinder", Kind), None);
        assert_eq!(with_service("nova", Kind), None);
    }
}
