//! The Ironic resource: example manifests.

/// An Ironic manifest for demos and tests: secrets `ironic-db`/`ironic-mq`,
/// `replicas` API and conductor pods.
pub fn example_manifest(
    name: &str,
    release: &str,
    repository: &str,
    tag: &str,
    replicas: i32,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "ironic.openstack.c5c3.io/v1alpha1",
        "kind": "Ironic",
        "metadata": { "name": name },
        "spec": {
            "openStackRelease": release,
            "image": { "repository": repository, "tag": tag },
            "database": { "secretName": "ironic-db", "key": "connection" },
            "transport": { "secretName": "ironic-mq", "key": "transport_url" },
            "api": { "replicas": replicas },
            "conductor": { "replicas": replicas },
        }
    })
}

/// The power interfaces the real example enables (`ipmitool` is Ironic's
/// default hardware type's; `fake` is what its nodes use).
pub const REAL_POWER_INTERFACES: &str = "ipmitool,fake";

/// What the real example enables: the `fake-hardware` type beside `ipmi`, with
/// its fake interfaces, so nodes enroll with no BMC; `power` lists the power
/// interfaces. No Keystone resource exists yet: `noauth`.
pub fn real_interfaces(power: &str) -> serde_json::Value {
    serde_json::json!({
        "auth_strategy": "noauth",
        "enabled_hardware_types": "ipmi,fake-hardware",
        "enabled_boot_interfaces": "ipxe,pxe,fake",
        "enabled_deploy_interfaces": "direct,fake",
        "enabled_management_interfaces": "ipmitool,fake",
        "enabled_power_interfaces": power,
    })
}

/// The example as the real tests and `ratchet demo --real` run it: `apis`
/// API and `conductors` conductor replicas, [`real_interfaces`], Secrets
/// `ironic-db` and `ironic-mq`.
pub fn real_example_manifest(
    name: &str,
    release: &str,
    repository: &str,
    apis: i32,
    conductors: i32,
) -> serde_json::Value {
    let mut manifest = example_manifest(name, release, repository, release, apis);
    let spec = &mut manifest["spec"];
    spec["conductor"] = serde_json::json!({ "replicas": conductors });
    spec["extraConfig"] = serde_json::json!({ "DEFAULT": real_interfaces(REAL_POWER_INTERFACES) });
    manifest
}
