//! Cinder v1alpha1 ⇄ v1beta1: concrete cases, then round-trip properties.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ResourceClaim, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use ratchet_api::common::{
    ImageSpec, PendingEvent, PodSecurity, SecretKeyRef, SecretOption, UpgradePolicy, WorkloadSpec,
};
use ratchet_api::identity::IdentitySpec;
use ratchet_services::cinder::conversion::{
    ConversionError, V1ALPHA1, V1ALPHA1_ANNOTATION, V1BETA1, V1BETA1_ANNOTATION, convert,
    to_v1alpha1, to_v1beta1,
};
use ratchet_services::cinder::{BackupSpec, example_manifest, v1alpha1, v1beta1};
use serde_json::{Value, json};

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// An example v1alpha1 object as the API server has it, with the schema's defaults.
fn alpha(backends: &[&str]) -> Value {
    let volumes: serde_json::Map<String, Value> = backends
        .iter()
        .map(|b| (b.to_string(), json!({ "options": { "volume_driver": "cinder.volume.drivers.lvm.LVMVolumeDriver" } })))
        .collect();
    json!({
        "apiVersion": V1ALPHA1,
        "kind": "Cinder",
        "metadata": { "name": "c" },
        "spec": {
            "openStackRelease": "2025.2",
            "image": { "repository": "registry.example/cinder", "tag": "2025.2" },
            "database": { "secretName": "cinder-db", "key": "connection" },
            "transport": { "secretName": "cinder-mq", "key": "transport_url" },
            "api": {}, "scheduler": {}, "backup": {},
            "volumes": volumes,
        }
    })
}

#[test]
fn the_example_manifest_is_v1beta1_and_converts_to_the_v1alpha1_example() {
    let mut beta = example_manifest(
        "c",
        "2025.2",
        "registry.example/cinder",
        "2025.2",
        &["lvm", "ceph"],
    );
    assert_eq!(beta["apiVersion"], V1BETA1);
    for workload in ["api", "scheduler", "backup"] {
        beta["spec"][workload] = json!({});
    }
    let mut expected = alpha(&["lvm", "ceph"]);
    // The example lists lvm before ceph: the order travels in the annotation.
    let as_alpha = converted(&beta, V1ALPHA1);
    expected["metadata"] = as_alpha["metadata"].clone();
    assert_eq!(as_alpha, expected);
    assert_eq!(converted(&as_alpha, V1BETA1), beta);
}

fn converted(object: &Value, api_version: &str) -> Value {
    convert(object.clone(), api_version).expect("converts")
}

/// A v1beta1 object around a spec and status.
fn beta(spec: Value, status: Option<Value>, annotations: Option<Value>) -> Value {
    let mut object = json!({
        "apiVersion": V1BETA1,
        "kind": "Cinder",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": spec,
    });
    if let Some(status) = status {
        object["status"] = status;
    }
    if let Some(annotations) = annotations {
        object["metadata"]["annotations"] = annotations;
    }
    object
}

fn beta_spec(backends: Value) -> Value {
    json!({
        "openStackRelease": "2025.2",
        "image": {"repository": "registry.example/cinder", "reference": {"tag": "2025.2"}},
        "database": {"secretName": "cinder-db", "key": "connection"},
        "transport": {"secretName": "cinder-mq", "key": "transport_url"},
        "api": {},
        "scheduler": {},
        "backup": {},
        "volumeBackends": backends,
    })
}

#[test]
fn v1alpha1_volumes_become_a_list_by_name_and_the_tag_an_image_reference() {
    let alpha = alpha(&["lvm", "ceph"]);
    let lvm = json!({"volume_driver": "cinder.volume.drivers.lvm.LVMVolumeDriver"});

    let beta = converted(&alpha, V1BETA1);

    assert_eq!(
        beta,
        json!({
            "apiVersion": V1BETA1,
            "kind": "Cinder",
            "metadata": {"name": "c"},
            "spec": {
                "openStackRelease": "2025.2",
                "image": {"repository": "registry.example/cinder", "reference": {"tag": "2025.2"}},
                "database": {"secretName": "cinder-db", "key": "connection"},
                "transport": {"secretName": "cinder-mq", "key": "transport_url"},
                "api": {},
                "scheduler": {},
                "backup": {},
                "volumeBackends": [
                    {"name": "ceph", "options": lvm},
                    {"name": "lvm", "options": lvm},
                ],
            },
        })
    );
    let back = converted(&beta, V1ALPHA1);
    assert_eq!(
        back["spec"],
        json!({
            "openStackRelease": "2025.2",
            "image": {"repository": "registry.example/cinder", "tag": "2025.2"},
            "database": {"secretName": "cinder-db", "key": "connection"},
            "transport": {"secretName": "cinder-mq", "key": "transport_url"},
            "api": {},
            "scheduler": {},
            "backup": {},
            "volumes": {"ceph": {"options": lvm}, "lvm": {"options": lvm}},
        })
    );
}

#[test]
fn a_digest_moves_into_the_reference_and_back() {
    let mut alpha = alpha(&[]);
    alpha["spec"]["image"] = json!({"repository": "registry.example/cinder", "digest": DIGEST});

    let beta = converted(&alpha, V1BETA1);

    assert_eq!(
        beta["spec"]["image"],
        json!({"repository": "registry.example/cinder", "reference": {"digest": DIGEST}})
    );
    assert_eq!(converted(&beta, V1ALPHA1), alpha);
}

#[test]
fn sorted_unique_back_ends_need_no_annotation() {
    let beta = beta(
        beta_spec(json!([{"name": "a", "replicas": 2}, {"name": "b"}])),
        None,
        None,
    );

    let alpha = converted(&beta, V1ALPHA1);

    assert_eq!(alpha["metadata"], json!({"name": "c", "namespace": "ns"}));
    assert_eq!(
        alpha["spec"]["volumes"],
        json!({"a": {"replicas": 2}, "b": {}})
    );
    assert_eq!(converted(&alpha, V1BETA1), beta);
}

#[test]
fn the_order_of_back_ends_travels_in_an_annotation_and_is_removed_on_the_way_back() {
    let beta = beta(
        beta_spec(json!([{"name": "lvm"}, {"name": "ceph"}])),
        None,
        None,
    );

    let alpha = converted(&beta, V1ALPHA1);

    assert_eq!(alpha["spec"]["volumes"], json!({"ceph": {}, "lvm": {}}));
    assert_eq!(
        alpha["metadata"]["annotations"],
        json!({V1BETA1_ANNOTATION: r#"{"volumeBackends":[{"name":"lvm"},{"name":"ceph"}]}"#})
    );
    assert_eq!(converted(&alpha, V1BETA1), beta);
}

#[test]
fn a_repeated_back_end_name_keeps_the_first_in_v1alpha1_and_all_in_v1beta1() {
    let beta = beta(
        beta_spec(json!([
            {"name": "ceph", "replicas": 1},
            {"name": "lvm"},
            {"name": "ceph", "replicas": 2},
        ])),
        None,
        Some(json!({"team": "storage"})),
    );

    let alpha = converted(&beta, V1ALPHA1);

    assert_eq!(
        alpha["spec"]["volumes"],
        json!({"ceph": {"replicas": 1}, "lvm": {}})
    );
    let annotations = &alpha["metadata"]["annotations"];
    assert_eq!(annotations["team"], "storage");
    let record: Value = serde_json::from_str(annotations[V1BETA1_ANNOTATION].as_str().unwrap())
        .expect("the annotation is JSON");
    assert_eq!(
        record,
        json!({"volumeBackends": [
            {"name": "ceph"},
            {"name": "lvm"},
            {"repeat": {"name": "ceph", "replicas": 2}},
        ]})
    );
    assert_eq!(converted(&alpha, V1BETA1), beta);
}

#[test]
fn edits_in_v1alpha1_win_over_the_carried_order() {
    let beta = beta(
        beta_spec(json!([
            {"name": "lvm"},
            {"name": "ceph"},
            {"name": "lvm", "replicas": 3},
            {"name": "nfs"},
        ])),
        None,
        None,
    );
    let mut alpha = converted(&beta, V1ALPHA1);
    // lvm goes (with its repeat), ceph changes, a and z are new.
    alpha["spec"]["volumes"] = json!({"a": {}, "ceph": {"replicas": 5}, "nfs": {}, "z": {}});

    let edited = converted(&alpha, V1BETA1);

    assert_eq!(
        edited["spec"]["volumeBackends"],
        json!([{"name": "ceph", "replicas": 5}, {"name": "nfs"}, {"name": "a"}, {"name": "z"}])
    );
    assert_eq!(edited["metadata"], json!({"name": "c", "namespace": "ns"}));
}

#[test]
fn fields_only_v1beta1_has_travel_in_the_annotation() {
    let mut beta = beta(
        beta_spec(json!([
            {"name": "lvm", "privileged": true},
            {"name": "nfs", "storageVolumeClaim": "nfs-files"},
        ])),
        None,
        None,
    );
    beta["spec"]["secretOptions"] = json!([{
        "section": "keystone_authtoken", "option": "password",
        "secretName": "cinder-keystone", "key": "password",
    }]);
    beta["spec"]["securityContext"] = json!({"runAsUser": 1000, "fsGroup": 2000});

    let alpha = converted(&beta, V1ALPHA1);

    assert!(alpha["spec"].get("secretOptions").is_none());
    assert!(alpha["spec"].get("securityContext").is_none());
    assert_eq!(alpha["spec"]["volumes"], json!({"lvm": {}, "nfs": {}}));
    let record: Value = serde_json::from_str(
        alpha["metadata"]["annotations"][V1BETA1_ANNOTATION]
            .as_str()
            .expect("the record"),
    )
    .expect("the annotation is JSON");
    assert_eq!(
        record,
        json!({
            "privilegedBackends": ["lvm"],
            "storageVolumeClaims": {"nfs": "nfs-files"},
            "secretOptions": [{
                "section": "keystone_authtoken", "option": "password",
                "secretName": "cinder-keystone", "key": "password",
            }],
            "securityContext": {"runAsUser": 1000, "fsGroup": 2000},
        })
    );
    assert_eq!(converted(&alpha, V1BETA1), beta);

    // A back end removed in v1alpha1 loses its privilege and claim; one that stays keeps them.
    let mut edited = alpha.clone();
    edited["spec"]["volumes"] = json!({"nfs": {"replicas": 2}, "lvm": {"replicas": 3}});
    let back = converted(&edited, V1BETA1);
    assert_eq!(
        back["spec"]["volumeBackends"],
        json!([
            {"name": "lvm", "replicas": 3, "privileged": true},
            {"name": "nfs", "replicas": 2, "storageVolumeClaim": "nfs-files"},
        ])
    );
    edited["spec"]["volumes"] = json!({"lvm": {}});
    let back = converted(&edited, V1BETA1);
    assert_eq!(
        back["spec"]["volumeBackends"],
        json!([{"name": "lvm", "privileged": true}])
    );
    assert_eq!(back["spec"]["secretOptions"], beta["spec"]["secretOptions"]);
}

#[test]
fn status_converts_both_ways() {
    let status = json!({
        "installedRelease": "2025.1",
        "targetRelease": "2025.2",
        "upgradePhase": "RollingUpdate",
        "upgradePhaseStartedAt": "2026-01-02T03:04:05Z",
        "rollingWorkload": "c-volume-lvm",
        "conditions": [{
            "type": "Ready",
            "status": "False",
            "reason": "Upgrading",
            "message": "rolling c-volume-lvm",
            "lastTransitionTime": "2026-01-02T03:04:05Z",
            "observedGeneration": 4,
        }],
        "observedGeneration": 4,
    });
    let beta = beta(beta_spec(json!([])), Some(status.clone()), None);

    let alpha = converted(&beta, V1ALPHA1);

    assert_eq!(alpha["status"], status);
    assert_eq!(converted(&alpha, V1BETA1), beta);
}

#[test]
fn unknown_fields_travel_in_the_annotation() {
    let mut beta = beta(
        beta_spec(json!([{"name": "lvm", "tier": "gold"}])),
        Some(
            json!({"conditions": [], "installedRelease": "2025.2", "targetRelease": "",
                    "upgradePhase": "", "upgradePhaseStartedAt": "", "rollingWorkload": "",
                    "lastBackup": "yesterday"}),
        ),
        None,
    );
    beta["spec"]["image"]["pullPolicy"] = json!("Always");
    beta["spec"]["futureFeature"] = json!({"enabled": true});

    let alpha = converted(&beta, V1ALPHA1);

    assert!(alpha["spec"].get("futureFeature").is_none());
    assert!(alpha["spec"]["image"].get("pullPolicy").is_none());
    assert!(alpha["status"].get("lastBackup").is_none());
    assert_eq!(alpha["spec"]["volumes"], json!({"lvm": {}}));
    assert!(alpha["metadata"]["annotations"][V1BETA1_ANNOTATION].is_string());
    assert_eq!(converted(&alpha, V1BETA1), beta);
}

#[test]
fn unknown_fields_of_v1alpha1_travel_too() {
    let mut alpha = alpha(&["lvm"]);
    alpha["spec"]["volumes"]["lvm"]["tier"] = json!("gold");
    alpha["spec"]["image"]["pullPolicy"] = json!("Always");

    let beta = converted(&alpha, V1BETA1);

    assert_eq!(beta["spec"]["volumeBackends"][0].get("tier"), None);
    assert!(beta["metadata"]["annotations"][V1ALPHA1_ANNOTATION].is_string());
    assert_eq!(converted(&beta, V1ALPHA1), alpha);
}

#[test]
fn a_foreign_value_under_the_annotation_key_is_kept() {
    for value in ["hand written", "{}", r#"{"volumeBackends":[]}"#] {
        let beta = beta(
            beta_spec(json!([{"name": "b"}, {"name": "a"}])),
            None,
            Some(json!({V1BETA1_ANNOTATION: value, V1ALPHA1_ANNOTATION: value})),
        );
        let alpha = converted(&beta, V1ALPHA1);
        assert_ne!(alpha["metadata"]["annotations"][V1BETA1_ANNOTATION], value);
        assert_eq!(alpha["metadata"]["annotations"][V1ALPHA1_ANNOTATION], value);
        assert_eq!(converted(&alpha, V1BETA1), beta, "{value}");

        let sorted = self::beta(
            beta_spec(json!([{"name": "a"}])),
            None,
            Some(json!({V1BETA1_ANNOTATION: value})),
        );
        let alpha = converted(&sorted, V1ALPHA1);
        assert_eq!(alpha["metadata"]["annotations"][V1BETA1_ANNOTATION], value);
        assert_eq!(converted(&alpha, V1BETA1), sorted, "{value}");
    }
}

#[test]
fn metadata_is_kept_as_it_came_except_the_annotations() {
    let metadata = json!({
        "name": "c",
        "namespace": "ns",
        "uid": "0b6c3f5e-8d2a-4c61-9d1e-1f2a3b4c5d6e",
        "resourceVersion": "42",
        "generation": 3,
        "creationTimestamp": "2026-01-02T03:04:05.123456Z",
        "labels": {"app": "cinder"},
        "annotations": {},
        "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": V1BETA1,
                           "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}},
                           "time": "2026-01-02T03:04:05Z"}],
        "finalizers": ["x/y"],
    });
    let mut beta = beta(beta_spec(json!([{"name": "a"}])), None, None);
    beta["metadata"] = metadata.clone();

    let alpha = converted(&beta, V1ALPHA1);

    assert_eq!(alpha["metadata"], metadata);
    assert_eq!(converted(&alpha, V1BETA1), beta);
}

#[test]
fn an_unknown_float_survives_the_annotation_exactly() {
    // Found by the conversion fuzz target: read back from the annotation's text
    // without serde_json's float_roundtrip, this came back one ULP off.
    let mut beta = beta(
        beta_spec(json!([{"name": "lvm"}, {"name": "a"}])),
        None,
        None,
    );
    beta["spec"]["image"]["reference"]["futureScore"] = json!(4.4508414243512935e-306);
    let alpha = converted(&beta, V1ALPHA1);
    assert_eq!(converted(&alpha, V1BETA1), beta);
}

#[test]
fn converting_to_the_same_version_changes_nothing() {
    let alpha = alpha(&["b", "a"]);
    assert_eq!(converted(&alpha, V1ALPHA1), alpha);
    let beta = beta(json!({"anything": "goes"}), None, None);
    assert_eq!(converted(&beta, V1BETA1), beta);
}

#[test]
fn what_cannot_be_converted_is_an_error() {
    let alpha = alpha(&["lvm"]);
    let error = |object: Value, version: &str| convert(object, version).expect_err("refused");

    assert!(matches!(
        error(alpha.clone(), "cinder.openstack.c5c3.io/v2"),
        ConversionError::UnsupportedApiVersion(v) if v == "cinder.openstack.c5c3.io/v2"
    ));
    let mut other = alpha.clone();
    other["apiVersion"] = json!("ironic.openstack.c5c3.io/v1alpha1");
    assert!(matches!(
        error(other, V1BETA1),
        ConversionError::UnsupportedApiVersion(_)
    ));
    let mut kind = alpha.clone();
    kind["kind"] = json!("Ironic");
    assert!(matches!(error(kind, V1BETA1), ConversionError::UnexpectedKind(k) if k == "Ironic"));
    let mut no_version = alpha.clone();
    no_version.as_object_mut().unwrap().remove("apiVersion");
    assert!(matches!(
        error(no_version, V1BETA1),
        ConversionError::MissingApiVersion
    ));
    assert!(matches!(
        error(json!([alpha.clone()]), V1BETA1),
        ConversionError::NotAnObject
    ));
    let mut no_image = alpha.clone();
    no_image["spec"].as_object_mut().unwrap().remove("image");
    assert!(matches!(
        error(no_image, V1BETA1),
        ConversionError::Invalid { api_version, .. } if api_version == V1ALPHA1
    ));
    let mut bad_backends = beta(beta_spec(json!({"lvm": {}})), None, None);
    bad_backends["spec"]["volumeBackends"] = json!({"lvm": {}});
    assert!(matches!(
        error(bad_backends, V1ALPHA1),
        ConversionError::Invalid { .. }
    ));
}

// Arbitrary objects. Back-end names come from a small set so that lists repeat names.
// Annotations include the two conversion keys, with values that are not records: at
// most 12 characters (the shortest record is longer), `{}`, or an empty record. A
// record put there by hand is read as one, so its object is not returned unchanged.

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,12}"
}

fn annotations() -> impl Strategy<Value = Option<BTreeMap<String, String>>> {
    let key = prop_oneof![
        3 => "[a-z]{1,6}(\\.example/[a-z]{1,6})?",
        1 => Just(V1ALPHA1_ANNOTATION.to_owned()),
        1 => Just(V1BETA1_ANNOTATION.to_owned()),
    ];
    let value = prop_oneof![
        3 => text(),
        1 => Just("{}".to_owned()),
        1 => Just(r#"{"volumeBackends":[]}"#.to_owned()),
    ];
    // The API server drops an empty map, so an object has annotations or none.
    option::of(btree_map(key, value, 1..4))
}

fn metadata() -> impl Strategy<Value = ObjectMeta> {
    (
        option::of("[a-z]{1,8}"),
        option::of("[a-z]{1,8}"),
        option::of(any::<i64>()),
        option::of(btree_map("[a-z]{1,5}", "[a-z]{0,5}", 1..3)),
        annotations(),
        option::of("[0-9]{1,6}"),
    )
        .prop_map(
            |(name, namespace, generation, labels, annotations, resource_version)| ObjectMeta {
                name,
                namespace,
                generation,
                labels,
                annotations,
                resource_version,
                ..ObjectMeta::default()
            },
        )
}

fn quantities() -> impl Strategy<Value = Option<BTreeMap<String, Quantity>>> {
    option::of(btree_map(
        select(vec!["cpu".to_owned(), "memory".to_owned()]),
        "[0-9]{1,4}(m|Mi|Gi)?".prop_map(Quantity),
        1..3,
    ))
}

fn resources() -> impl Strategy<Value = Option<ResourceRequirements>> {
    let claim = ("[a-z]{1,4}", option::of("[a-z]{1,4}"))
        .prop_map(|(name, request)| ResourceClaim { name, request });
    option::of(
        (option::of(vec(claim, 0..2)), quantities(), quantities()).prop_map(
            |(claims, limits, requests)| ResourceRequirements {
                claims,
                limits,
                requests,
            },
        ),
    )
}

fn workload() -> impl Strategy<Value = WorkloadSpec> {
    (option::of(any::<i32>()), resources()).prop_map(|(replicas, resources)| WorkloadSpec {
        replicas,
        resources,
    })
}

fn backup() -> impl Strategy<Value = BackupSpec> {
    (
        option::of(any::<i32>()),
        resources(),
        option::of("[a-z]{1,8}"),
        any::<bool>(),
    )
        .prop_map(
            |(replicas, resources, posix_volume_claim, privileged)| BackupSpec {
                replicas,
                resources,
                posix_volume_claim,
                privileged,
            },
        )
}

fn secret() -> impl Strategy<Value = SecretKeyRef> {
    ("[a-z-]{1,6}", "[a-z_]{1,6}").prop_map(|(secret_name, key)| SecretKeyRef { secret_name, key })
}

fn backend_name() -> impl Strategy<Value = String> {
    select(vec!["a", "b", "ceph", "lvm-1"]).prop_map(str::to_owned)
}

fn options() -> impl Strategy<Value = BTreeMap<String, String>> {
    btree_map("[a-z_]{1,8}", text(), 0..3)
}

fn extra_config() -> impl Strategy<Value = BTreeMap<String, BTreeMap<String, String>>> {
    btree_map("[a-z]{1,5}", btree_map("[a-z_]{1,5}", text(), 0..2), 0..2)
}

fn condition() -> impl Strategy<Value = Condition> {
    (
        0i64..4_000_000_000,
        text(),
        option::of(any::<i64>()),
        "[A-Za-z]{0,8}",
        select(vec!["True", "False", "Unknown"]),
        "[A-Za-z]{1,8}",
    )
        .prop_map(
            |(seconds, message, observed_generation, reason, status, type_)| Condition {
                last_transition_time: Time(Timestamp::from_second(seconds).expect("in range")),
                message,
                observed_generation,
                reason,
                status: status.to_owned(),
                type_,
            },
        )
}

/// The status fields as a tuple, the same in both versions; the phase as an index.
type StatusParts = (
    String,
    String,
    usize,
    String,
    String,
    Vec<Condition>,
    Option<i64>,
    Vec<PendingEvent>,
);

fn pending_event() -> impl Strategy<Value = PendingEvent> {
    (text(), text(), text(), text()).prop_map(|(name, type_, reason, message)| PendingEvent {
        name,
        type_,
        reason,
        message,
    })
}

fn status_parts() -> impl Strategy<Value = Option<StatusParts>> {
    option::of((
        text(),
        text(),
        0usize..5,
        text(),
        text(),
        vec(condition(), 0..3),
        option::of(any::<i64>()),
        vec(pending_event(), 0..2),
    ))
}

fn image_parts() -> impl Strategy<Value = (String, Option<String>, Option<String>)> {
    // Both, neither, or either: the schema refuses two of these, the types do not.
    (
        "[a-z./]{1,12}",
        option::of("[a-z0-9.]{1,8}"),
        option::of(Just(DIGEST.to_owned())),
    )
}

fn alpha_cinder() -> impl Strategy<Value = v1alpha1::Cinder> {
    let backend = (option::of(any::<i32>()), resources(), options()).prop_map(
        |(replicas, resources, options)| v1alpha1::VolumeBackendSpec {
            replicas,
            resources,
            options,
        },
    );
    let spec = (
        (text(), image_parts(), secret(), secret()),
        (workload(), workload(), backup()),
        (
            btree_map(backend_name(), backend, 0..4),
            option::of(any::<i32>()),
            extra_config(),
        ),
    )
        .prop_map(
            |(
                (open_stack_release, (repository, tag, digest), database, transport),
                (api, scheduler, backup),
                (volumes, rollout_deadline_seconds, extra_config),
            )| v1alpha1::CinderSpec {
                open_stack_release,
                image: ImageSpec {
                    repository,
                    tag,
                    digest,
                },
                database,
                transport,
                api,
                scheduler,
                backup,
                volumes,
                rollout_deadline_seconds,
                extra_config,
            },
        );
    (metadata(), spec, status_parts()).prop_map(|(metadata, spec, status)| v1alpha1::Cinder {
        metadata,
        spec,
        status: status.map(
            |(
                installed_release,
                target_release,
                phase,
                upgrade_phase_started_at,
                rolling_workload,
                conditions,
                observed_generation,
                pending_events,
            )| {
                v1alpha1::CinderStatus {
                    installed_release,
                    target_release,
                    upgrade_phase: [
                        v1alpha1::CinderUpgradePhase::None,
                        v1alpha1::CinderUpgradePhase::Expanding,
                        v1alpha1::CinderUpgradePhase::Migrating,
                        v1alpha1::CinderUpgradePhase::RollingUpdate,
                        v1alpha1::CinderUpgradePhase::Contracting,
                    ][phase],
                    upgrade_phase_started_at,
                    rolling_workload,
                    conditions,
                    observed_generation,
                    pending_events,
                }
            },
        ),
    })
}

fn beta_backends() -> impl Strategy<Value = Vec<v1beta1::VolumeBackend>> {
    let backend = (
        backend_name(),
        option::of(any::<i32>()),
        resources(),
        options(),
        any::<bool>(),
        option::of(text()),
    )
        .prop_map(
            |(name, replicas, resources, options, privileged, storage_volume_claim)| {
                v1beta1::VolumeBackend {
                    name,
                    replicas,
                    resources,
                    options,
                    privileged,
                    storage_volume_claim,
                }
            },
        );
    vec(backend, 0..6)
}

fn secret_options() -> impl Strategy<Value = Vec<SecretOption>> {
    let option = (text(), text(), secret()).prop_map(|(section, option, secret)| SecretOption {
        section,
        option,
        secret_name: secret.secret_name,
        key: secret.key,
    });
    vec(option, 0..3)
}

fn pod_security() -> impl Strategy<Value = Option<PodSecurity>> {
    option::of(
        (
            option::of(any::<i64>()),
            option::of(any::<i64>()),
            option::of(any::<i64>()),
        )
            .prop_map(|(run_as_user, run_as_group, fs_group)| PodSecurity {
                run_as_user,
                run_as_group,
                fs_group,
            }),
    )
}

fn identity() -> impl Strategy<Value = Option<IdentitySpec>> {
    option::of(
        (
            text(),
            secret(),
            option::of(text()),
            option::of(text()),
            vec(text(), 0..2),
        )
            .prop_map(
                |(keystone, password, username, region, memcached_servers)| IdentitySpec {
                    keystone,
                    password,
                    username,
                    region,
                    memcached_servers,
                },
            ),
    )
}

fn upgrade() -> impl Strategy<Value = Option<UpgradePolicy>> {
    option::of(
        (any::<bool>(), option::of(1u32..1000)).prop_map(|(allow_outage, max_parallel)| {
            UpgradePolicy {
                allow_outage,
                max_parallel,
            }
        }),
    )
}

fn beta_cinder() -> impl Strategy<Value = v1beta1::Cinder> {
    let spec = (
        (text(), image_parts(), secret(), secret()),
        (workload(), workload(), backup()),
        (beta_backends(), option::of(any::<i32>()), extra_config()),
        (secret_options(), pod_security(), identity(), upgrade()),
    )
        .prop_map(
            |(
                (open_stack_release, (repository, tag, digest), database, transport),
                (api, scheduler, backup),
                (volume_backends, rollout_deadline_seconds, extra_config),
                (secret_options, security_context, identity, upgrade),
            )| v1beta1::CinderSpec {
                open_stack_release,
                image: v1beta1::Image {
                    repository,
                    reference: v1beta1::ImageReference { tag, digest },
                },
                database,
                transport,
                api,
                scheduler,
                backup,
                volume_backends,
                rollout_deadline_seconds,
                extra_config,
                secret_options,
                security_context,
                identity,
                upgrade,
            },
        );
    (metadata(), spec, status_parts()).prop_map(|(metadata, spec, status)| v1beta1::Cinder {
        metadata,
        spec,
        status: status.map(
            |(
                installed_release,
                target_release,
                phase,
                upgrade_phase_started_at,
                rolling_workload,
                conditions,
                observed_generation,
                pending_events,
            )| {
                v1beta1::CinderStatus {
                    installed_release,
                    target_release,
                    upgrade_phase: [
                        v1beta1::CinderUpgradePhase::None,
                        v1beta1::CinderUpgradePhase::Expanding,
                        v1beta1::CinderUpgradePhase::Migrating,
                        v1beta1::CinderUpgradePhase::RollingUpdate,
                        v1beta1::CinderUpgradePhase::Contracting,
                    ][phase],
                    upgrade_phase_started_at,
                    rolling_workload,
                    conditions,
                    observed_generation,
                    pending_events,
                }
            },
        ),
    })
}

/// Fields a later version might add: `(where, name, value)`, placed on objects that are
/// structs (not maps, where a new key would be data) outside `metadata`.
fn future_fields() -> impl Strategy<Value = Vec<(Index, String, Value)>> {
    let value = prop_oneof![
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::from),
        Just(json!({"nested": [1, {"deep": true}]})),
        Just(Value::Null),
    ];
    vec((any::<Index>(), "[a-z]{1,6}", value), 0..4)
}

fn with_future_fields(mut object: Value, fields: &[(Index, String, Value)]) -> Value {
    fn structs(value: &Value, pointer: &str, key: &str, out: &mut Vec<String>) {
        const MAPS: [&str; 7] = [
            "volumes",
            "options",
            "extraConfig",
            "limits",
            "requests",
            "metadata",
            "annotations",
        ];
        match value {
            Value::Object(fields) => {
                if MAPS.contains(&key) || pointer.contains("/extraConfig/") {
                    return;
                }
                out.push(pointer.to_owned());
                for (name, field) in fields {
                    structs(field, &format!("{pointer}/{name}"), name, out);
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    structs(item, &format!("{pointer}/{index}"), "", out);
                }
            }
            _ => {}
        }
    }
    let mut pointers = Vec::new();
    structs(&object, "", "", &mut pointers);
    for (at, name, value) in fields {
        let pointer = at.get(&pointers);
        if let Some(Value::Object(target)) = object.pointer_mut(pointer) {
            target.insert(format!("future{name}"), value.clone());
        }
    }
    object
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn v1alpha1_to_v1beta1_and_back_is_the_identity(alpha in alpha_cinder()) {
        let beta = to_v1beta1(&alpha).expect("converts");
        let back = to_v1alpha1(&beta).expect("converts");
        prop_assert_eq!(serde_json::to_value(&back)?, serde_json::to_value(&alpha)?);
    }

    #[test]
    fn v1beta1_to_v1alpha1_and_back_is_the_identity(beta in beta_cinder()) {
        let alpha = to_v1alpha1(&beta).expect("converts");
        let back = to_v1beta1(&alpha).expect("converts");
        prop_assert_eq!(back, beta);
    }

    #[test]
    fn v1alpha1_objects_need_no_annotation_in_v1beta1(alpha in alpha_cinder()) {
        let beta = to_v1beta1(&alpha).expect("converts");
        prop_assert_eq!(beta.metadata, alpha.metadata);
    }

    #[test]
    fn json_round_trips_are_the_identity_with_unknown_fields(
        alpha in alpha_cinder(),
        beta in beta_cinder(),
        alpha_future in future_fields(),
        beta_future in future_fields(),
    ) {
        let alpha = with_future_fields(serde_json::to_value(&alpha)?, &alpha_future);
        let beta = with_future_fields(serde_json::to_value(&beta)?, &beta_future);

        let there = convert(alpha.clone(), V1BETA1).expect("converts");
        prop_assert_eq!(&there["apiVersion"], V1BETA1);
        prop_assert_eq!(convert(there, V1ALPHA1).expect("converts"), alpha.clone());

        let there = convert(beta.clone(), V1ALPHA1).expect("converts");
        prop_assert_eq!(&there["apiVersion"], V1ALPHA1);
        prop_assert_eq!(convert(there, V1BETA1).expect("converts"), beta.clone());

        prop_assert_eq!(convert(alpha.clone(), V1ALPHA1).expect("identity"), alpha);
        prop_assert_eq!(convert(beta.clone(), V1BETA1).expect("identity"), beta);
    }

    #[test]
    fn typed_and_json_conversion_agree(alpha in alpha_cinder(), beta in beta_cinder()) {
        prop_assert_eq!(
            convert(serde_json::to_value(&alpha)?, V1BETA1).expect("converts"),
            serde_json::to_value(to_v1beta1(&alpha).expect("converts"))?
        );
        prop_assert_eq!(
            convert(serde_json::to_value(&beta)?, V1ALPHA1).expect("converts"),
            serde_json::to_value(to_v1alpha1(&beta).expect("converts"))?
        );
    }

    #[test]
    fn edits_made_through_v1alpha1_are_never_undone_by_the_annotation(
        beta in beta_cinder(),
        volumes in btree_map(backend_name(), Just(v1alpha1::VolumeBackendSpec::default()), 0..4),
        replicas in option::of(0i32..5),
    ) {
        let mut alpha = to_v1alpha1(&beta).expect("converts");
        for backend in alpha.spec.volumes.values_mut() {
            backend.replicas = replicas;
        }
        alpha.spec.volumes.extend(volumes);

        let edited = to_v1beta1(&alpha).expect("converts");
        let again = to_v1alpha1(&edited).expect("converts");

        prop_assert_eq!(serde_json::to_value(&again.spec)?, serde_json::to_value(&alpha.spec)?);
        prop_assert_eq!(to_v1beta1(&again).expect("converts"), edited);
    }
}
