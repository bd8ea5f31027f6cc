//! Conversion between Cinder `v1alpha1` and `v1beta1`.
//!
//! Pure and total: every object of one version has a form in the other, and converting
//! there and back gives the object back unchanged. What the other version cannot
//! express travels in an annotation:
//!
//! - [`V1BETA1_ANNOTATION`], on a v1alpha1 object: the order of `volumeBackends` when
//!   it is not sorted by name, back ends whose name repeats an earlier one's, the fields
//!   only v1beta1 has (`secretOptions`, `securityContext`, which back ends are
//!   `privileged`, each back end's `storageVolumeClaim`, `identity`, `upgrade`), and fields of the v1beta1
//!   object that this code does not know.
//! - [`V1ALPHA1_ANNOTATION`], on a v1beta1 object: fields of the v1alpha1 object that
//!   this code does not know.
//!
//! Converting back consumes the annotation. Edits made in the other version win: the
//! carried order applies to the back ends that still exist, a repeated back end comes
//! back only while a back end of its name exists, so do a back end's `privileged` and
//! `storageVolumeClaim`, and unknown fields are only added (to a list item only while
//! the item is unchanged). A value under one of these keys
//! that is not such a record (somebody's own annotation) is carried like any other.
//!
//! [`convert`] is what a `ConversionReview` webhook calls: it works on the objects as
//! JSON, keeps `metadata` as it came except for the annotations, and carries fields
//! unknown to this code. [`to_v1beta1`] and [`to_v1alpha1`] convert typed objects.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{v1alpha1, v1beta1};
use ratchet_api::common::{ImageSpec, PodSecurity, SecretOption, UpgradePolicy};
use ratchet_api::identity::IdentitySpec;

/// `apiVersion` of Cinder v1alpha1.
pub const V1ALPHA1: &str = "cinder.openstack.c5c3.io/v1alpha1";
/// `apiVersion` of Cinder v1beta1.
pub const V1BETA1: &str = "cinder.openstack.c5c3.io/v1beta1";
/// On a v1alpha1 object: what its v1beta1 form held that v1alpha1 cannot express (JSON).
pub const V1BETA1_ANNOTATION: &str = "cinder.openstack.c5c3.io/conversion-v1beta1";
/// On a v1beta1 object: what its v1alpha1 form held that v1beta1 cannot express (JSON).
pub const V1ALPHA1_ANNOTATION: &str = "cinder.openstack.c5c3.io/conversion-v1alpha1";

const KIND: &str = "Cinder";

/// Why an object could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    #[error("apiVersion {0:?} is not served for Cinder (expected {V1ALPHA1} or {V1BETA1})")]
    UnsupportedApiVersion(String),
    #[error("the object is not a JSON object")]
    NotAnObject,
    #[error("the object has no apiVersion")]
    MissingApiVersion,
    #[error("expected kind {KIND}, got {0:?}")]
    UnexpectedKind(String),
    #[error("not a valid {api_version} {KIND}: {source}")]
    Invalid {
        api_version: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("encoding the converted object: {0}")]
    Encode(#[source] serde_json::Error),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V1alpha1,
    V1beta1,
}

impl Version {
    fn of(api_version: &str) -> Result<Self, ConversionError> {
        match api_version {
            V1ALPHA1 => Ok(Self::V1alpha1),
            V1BETA1 => Ok(Self::V1beta1),
            other => Err(ConversionError::UnsupportedApiVersion(other.to_owned())),
        }
    }
}

/// Converts a Cinder object (as JSON) to `desired_api_version`.
///
/// An object already at that version comes back as it is. `metadata` is kept as it came
/// except for the annotations above; fields this code does not know are carried in them.
pub fn convert(object: Value, desired_api_version: &str) -> Result<Value, ConversionError> {
    let target = Version::of(desired_api_version)?;
    let fields = object.as_object().ok_or(ConversionError::NotAnObject)?;
    let source_api_version = fields
        .get("apiVersion")
        .and_then(Value::as_str)
        .ok_or(ConversionError::MissingApiVersion)?;
    let source = Version::of(source_api_version)?;
    match fields.get("kind").and_then(Value::as_str) {
        Some(KIND) => {}
        other => {
            return Err(ConversionError::UnexpectedKind(
                other.unwrap_or_default().to_owned(),
            ));
        }
    }
    match (source, target) {
        (Version::V1alpha1, Version::V1beta1) => {
            let cinder: v1alpha1::Cinder = decode(&object, V1ALPHA1)?;
            let unknown = unknown_fields(&object, &encode(&cinder)?);
            let (converted, restore) = alpha_to_beta(&cinder, unknown)?;
            assemble(
                object,
                &cinder.metadata,
                encode(&converted)?,
                &converted.metadata,
                restore,
            )
        }
        (Version::V1beta1, Version::V1alpha1) => {
            let cinder: v1beta1::Cinder = decode(&object, V1BETA1)?;
            let unknown = unknown_fields(&object, &encode(&cinder)?);
            let (converted, restore) = beta_to_alpha(&cinder, unknown)?;
            assemble(
                object,
                &cinder.metadata,
                encode(&converted)?,
                &converted.metadata,
                restore,
            )
        }
        (Version::V1alpha1, Version::V1alpha1) | (Version::V1beta1, Version::V1beta1) => Ok(object),
    }
}

/// The v1beta1 form of a v1alpha1 Cinder.
pub fn to_v1beta1(cinder: &v1alpha1::Cinder) -> Result<v1beta1::Cinder, ConversionError> {
    alpha_to_beta(cinder, None).map(|(converted, _)| converted)
}

/// The v1alpha1 form of a v1beta1 Cinder.
pub fn to_v1alpha1(cinder: &v1beta1::Cinder) -> Result<v1alpha1::Cinder, ConversionError> {
    beta_to_alpha(cinder, None).map(|(converted, _)| converted)
}

/// Converts, carrying `unknown` (fields of `cinder` its type does not hold) to v1alpha1;
/// also returns the unknown fields of the v1beta1 object the annotation carried.
fn alpha_to_beta(
    cinder: &v1alpha1::Cinder,
    unknown: Option<Overlay>,
) -> Result<(v1beta1::Cinder, Option<Overlay>), ConversionError> {
    let mut annotations = cinder.metadata.annotations.clone().unwrap_or_default();
    let carried: V1beta1Only = take_carried(&mut annotations, V1BETA1_ANNOTATION);
    put_carried(
        &mut annotations,
        V1ALPHA1_ANNOTATION,
        V1alpha1Only {
            unknown_fields: unknown,
            displaced_annotation: None,
        },
    )?;
    let converted = v1beta1::Cinder {
        metadata: with_annotations(&cinder.metadata, annotations),
        spec: spec_to_beta(&cinder.spec, &carried),
        status: cinder.status.as_ref().map(status_to_beta),
    };
    Ok((converted, carried.unknown_fields))
}

/// Converts, carrying `unknown` (fields of `cinder` its type does not hold) to v1beta1;
/// also returns the unknown fields of the v1alpha1 object the annotation carried.
fn beta_to_alpha(
    cinder: &v1beta1::Cinder,
    unknown: Option<Overlay>,
) -> Result<(v1alpha1::Cinder, Option<Overlay>), ConversionError> {
    let mut annotations = cinder.metadata.annotations.clone().unwrap_or_default();
    let carried: V1alpha1Only = take_carried(&mut annotations, V1ALPHA1_ANNOTATION);
    let (spec, mut only) = spec_to_alpha(&cinder.spec);
    only.unknown_fields = unknown;
    put_carried(&mut annotations, V1BETA1_ANNOTATION, only)?;
    let converted = v1alpha1::Cinder {
        metadata: with_annotations(&cinder.metadata, annotations),
        spec,
        status: cinder.status.as_ref().map(status_to_alpha),
    };
    Ok((converted, carried.unknown_fields))
}

fn spec_to_beta(spec: &v1alpha1::CinderSpec, carried: &V1beta1Only) -> v1beta1::CinderSpec {
    let v1alpha1::CinderSpec {
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
    } = spec;
    v1beta1::CinderSpec {
        open_stack_release: open_stack_release.clone(),
        image: v1beta1::Image {
            repository: repository.clone(),
            reference: v1beta1::ImageReference {
                tag: tag.clone(),
                digest: digest.clone(),
            },
        },
        database: database.clone(),
        transport: transport.clone(),
        api: api.clone(),
        scheduler: scheduler.clone(),
        backup: backup.clone(),
        volume_backends: backends_to_list(volumes, carried),
        rollout_deadline_seconds: *rollout_deadline_seconds,
        extra_config: extra_config.clone(),
        secret_options: carried.secret_options.clone(),
        security_context: carried.security_context.clone(),
        identity: carried.identity.clone(),
        upgrade: carried.upgrade.clone(),
    }
}

/// The v1alpha1 spec, and what it cannot express: how to get the back-end list back
/// from its map (no order when the list is sorted by name without repeats, which is
/// the list the map gives) and the fields only v1beta1 has.
fn spec_to_alpha(spec: &v1beta1::CinderSpec) -> (v1alpha1::CinderSpec, V1beta1Only) {
    let v1beta1::CinderSpec {
        open_stack_release,
        image:
            v1beta1::Image {
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
    } = spec;
    let (volumes, order, extras) = list_to_backends(volume_backends);
    let spec = v1alpha1::CinderSpec {
        open_stack_release: open_stack_release.clone(),
        image: ImageSpec {
            repository: repository.clone(),
            tag: tag.clone(),
            digest: digest.clone(),
        },
        database: database.clone(),
        transport: transport.clone(),
        api: api.clone(),
        scheduler: scheduler.clone(),
        backup: backup.clone(),
        volumes,
        rollout_deadline_seconds: *rollout_deadline_seconds,
        extra_config: extra_config.clone(),
    };
    let only = V1beta1Only {
        volume_backends: order,
        privileged_backends: extras.privileged,
        storage_volume_claims: extras.storage_volume_claims,
        secret_options: secret_options.clone(),
        security_context: security_context.clone(),
        identity: identity.clone(),
        upgrade: upgrade.clone(),
        ..V1beta1Only::default()
    };
    (spec, only)
}

/// The list in the carried order: back ends the order names, while they exist; carried
/// repeats, while a back end of their name exists; then the rest by name. The back ends
/// the record names privileged, and the claims it carries, apply while their back ends
/// exist.
fn backends_to_list(
    volumes: &BTreeMap<String, v1alpha1::VolumeBackendSpec>,
    carried: &V1beta1Only,
) -> Vec<v1beta1::VolumeBackend> {
    let mut placed = BTreeSet::new();
    let mut list = Vec::with_capacity(volumes.len());
    let to_beta = |name: &str, backend| {
        let extras = BackendExtras {
            privileged: carried.privileged_backends.iter().any(|p| p == name),
            storage_volume_claim: carried.storage_volume_claims.get(name).cloned(),
        };
        backend_to_beta(name, backend, extras)
    };
    for slot in &carried.volume_backends {
        match slot {
            BackendSlot::Name(name) => {
                if let Some(backend) = volumes.get(name)
                    && placed.insert(name.as_str())
                {
                    list.push(to_beta(name, backend));
                }
            }
            BackendSlot::Repeat(backend) => {
                if volumes.contains_key(&backend.name) {
                    list.push(backend.clone());
                }
            }
        }
    }
    list.extend(
        volumes
            .iter()
            .filter(|(name, _)| !placed.contains(name.as_str()))
            .map(|(name, backend)| to_beta(name, backend)),
    );
    list
}

/// The map (the first back end of a name wins), the order to rebuild the list, and the
/// v1beta1-only fields of the map's back ends (a repeat carries its own).
fn list_to_backends(
    list: &[v1beta1::VolumeBackend],
) -> (
    BTreeMap<String, v1alpha1::VolumeBackendSpec>,
    Vec<BackendSlot>,
    CarriedExtras,
) {
    let mut volumes = BTreeMap::new();
    let mut order = Vec::new();
    let mut extras = CarriedExtras::default();
    for backend in list {
        if volumes.contains_key(&backend.name) {
            order.push(BackendSlot::Repeat(backend.clone()));
        } else {
            let v1beta1::VolumeBackend {
                name,
                replicas,
                resources,
                options,
                privileged,
                storage_volume_claim,
            } = backend;
            if *privileged {
                extras.privileged.push(name.clone());
            }
            if let Some(claim) = storage_volume_claim {
                extras
                    .storage_volume_claims
                    .insert(name.clone(), claim.clone());
            }
            volumes.insert(
                name.clone(),
                v1alpha1::VolumeBackendSpec {
                    replicas: *replicas,
                    resources: resources.clone(),
                    options: options.clone(),
                },
            );
            order.push(BackendSlot::Name(name.clone()));
        }
    }
    if list.windows(2).all(|pair| pair[0].name < pair[1].name) {
        order.clear();
    }
    (volumes, order, extras)
}

/// The v1beta1-only fields of the back ends of the map, by back-end name.
#[derive(Default)]
struct CarriedExtras {
    privileged: Vec<String>,
    storage_volume_claims: BTreeMap<String, String>,
}

/// The v1beta1-only fields of one back end.
struct BackendExtras {
    privileged: bool,
    storage_volume_claim: Option<String>,
}

fn backend_to_beta(
    name: &str,
    backend: &v1alpha1::VolumeBackendSpec,
    extras: BackendExtras,
) -> v1beta1::VolumeBackend {
    let v1alpha1::VolumeBackendSpec {
        replicas,
        resources,
        options,
    } = backend;
    v1beta1::VolumeBackend {
        name: name.to_owned(),
        replicas: *replicas,
        resources: resources.clone(),
        options: options.clone(),
        privileged: extras.privileged,
        storage_volume_claim: extras.storage_volume_claim,
    }
}

fn status_to_beta(status: &v1alpha1::CinderStatus) -> v1beta1::CinderStatus {
    let v1alpha1::CinderStatus {
        installed_release,
        target_release,
        upgrade_phase,
        upgrade_phase_started_at,
        rolling_workload,
        conditions,
        observed_generation,
        pending_events,
    } = status;
    v1beta1::CinderStatus {
        installed_release: installed_release.clone(),
        target_release: target_release.clone(),
        upgrade_phase: match upgrade_phase {
            v1alpha1::CinderUpgradePhase::None => v1beta1::CinderUpgradePhase::None,
            v1alpha1::CinderUpgradePhase::Expanding => v1beta1::CinderUpgradePhase::Expanding,
            v1alpha1::CinderUpgradePhase::Migrating => v1beta1::CinderUpgradePhase::Migrating,
            v1alpha1::CinderUpgradePhase::RollingUpdate => {
                v1beta1::CinderUpgradePhase::RollingUpdate
            }
            v1alpha1::CinderUpgradePhase::Contracting => v1beta1::CinderUpgradePhase::Contracting,
        },
        upgrade_phase_started_at: upgrade_phase_started_at.clone(),
        rolling_workload: rolling_workload.clone(),
        conditions: conditions.clone(),
        observed_generation: *observed_generation,
        pending_events: pending_events.clone(),
    }
}

fn status_to_alpha(status: &v1beta1::CinderStatus) -> v1alpha1::CinderStatus {
    let v1beta1::CinderStatus {
        installed_release,
        target_release,
        upgrade_phase,
        upgrade_phase_started_at,
        rolling_workload,
        conditions,
        observed_generation,
        pending_events,
    } = status;
    v1alpha1::CinderStatus {
        installed_release: installed_release.clone(),
        target_release: target_release.clone(),
        upgrade_phase: match upgrade_phase {
            v1beta1::CinderUpgradePhase::None => v1alpha1::CinderUpgradePhase::None,
            v1beta1::CinderUpgradePhase::Expanding => v1alpha1::CinderUpgradePhase::Expanding,
            v1beta1::CinderUpgradePhase::Migrating => v1alpha1::CinderUpgradePhase::Migrating,
            v1beta1::CinderUpgradePhase::RollingUpdate => {
                v1alpha1::CinderUpgradePhase::RollingUpdate
            }
            v1beta1::CinderUpgradePhase::Contracting => v1alpha1::CinderUpgradePhase::Contracting,
        },
        upgrade_phase_started_at: upgrade_phase_started_at.clone(),
        rolling_workload: rolling_workload.clone(),
        conditions: conditions.clone(),
        observed_generation: *observed_generation,
        pending_events: pending_events.clone(),
    }
}

/// The metadata with these annotations; untouched (`None` stays `None`) when they are
/// the ones it has.
fn with_annotations(metadata: &ObjectMeta, annotations: BTreeMap<String, String>) -> ObjectMeta {
    let unchanged = match &metadata.annotations {
        Some(current) => *current == annotations,
        None => annotations.is_empty(),
    };
    let mut metadata = metadata.clone();
    if !unchanged {
        metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    }
    metadata
}

/// A record carried in an annotation.
trait Carried: Serialize + DeserializeOwned + Default {
    fn is_empty(&self) -> bool;
    /// The value the object itself had under the record's key.
    fn displaced_annotation(&mut self) -> &mut Option<String>;

    /// The record in an annotation value; `None` for any other value.
    fn parse(value: &str) -> Option<Self> {
        serde_json::from_str::<Self>(value)
            .ok()
            .filter(|record| !record.is_empty())
    }
}

/// Takes the record out of the annotations (empty if there is none), putting back what
/// the object had under the key before.
fn take_carried<T: Carried>(annotations: &mut BTreeMap<String, String>, key: &str) -> T {
    let Some(mut record) = annotations.get(key).and_then(|value| T::parse(value)) else {
        return T::default();
    };
    annotations.remove(key);
    if let Some(displaced) = record.displaced_annotation().take() {
        annotations.insert(key.to_owned(), displaced);
    }
    record
}

/// Puts the record into the annotations unless it is empty, keeping the value it
/// displaces in the record. A value under the key that reads as a record is displaced
/// even by an empty one, so that it is not taken for one later.
fn put_carried<T: Carried>(
    annotations: &mut BTreeMap<String, String>,
    key: &str,
    mut record: T,
) -> Result<(), ConversionError> {
    let holds_a_record = annotations
        .get(key)
        .is_some_and(|value| T::parse(value).is_some());
    if record.is_empty() && !holds_a_record {
        return Ok(());
    }
    *record.displaced_annotation() = annotations.remove(key);
    let value = serde_json::to_string(&record).map_err(ConversionError::Encode)?;
    annotations.insert(key.to_owned(), value);
    Ok(())
}

/// What a v1beta1 object held that its v1alpha1 form cannot express.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct V1beta1Only {
    /// The back-end list, when it was not sorted by name without repeats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    volume_backends: Vec<BackendSlot>,
    /// The names of the back ends of the map that are `privileged`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    privileged_backends: Vec<String>,
    /// The `storageVolumeClaim` of each back end of the map that has one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    storage_volume_claims: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    secret_options: Vec<SecretOption>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    security_context: Option<PodSecurity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    identity: Option<IdentitySpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    upgrade: Option<UpgradePolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    unknown_fields: Option<Overlay>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    displaced_annotation: Option<String>,
}

impl Carried for V1beta1Only {
    fn is_empty(&self) -> bool {
        self.volume_backends.is_empty()
            && self.privileged_backends.is_empty()
            && self.storage_volume_claims.is_empty()
            && self.secret_options.is_empty()
            && self.security_context.is_none()
            && self.identity.is_none()
            && self.upgrade.is_none()
            && self.unknown_fields.is_none()
            && self.displaced_annotation.is_none()
    }

    fn displaced_annotation(&mut self) -> &mut Option<String> {
        &mut self.displaced_annotation
    }
}

/// What a v1alpha1 object held that its v1beta1 form cannot express.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct V1alpha1Only {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    unknown_fields: Option<Overlay>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    displaced_annotation: Option<String>,
}

impl Carried for V1alpha1Only {
    fn is_empty(&self) -> bool {
        self.unknown_fields.is_none() && self.displaced_annotation.is_none()
    }

    fn displaced_annotation(&mut self) -> &mut Option<String> {
        &mut self.displaced_annotation
    }
}

/// One entry of a v1beta1 back-end list: the map's back end of that name, or a back end
/// whose name repeats an earlier one's.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
enum BackendSlot {
    Name(String),
    Repeat(v1beta1::VolumeBackend),
}

fn decode<T: DeserializeOwned>(object: &Value, api_version: &str) -> Result<T, ConversionError> {
    T::deserialize(object).map_err(|source| ConversionError::Invalid {
        api_version: api_version.to_owned(),
        source,
    })
}

fn encode<T: Serialize>(object: &T) -> Result<Value, ConversionError> {
    serde_json::to_value(object).map_err(ConversionError::Encode)
}

/// The fields of `object` (outside `metadata`) that its decoded form `known` lacks.
fn unknown_fields(object: &Value, known: &Value) -> Option<Overlay> {
    let mut overlay = Overlay::between(object, known)?;
    overlay.fields.remove("metadata");
    overlay.within.remove("metadata");
    (!overlay.is_empty()).then_some(overlay)
}

/// The converted object: `converted` with the carried unknown fields restored, and the
/// original `metadata` with the converted annotations.
fn assemble(
    original: Value,
    original_metadata: &ObjectMeta,
    mut converted: Value,
    converted_metadata: &ObjectMeta,
    restore: Option<Overlay>,
) -> Result<Value, ConversionError> {
    if let Some(overlay) = restore {
        overlay.apply(&mut converted);
    }
    let Value::Object(mut original) = original else {
        return Err(ConversionError::NotAnObject);
    };
    let Value::Object(converted_fields) = &mut converted else {
        return Err(ConversionError::NotAnObject);
    };
    if let Some(Value::Object(mut metadata)) = original.remove("metadata") {
        if original_metadata.annotations != converted_metadata.annotations {
            match &converted_metadata.annotations {
                Some(annotations) if !annotations.is_empty() => {
                    metadata.insert("annotations".to_owned(), encode(annotations)?);
                }
                _ => {
                    metadata.remove("annotations");
                }
            }
        }
        converted_fields.insert("metadata".to_owned(), Value::Object(metadata));
    }
    Ok(converted)
}

/// Fields to add back to a JSON value: those an original had and a converted form
/// lacks, at every depth. Only ever adds a field that is missing, so a change made
/// since never gets overwritten.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Overlay {
    /// Fields the object lacks, with their values.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    fields: Map<String, Value>,
    /// Overlays of fields the object has.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    within: BTreeMap<String, Overlay>,
    /// Overlays of list items.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    items: Vec<ItemOverlay>,
}

/// The overlay of the list item at `index`, applied only while the item is `item`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ItemOverlay {
    index: usize,
    item: Value,
    overlay: Overlay,
}

impl Overlay {
    /// What `original` has that `known` lacks; `None` if nothing.
    fn between(original: &Value, known: &Value) -> Option<Self> {
        let mut overlay = Self::default();
        match (original, known) {
            (Value::Object(original), Value::Object(known)) => {
                for (key, value) in original {
                    match known.get(key) {
                        None => {
                            overlay.fields.insert(key.clone(), value.clone());
                        }
                        Some(known) => {
                            if let Some(within) = Self::between(value, known) {
                                overlay.within.insert(key.clone(), within);
                            }
                        }
                    }
                }
            }
            (Value::Array(original), Value::Array(known)) if original.len() == known.len() => {
                for (index, (value, known)) in original.iter().zip(known).enumerate() {
                    if let Some(within) = Self::between(value, known) {
                        overlay.items.push(ItemOverlay {
                            index,
                            item: known.clone(),
                            overlay: within,
                        });
                    }
                }
            }
            _ => {}
        }
        (!overlay.is_empty()).then_some(overlay)
    }

    fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.within.is_empty() && self.items.is_empty()
    }

    fn apply(&self, target: &mut Value) {
        match target {
            Value::Object(target) => {
                for (key, value) in &self.fields {
                    target.entry(key.clone()).or_insert_with(|| value.clone());
                }
                for (key, within) in &self.within {
                    if let Some(value) = target.get_mut(key) {
                        within.apply(value);
                    }
                }
            }
            Value::Array(target) => {
                for item in &self.items {
                    if let Some(value) = target.get_mut(item.index)
                        && *value == item.item
                    {
                        item.overlay.apply(value);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_overlay_adds_back_what_the_known_form_lacks_and_nothing_else() {
        let original = json!({
            "a": 1,
            "future": {"x": [1]},
            "nested": {"b": 2, "later": true},
            "list": [{"n": 1, "extra": "e"}, {"n": 2}],
        });
        let known =
            json!({"a": 1, "nested": {"b": 2}, "list": [{"n": 1}, {"n": 2}], "default": {}});
        let overlay = Overlay::between(&original, &known).expect("fields are missing");
        let mut restored = known.clone();
        overlay.apply(&mut restored);
        let mut expected = original.clone();
        expected["default"] = json!({});
        assert_eq!(restored, expected);
        assert_eq!(Overlay::between(&known, &known), None);
    }

    #[test]
    fn an_overlay_never_replaces_a_field_and_skips_a_changed_list_item() {
        let original = json!({"spec": {"x": 1}, "list": [{"n": 1, "extra": "e"}]});
        let known = json!({"spec": {}, "list": [{"n": 1}]});
        let overlay = Overlay::between(&original, &known).expect("fields are missing");

        let mut edited = json!({"spec": {"x": 5}, "list": [{"n": 9}]});
        overlay.apply(&mut edited);
        assert_eq!(edited, json!({"spec": {"x": 5}, "list": [{"n": 9}]}));
    }

    #[test]
    fn only_non_empty_records_parse() {
        assert!(V1beta1Only::parse("{}").is_none());
        assert!(V1beta1Only::parse("not json").is_none());
        assert!(V1beta1Only::parse(r#"{"volumeBackends":[{"name":"a"}],"other":1}"#).is_none());
        assert!(V1beta1Only::parse(r#"{"volumeBackends":[{"name":"a"}]}"#).is_some());
        assert!(V1alpha1Only::parse(r#"{"displacedAnnotation":""}"#).is_some());
    }
}
