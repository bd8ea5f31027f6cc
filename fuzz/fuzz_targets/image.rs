//! Image references: never panics; an admitted reference renders as a pod
//! spec's `image` that splits back into what was given, holds no whitespace or
//! control character, and passes the CRD's coarser patterns.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use ratchet_release::{
    ImageLayout, ImagePin, ImageRef, REPOSITORY_CHARACTERS_PATTERN, Release, TAG_PATTERN,
    lockstep_mismatch,
};

static TAG: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(TAG_PATTERN).expect("tag pattern"));
static REPOSITORY: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(REPOSITORY_CHARACTERS_PATTERN).expect("repository pattern"));

fuzz_target!(|data: &[u8]| {
    let mut u = arbitrary::Unstructured::new(data);
    let Ok(repository) = ratchet_fuzz::text(&mut u) else {
        return;
    };
    let tag = match u.arbitrary::<bool>() {
        Ok(true) => ratchet_fuzz::text(&mut u).ok(),
        _ => None,
    };
    let digest = match u.arbitrary::<bool>() {
        Ok(true) => ratchet_fuzz::text(&mut u).ok(),
        _ => None,
    };
    match ImageRef::new(&repository, tag.as_deref(), digest.as_deref()) {
        Ok(image) => {
            let rendered = image.to_string();
            assert!(
                !rendered
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control()),
                "{rendered:?}"
            );
            assert!(REPOSITORY.is_match(&image.repository), "{repository:?}");
            let back = match &image.pin {
                ImagePin::Tag(tag) => {
                    assert!(TAG.is_match(tag), "{tag:?}");
                    rendered
                        .rsplit_once(':')
                        .map(|(r, t)| (r, ImagePin::Tag(t.into())))
                }
                ImagePin::Digest(digest) => rendered
                    .split_once('@')
                    .map(|(r, d)| (r, ImagePin::Digest(d.into())))
                    .filter(|_| digest.starts_with("sha256:")),
            };
            assert_eq!(back, Some((repository.as_str(), image.pin.clone())));
            let _ = image.release();
            if let Ok(release) = Release::parse("2026.1") {
                let _ = lockstep_mismatch(&image, release);
            }
        }
        Err(e) => {
            let flat = e.message(ImageLayout::Flat);
            let nested = e.message(ImageLayout::Reference);
            assert!(flat.starts_with("spec.image") && nested.starts_with("spec.image"));
            // A tag the validation refuses, the schema refuses too (when it is the reason).
            if let (Some(tag), ratchet_release::ImageError::Tag(_)) = (&tag, &e) {
                assert!(!TAG.is_match(tag), "{tag:?}");
            }
        }
    }
});
