//! A claim of each pod's own (Nova's fake computes keep their node identity
//! in one): rendered as the StatefulSet's claim template and mounted in its
//! pods; refused for a kind that has no claim templates.

use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::{PodClaim, WorkloadKind};
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::render::{self, Owner, PodParams};

use crate::ironic::v1alpha1::Ironic;

fn params() -> PodParams<'static> {
    PodParams {
        image: "ironic:2026.1",
        installed_release: "2026.1",
        pin: None,
        config_hash: "h",
        installed_release_annotation: Ironic::INSTALLED_RELEASE_ANNOTATION,
        stopped: false,
        partition: None,
    }
}

#[test]
fn a_stateful_set_s_pods_each_get_their_own_claim_mounted() {
    let ironic: Ironic = super::stored(crate::ironic::example_manifest(
        "i", "2026.1", "repo", "2026.1", 2,
    ));
    let owner = Owner::of(crate::ironic::SERVICE, &ironic).expect("owner");
    let mut model = ironic.model("i", &Peers::none());
    let claim = PodClaim {
        name: "state".into(),
        mount_path: "/var/lib/ironic/state".into(),
        size: "1Gi".into(),
    };
    let (conductor, api) = {
        let conductor = model
            .workloads
            .iter_mut()
            .find(|w| w.kind == WorkloadKind::StatefulSet)
            .expect("the conductors");
        conductor.pod_claims = vec![claim.clone()];
        let conductor = conductor.clone();
        let mut api = model.workloads.last().cloned().expect("the API");
        api.pod_claims = vec![claim];
        (conductor, api)
    };
    let rendered = serde_json::to_value(
        render::workload(&owner, &model, &conductor, &params()).expect("renders"),
    )
    .expect("json");
    let templates = &rendered["spec"]["volumeClaimTemplates"];
    assert_eq!(templates[0]["metadata"]["name"], "state", "{rendered}");
    assert_eq!(templates[0]["spec"]["accessModes"][0], "ReadWriteOnce");
    assert_eq!(
        templates[0]["spec"]["resources"]["requests"]["storage"],
        "1Gi"
    );
    let mounts = rendered["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
        .as_array()
        .expect("mounts");
    assert!(
        mounts
            .iter()
            .any(|m| m["name"] == "state" && m["mountPath"] == "/var/lib/ironic/state"),
        "{mounts:?}"
    );
    // A Deployment's pods are interchangeable: nothing of their own to keep.
    assert!(render::workload(&owner, &model, &api, &params()).is_err());
}
