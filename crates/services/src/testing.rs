//! Example Cinders for the tests, benchmarks and the demo: one created in a
//! namespace, and the predicate that it settled at a release.

use kube::api::PostParams;
use kube::{Api, Client};

use crate::cinder::v1beta1::{Cinder, CinderUpgradePhase};

pub const EXAMPLE_REPOSITORY: &str = "registry.invalid/openstack/cinder";

/// Installed at `release`, no upgrade running, Ready and every workload rolled
/// out (the second roll too) for the current generation.
pub fn settled_at(release: &str) -> impl Fn(&Cinder) -> bool + use<> {
    let release = release.to_string();
    move |c: &Cinder| {
        c.status.as_ref().is_some_and(|s| {
            let holds = |kind: &str| {
                s.conditions
                    .iter()
                    .any(|x| x.type_ == kind && x.status == "True")
            };
            s.installed_release == release
                && s.upgrade_phase == CinderUpgradePhase::None
                && s.observed_generation == c.metadata.generation
                && holds("Ready")
                && holds("DeploymentsReady")
        })
    }
}

/// Creates an example Cinder (tag = release) in `namespace`; returns the namespaced Api.
pub async fn create_example_cinder(
    client: &Client,
    namespace: &str,
    name: &str,
    release: &str,
    backends: &[&str],
) -> anyhow::Result<Api<Cinder>> {
    let cinder: Cinder = serde_json::from_value(crate::cinder::example_manifest(
        name,
        release,
        EXAMPLE_REPOSITORY,
        release,
        backends,
    ))?;
    let api: Api<Cinder> = Api::namespaced(client.clone(), namespace);
    api.create(&PostParams::default(), &cinder).await?;
    Ok(api)
}

/// The CRDs as Ratchet shipped them before Cinder v1beta1: Cinder served and
/// stored as v1alpha1 only. Where stored-version migration is shown and measured.
pub async fn install_crds_before_v1beta1(
    client: &Client,
    timeout: std::time::Duration,
) -> anyhow::Result<()> {
    use kube::CustomResourceExt;
    let crds = [
        crate::cinder::v1alpha1::Cinder::crd(),
        crate::ironic::v1alpha1::Ironic::crd(),
    ];
    Ok(ratchet_operator::install::apply_crds(client, crds, timeout).await?)
}
