//! The list of OpenStack services an operator runs, as a type: a
//! [`Registry`] visits each service once ([`Registry::visit_all`]), and every
//! list of services (the controllers, the admission routes and their
//! registration, the RBAC rules, the CRDs, the CLI's targets) is derived from
//! it. The operator is generic over it and names no service; the services and
//! the one registry Ratchet ships live in `ratchet-services`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, GroupVersionKind};
use kube::core::crd::MergeError;
use ratchet_phase_machine::Profile;

use crate::service::contract::OpenStackService;

/// Something done once for each registered service, with its type.
pub trait ServiceVisitor {
    fn visit<S: OpenStackService>(&mut self);
}

/// A value computed from a service's type, for [`Registry::map`].
pub trait PerService {
    type Item;
    fn of<S: OpenStackService>(&self) -> Self::Item;
}

/// Work for the one service a name picks, e.g. a CLI command's target.
pub trait ServiceFn {
    type Output;
    fn call<S: OpenStackService>(self) -> Self::Output;
}

/// A set of services, each visited once in the order the CLI lists them.
pub trait Registry: Send + Sync + 'static {
    /// Calls `visitor` once per service type.
    fn visit_all<V: ServiceVisitor>(visitor: &mut V);

    /// One item per service, in [`Registry::visit_all`]'s order.
    fn map<P: PerService>(per_service: &P) -> Vec<P::Item> {
        struct Collect<'a, P: PerService>(&'a P, Vec<P::Item>);
        impl<P: PerService> ServiceVisitor for Collect<'_, P> {
            fn visit<S: OpenStackService>(&mut self) {
                let item = self.0.of::<S>();
                self.1.push(item);
            }
        }
        let mut collect = Collect(per_service, Vec::new());
        Self::visit_all(&mut collect);
        collect.1
    }

    /// Runs `work` with the type of the service named `service`
    /// ([`OpenStackService::SERVICE`]); `None` when no service has that name.
    fn with_service<F: ServiceFn>(service: &str, work: F) -> Option<F::Output> {
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
        Self::visit_all(&mut pick);
        pick.output
    }

    /// Every service, without its type.
    fn services() -> Vec<Registered> {
        struct Info;
        impl PerService for Info {
            type Item = Registered;
            fn of<S: OpenStackService>(&self) -> Registered {
                Registered::of::<S>()
            }
        }
        Self::map(&Info)
    }

    /// Every service's [`OpenStackService::SERVICE`] name.
    fn service_names() -> Vec<&'static str> {
        Self::services().iter().map(|s| s.service).collect()
    }

    /// The CRDs Ratchet ships, one per service, every served version in each.
    fn crds() -> Result<Vec<CustomResourceDefinition>, MergeError> {
        struct Crd;
        impl PerService for Crd {
            type Item = Result<CustomResourceDefinition, MergeError>;
            fn of<S: OpenStackService>(&self) -> Self::Item {
                S::served_crd()
            }
        }
        Self::map(&Crd).into_iter().collect()
    }

    /// Every service's profile on the phase machine, for tests that run over
    /// all of them.
    fn profiles() -> Vec<Profile> {
        struct Profiles;
        impl PerService for Profiles {
            type Item = Profile;
            fn of<S: OpenStackService>(&self) -> Profile {
                S::profile()
            }
        }
        Self::map(&Profiles)
    }
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

/// The file a CRD is checked in as, under `deploy/crds/` and the chart's `crds/`.
pub fn crd_file(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or_default())
}
