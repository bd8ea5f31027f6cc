//! The Neutron resource: example manifests.

/// What the examples run.
pub const SHAPE: &str = "2 APIs, 2 RPC servers, 2 periodic workers and a metadata agent per node";

/// A Neutron manifest for demos and tests: Secrets `neutron-db` (the
/// database URL) and `neutron-mq` (the message bus URL), two pods of each
/// server process and the metadata agent on every node.
pub fn example_manifest(
    name: &str,
    release: &str,
    repository: &str,
    tag: &str,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "neutron.openstack.c5c3.io/v1alpha1",
        "kind": "Neutron",
        "metadata": { "name": name },
        "spec": {
            "openStackRelease": release,
            "image": { "repository": repository, "tag": tag },
            "database": { "secretName": "neutron-db", "key": "connection" },
            "transport": { "secretName": "neutron-mq", "key": "transport_url" },
            "api": { "replicas": 2 },
            "rpcServer": { "replicas": 2 },
            "periodicWorkers": { "replicas": 2 },
            "agents": { "metadata": {} },
        }
    })
}

/// The example as real processes run it without a Keystone: `[DEFAULT]
/// auth_strategy = noauth` (Neutron's test mode: every request is an
/// administrator's), chosen explicitly; the agents on the nodes whose pods
/// run as real processes (the test environment's label for them), not on a
/// simulated node beside them.
pub fn real_example_manifest(name: &str, release: &str, repository: &str) -> serde_json::Value {
    let mut manifest = example_manifest(name, release, repository, release);
    manifest["spec"]["extraConfig"] =
        serde_json::json!({ "DEFAULT": { "auth_strategy": "noauth" } });
    manifest["spec"]["agents"]["nodeSelector"] =
        serde_json::json!({ "ratchet.dev/kubelet": "process" });
    manifest
}
