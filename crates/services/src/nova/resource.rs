//! The Nova resource: example manifests.

/// What the examples run.
pub const SHAPE: &str =
    "2 APIs, 2 schedulers, 2 conductors, cell0 and cell1 with 2 conductors and 2 fake computes";

/// A Nova manifest for demos and tests: Secrets `nova-api-db`, `nova-cell0-db`
/// and `nova-cell1-db` (database URLs), `nova-mq` and `nova-cell1-mq` (the
/// top-level bus and cell1's), two pods of every control-plane workload and
/// two fake computes.
pub fn example_manifest(
    name: &str,
    release: &str,
    repository: &str,
    tag: &str,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "nova.openstack.c5c3.io/v1alpha1",
        "kind": "Nova",
        "metadata": { "name": name },
        "spec": {
            "openStackRelease": release,
            "image": { "repository": repository, "tag": tag },
            "apiDatabase": { "secretName": "nova-api-db", "key": "connection" },
            "transport": { "secretName": "nova-mq", "key": "transport_url" },
            "cell0": { "database": { "secretName": "nova-cell0-db", "key": "connection" } },
            "cells": [{
                "name": "cell1",
                "database": { "secretName": "nova-cell1-db", "key": "connection" },
                "transport": { "secretName": "nova-cell1-mq", "key": "transport_url" },
                "conductor": { "replicas": 2 },
                "computes": { "replicas": 2 },
            }],
            "api": { "replicas": 2 },
            "scheduler": { "replicas": 2 },
            "conductor": { "replicas": 2 },
        }
    })
}

/// The example as real processes run it: Nova's API authenticates only
/// through Keystone, and its upgrade check reaches Placement through it, so a
/// real Nova authenticates (`keystone::resource::authenticating`) as its
/// test and the demo make it; the fake computes are its only stand-ins.
pub fn real_example_manifest(name: &str, release: &str, repository: &str) -> serde_json::Value {
    example_manifest(name, release, repository, release)
}
