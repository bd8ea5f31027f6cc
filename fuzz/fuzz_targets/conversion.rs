//! Cinder v1alpha1 ↔ v1beta1 conversion of arbitrary JSON: never panics; what
//! converts converts back; and where the input is a valid object, the round
//! trip gives it back exactly (unknown fields included). The one documented
//! exception: an object that already carries a conversion record under one of
//! the conversion annotation keys has it consumed. The ConversionReview answer
//! (what the webhook endpoint returns) never panics either.
#![no_main]

use kube::core::conversion::ConversionReview;
use libfuzzer_sys::fuzz_target;
use ratchet_services::cinder::conversion::{
    V1ALPHA1, V1ALPHA1_ANNOTATION, V1BETA1, V1BETA1_ANNOTATION, convert,
};
use ratchet_services::cinder::{v1alpha1, v1beta1};
use serde_json::Value;

/// Whether the object carries either conversion annotation (a record put there
/// by hand is read as one: documented, not lossless).
fn carries_a_record(object: &Value) -> bool {
    let annotations = &object["metadata"]["annotations"];
    [V1ALPHA1_ANNOTATION, V1BETA1_ANNOTATION]
        .iter()
        .any(|key| annotations.get(key).is_some())
}

/// The JSON type of a value.
fn kind(value: &Value) -> u8 {
    match value {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

/// Adds to `object` every field of `typed` (its decoded and re-encoded form)
/// that it lacks or holds as `null`: the defaults the types fill in
/// (`backup: {}`, empty status strings), which a converted object carries.
fn add_defaults(object: &mut Value, typed: &Value) {
    match (object, typed) {
        (Value::Object(fields), Value::Object(typed)) => {
            for (key, value) in typed {
                match fields.get_mut(key) {
                    // The types read `null` as the default; the API server stores
                    // no `null` in a field that is not nullable.
                    Some(field) if field.is_null() => *field = value.clone(),
                    Some(field) => add_defaults(field, value),
                    None => {
                        fields.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (Value::Array(items), Value::Array(typed)) if items.len() == typed.len() => {
            for (item, typed) in items.iter_mut().zip(typed) {
                add_defaults(item, typed);
            }
        }
        // serde reads some values of another JSON type (a list as a struct, its
        // fields in order; `{"Variant": null}` as an enum's variant); the API
        // server stores only the type the schema declares.
        (object, typed) if kind(object) != kind(typed) && !typed.is_null() => {
            *object = typed.clone()
        }
        _ => {}
    }
}

/// The object as a valid one of its version reads once its defaults are
/// filled in, with its condition timestamps as the typed form writes them (a
/// timestamp written differently, `.000` or an offset, is the same instant,
/// and the conversion writes it in its own form).
fn canonical(mut object: Value) -> Value {
    let typed = match object["apiVersion"].as_str() {
        Some(V1ALPHA1) => serde_json::from_value::<v1alpha1::Cinder>(object.clone())
            .ok()
            .and_then(|c| serde_json::to_value(c).ok()),
        Some(V1BETA1) => serde_json::from_value::<v1beta1::Cinder>(object.clone())
            .ok()
            .and_then(|c| serde_json::to_value(c).ok()),
        _ => None,
    };
    let Some(typed) = typed else { return object };
    add_defaults(&mut object, &typed);
    // `metadata` as the API server stores it: typed, without nulls, empty maps or
    // unknown fields.
    if let (Some(metadata), Some(typed)) = (object.get_mut("metadata"), typed.get("metadata")) {
        *metadata = typed.clone();
        if let Value::Object(fields) = metadata {
            fields.retain(|_, v| match v {
                Value::Object(m) => !m.is_empty(),
                Value::Array(a) => !a.is_empty(),
                _ => true,
            });
        }
    }
    if let (Some(Value::Array(conditions)), Some(Value::Array(written))) = (
        object.pointer_mut("/status/conditions"),
        typed.pointer("/status/conditions"),
    ) {
        for (condition, written) in conditions.iter_mut().zip(written) {
            if let (Some(time), Some(Value::String(canonical))) = (
                condition.get_mut("lastTransitionTime"),
                written.get("lastTransitionTime"),
            ) && time.is_string()
            {
                *time = Value::String(canonical.clone());
            }
        }
    }
    object
}

fuzz_target!(|data: &[u8]| {
    let mut u = arbitrary::Unstructured::new(data);
    let Ok(object) = ratchet_fuzz::object(
        &mut u,
        &[ratchet_fuzz::cinder_v1alpha1(), ratchet_fuzz::cinder_v1beta1()],
    ) else {
        return;
    };
    let object = canonical(object);
    for (target, source) in [(V1BETA1, V1ALPHA1), (V1ALPHA1, V1BETA1)] {
        let converted = convert(object.clone(), target);
        // An object already at the target comes back as it is, valid or not.
        if object["apiVersion"] != source {
            continue;
        }
        let Ok(there) = converted else {
            continue;
        };
        assert_eq!(there["apiVersion"], target);
        let back = convert(there.clone(), source)
            .unwrap_or_else(|e| panic!("a converted object does not convert back: {e}\n{there}"));
        if !carries_a_record(&object) {
            assert_eq!(back, object, "lossy round trip via\n{there}");
        }
        // Converting again gives the same object again.
        let again = convert(back.clone(), target).expect("converts again");
        assert_eq!(again, there, "a second conversion differs");
    }
    // The webhook's answer to a ConversionReview holding the object.
    let review = serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "u",
            "desiredAPIVersion": if u.arbitrary().unwrap_or(false) { V1ALPHA1 } else { V1BETA1 },
            "objects": [object],
        }
    });
    if let Ok(review) = serde_json::from_value::<ConversionReview>(review) {
        let _ = ratchet_operator::webhooks::conversion::answer::<v1beta1::Cinder>(review);
    }
});
