//! Container image references: a repository plus exactly one of tag or digest,
//! and the release a tag names (the input of the image/release lockstep guard).

use std::fmt;

use crate::release::{PatchedRelease, Release};

/// A tag, as an OpenAPI `pattern`: what [`ImageRef::new`] admits (the OCI tag
/// grammar, at most 128 characters).
pub const TAG_PATTERN: &str = r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$";

/// The characters a repository may hold, as an OpenAPI `pattern`. Coarser than
/// [`ImageRef::new`] (which checks the path components and the registry host),
/// it keeps whitespace and control characters out of stored objects: the image
/// reference goes into pod specs, not a configuration file or a shell.
pub const REPOSITORY_CHARACTERS_PATTERN: &str = r"^[A-Za-z0-9._:/-]+$";

/// Why an image reference is refused. Messages name the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    EmptyRepository,
    Repository(String),
    TagAndDigest,
    NeitherTagNorDigest,
    Tag(String),
    Digest(String),
}

/// Where a resource keeps its image's tag and digest, so that messages name the
/// field the user wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ImageLayout {
    /// `spec.image.tag` / `spec.image.digest` (Ironic, Cinder v1alpha1).
    #[default]
    Flat,
    /// `spec.image.reference.tag` / `spec.image.reference.digest` (Cinder v1beta1).
    Reference,
}

impl ImageLayout {
    /// The object holding the tag or digest.
    pub fn pin_field(self) -> &'static str {
        match self {
            ImageLayout::Flat => "spec.image",
            ImageLayout::Reference => "spec.image.reference",
        }
    }
}

impl ImageError {
    /// The message, naming the fields as `layout` places them. `Display` names
    /// them as [`ImageLayout::Flat`] does.
    pub fn message(&self, layout: ImageLayout) -> String {
        let pin = layout.pin_field();
        match self {
            ImageError::EmptyRepository => "spec.image.repository must not be empty".into(),
            ImageError::Repository(repository) => format!(
                "spec.image.repository {repository:?} is not a valid repository (lowercase path components of letters, digits and . _ -, separated by /, optionally after a registry host[:port])"
            ),
            ImageError::TagAndDigest => {
                format!("{pin}: set exactly one of tag and digest, not both")
            }
            ImageError::NeitherTagNorDigest => format!("{pin}: set one of tag or digest"),
            ImageError::Tag(tag) => format!(
                "{pin}.tag {tag:?} is not a valid tag (1–128 of letters, digits, . _ -, not starting with . or -)"
            ),
            ImageError::Digest(digest) => format!(
                "{pin}.digest {digest:?} is not a valid digest (sha256: followed by 64 lowercase hex digits)"
            ),
        }
    }
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message(ImageLayout::Flat))
    }
}

/// A validated image reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRef {
    pub repository: String,
    pub pin: ImagePin,
}

/// How the image is pinned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImagePin {
    Tag(String),
    Digest(String),
}

/// What the lockstep guard learns from an image about its release.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageRelease {
    /// The tag parses as a release (patch suffix ignored).
    Named(Release),
    /// A digest, or a tag that does not parse as a release: trusted to match.
    Unknown,
}

impl ImageRef {
    /// Validates the three fields of `spec.image`.
    pub fn new(
        repository: &str,
        tag: Option<&str>,
        digest: Option<&str>,
    ) -> Result<ImageRef, ImageError> {
        validate_repository(repository)?;
        let pin = match (tag, digest) {
            (Some(_), Some(_)) => return Err(ImageError::TagAndDigest),
            (None, None) => return Err(ImageError::NeitherTagNorDigest),
            (Some(tag), None) => {
                validate_tag(tag)?;
                ImagePin::Tag(tag.to_string())
            }
            (None, Some(digest)) => {
                validate_digest(digest)?;
                ImagePin::Digest(digest.to_string())
            }
        };
        Ok(ImageRef {
            repository: repository.to_string(),
            pin,
        })
    }

    /// The release the tag names: `2026.1-p1` names 2026.1; `latest` or a digest
    /// names none.
    pub fn release(&self) -> ImageRelease {
        match &self.pin {
            ImagePin::Tag(tag) => PatchedRelease::parse(tag)
                .map(|p| ImageRelease::Named(p.release))
                .unwrap_or(ImageRelease::Unknown),
            ImagePin::Digest(_) => ImageRelease::Unknown,
        }
    }

    pub fn tag(&self) -> Option<&str> {
        match &self.pin {
            ImagePin::Tag(t) => Some(t),
            ImagePin::Digest(_) => None,
        }
    }
}

impl fmt::Display for ImageRef {
    /// `repository:tag` or `repository@digest`, as a pod spec wants it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pin {
            ImagePin::Tag(tag) => write!(f, "{}:{tag}", self.repository),
            ImagePin::Digest(digest) => write!(f, "{}@{digest}", self.repository),
        }
    }
}

/// The lockstep rule: a tag naming a release different from the declared one.
/// Returns the release the image names when it disagrees.
pub fn lockstep_mismatch(image: &ImageRef, declared: Release) -> Option<Release> {
    match image.release() {
        ImageRelease::Named(named) if named != declared => Some(named),
        _ => None,
    }
}

fn is_component(s: &str) -> bool {
    // [a-z0-9]+ ([._-]+ [a-z0-9]+)*  (separators between alphanumeric runs)
    !s.is_empty()
        && s.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && s.bytes()
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && s.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'_' || b == b'-'
        })
}

fn is_registry_host(s: &str) -> bool {
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    host_ok && port_ok
}

fn validate_repository(repository: &str) -> Result<(), ImageError> {
    if repository.is_empty() {
        return Err(ImageError::EmptyRepository);
    }
    let bad = || ImageError::Repository(repository.to_string());
    if repository.len() > 255 {
        return Err(bad());
    }
    let mut parts = repository.split('/').peekable();
    let first = parts.next().ok_or_else(bad)?;
    // A first component with a dot, a colon or "localhost" names a registry host.
    let first_is_host = parts.peek().is_some()
        && (first.contains('.') || first.contains(':') || first == "localhost");
    if first_is_host {
        if !is_registry_host(first) {
            return Err(bad());
        }
    } else if !is_component(first) {
        return Err(bad());
    }
    if parts.all(is_component) {
        Ok(())
    } else {
        Err(bad())
    }
}

fn validate_tag(tag: &str) -> Result<(), ImageError> {
    let valid = (1..=128).contains(&tag.len())
        && tag
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if valid {
        Ok(())
    } else {
        Err(ImageError::Tag(tag.to_string()))
    }
}

fn validate_digest(digest: &str) -> Result<(), ImageError> {
    let valid = digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if valid {
        Ok(())
    } else {
        Err(ImageError::Digest(digest.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn release(s: &str) -> Release {
        Release::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn tag_xor_digest() {
        assert_eq!(
            ImageRef::new("cinder", Some("2026.1"), Some(DIGEST)),
            Err(ImageError::TagAndDigest)
        );
        assert_eq!(
            ImageRef::new("cinder", None, None),
            Err(ImageError::NeitherTagNorDigest)
        );
        assert!(ImageRef::new("cinder", Some("2026.1"), None).is_ok());
        assert!(ImageRef::new("cinder", None, Some(DIGEST)).is_ok());
    }

    #[test]
    fn the_release_a_tag_names() {
        let cases = [
            ("2026.1", Some("2026.1")),
            ("2026.1-p1", Some("2026.1")),
            ("2026.2-20261130", Some("2026.2")),
            ("latest", None),
            ("2025.9", None),
            ("v2026.1", None),
            ("2026.1-", None),
            ("2026.02", None),
        ];
        for (tag, named) in cases {
            let image = ImageRef::new("repo/cinder", Some(tag), None).expect(tag);
            let expected = named.map_or(ImageRelease::Unknown, |r| ImageRelease::Named(release(r)));
            assert_eq!(image.release(), expected, "{tag}");
        }
        let digest = ImageRef::new("repo/cinder", None, Some(DIGEST)).expect("digest");
        assert_eq!(digest.release(), ImageRelease::Unknown);
    }

    #[test]
    fn lockstep_guard_rows() {
        let image = |tag: &str| ImageRef::new("cinder", Some(tag), None).expect(tag);
        // Tag names a different release → mismatch.
        assert_eq!(
            lockstep_mismatch(&image("2026.1"), release("2026.2")),
            Some(release("2026.1"))
        );
        // Patch suffix ignored.
        assert_eq!(
            lockstep_mismatch(&image("2026.1-p1"), release("2026.1")),
            None
        );
        // Non-release tags and digests are trusted.
        assert_eq!(lockstep_mismatch(&image("latest"), release("2026.2")), None);
        let digest = ImageRef::new("cinder", None, Some(DIGEST)).expect("digest");
        assert_eq!(lockstep_mismatch(&digest, release("2026.2")), None);
    }

    #[test]
    fn references_render_for_pod_specs() {
        let tagged = ImageRef::new(
            "registry.example:5000/openstack/cinder",
            Some("2026.1"),
            None,
        )
        .expect("tagged");
        assert_eq!(
            tagged.to_string(),
            "registry.example:5000/openstack/cinder:2026.1"
        );
        let pinned = ImageRef::new("openstack/cinder", None, Some(DIGEST)).expect("digest");
        assert_eq!(pinned.to_string(), format!("openstack/cinder@{DIGEST}"));
    }

    #[test]
    fn repository_and_tag_validation() {
        for ok in [
            "cinder",
            "openstack/cinder",
            "localhost/cinder",
            "host.example/a/b-c",
            "host:5000/x",
            "a__b/c.d",
        ] {
            assert!(validate_repository(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Cinder",
            "/cinder",
            "cinder/",
            "a//b",
            "cinder:2026.1",
            "cin der",
            "-x",
            "x-",
            "host:port/x",
        ] {
            assert!(validate_repository(bad).is_err(), "{bad}");
        }
        for bad in ["", ".x", "-x", "a b", "a:b", &"x".repeat(129)] {
            assert!(validate_tag(bad).is_err(), "{bad}");
        }
        for bad in [
            "sha256:abc",
            "md5:0123",
            &DIGEST.to_uppercase(),
            &DIGEST[..70],
        ] {
            assert!(validate_digest(bad).is_err(), "{bad}");
        }
        let err = ImageRef::new("Cinder", Some("x"), None)
            .expect_err("uppercase")
            .to_string();
        assert!(err.contains("spec.image.repository"), "{err}");
    }

    #[test]
    fn the_schema_patterns_agree_with_the_validation() {
        let tag = regex::Regex::new(TAG_PATTERN).expect("tag pattern");
        let chars = regex::Regex::new(REPOSITORY_CHARACTERS_PATTERN).expect("repository pattern");
        for t in [
            "2026.1", "_x", "a-b.c_d", ".x", "-x", "", "a b", "a\nb", "a:b", "ü",
        ] {
            assert_eq!(tag.is_match(t), validate_tag(t).is_ok(), "{t:?}");
        }
        let long = "x".repeat(129);
        assert!(!tag.is_match(&long) && validate_tag(&long).is_err());
        // Whatever the validation admits, the coarser schema pattern admits too.
        for r in [
            "cinder",
            "host.example:5000/a/b-c",
            "localhost/x",
            "a__b/c.d",
        ] {
            assert!(validate_repository(r).is_ok() && chars.is_match(r), "{r}");
        }
        for r in ["a b", "a\nb", "a\u{7f}", "é", "a@b"] {
            assert!(
                !chars.is_match(r) && validate_repository(r).is_err(),
                "{r:?}"
            );
        }
    }

    #[test]
    fn messages_name_the_fields_where_the_layout_keeps_them() {
        let tag = ImageRef::new("cinder", Some(".x"), None).expect_err("bad tag");
        assert!(
            tag.message(ImageLayout::Flat)
                .starts_with("spec.image.tag ")
        );
        assert!(
            tag.message(ImageLayout::Reference)
                .starts_with("spec.image.reference.tag ")
        );
        let both = ImageRef::new("cinder", Some("x"), Some(DIGEST)).expect_err("both");
        assert!(
            both.message(ImageLayout::Reference)
                .starts_with("spec.image.reference: set exactly one")
        );
        let repository = ImageRef::new("", Some("x"), None).expect_err("empty");
        assert_eq!(
            repository.message(ImageLayout::Reference),
            "spec.image.repository must not be empty"
        );
    }
}
