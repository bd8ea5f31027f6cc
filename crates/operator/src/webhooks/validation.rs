//! What admission refuses, decided without I/O. Each message names the field.

use ratchet_release::{ImageRef, Release, StepRefusal};

use crate::service::contract::OpenStackService;

/// Reasons to refuse a create or update of any service resource; empty when
/// it is admitted.
///
/// - `spec.openStackRelease` must be `YYYY.N` (N 1 or 2): the CRD pattern says
///   the same, this catches clusters where the schema was edited.
/// - `spec.image` must name a repository and exactly one of tag or digest.
/// - `spec.extraConfig` may not name an option Ratchet sets itself, nor hold
///   names or values oslo.config would read otherwise than written (a line
///   break that opens a section, a `[`, `=` or `:` in a name, ...; the rules
///   are `ratchet_api::oslo`'s); nor may a Cinder back end's `options`.
/// - A release older than `status.installedRelease` is refused (a downgrade),
///   whether or not an upgrade is active. Moving back to the installed release
///   itself is the abort and is admitted.
/// - `spec.secretOptions` must each name an option with an environment variable
///   of its own, none of the options Ratchet sets through the environment, and
///   none that `extraConfig` (or a Cinder back end's `options`) sets too.
/// - Whatever the service itself refuses ([`OpenStackService::violations`]).
///
/// What it admits but warns about is [`OpenStackService::warnings`].
pub fn validate<S: OpenStackService>(new: &S, old: Option<&S>) -> Vec<String> {
    let mut violations = Vec::new();
    let spec = new.spec_view();
    let release = match Release::parse(&spec.release) {
        Ok(r) => Some(r),
        Err(e) => {
            violations.push(format!("spec.openStackRelease: {e}"));
            None
        }
    };
    if let Err(e) = ImageRef::new(
        &spec.image_repository,
        spec.image_tag.as_deref(),
        spec.image_digest.as_deref(),
    ) {
        violations.push(e.message(spec.image_layout));
    }
    violations.extend(spec.invalid_config.iter().cloned());
    violations.extend(new.violations());
    if let (Some(release), Some(old)) = (release, old)
        && let Ok(installed) = Release::parse(&old.status_view().installed_release)
        && let Some(downgrade @ StepRefusal::Downgrade { .. }) = installed.refuse_step_to(release)
    {
        violations.push(format!("spec.openStackRelease: {downgrade}"));
    }
    violations
}

/// A lowercase DNS label (RFC 1123).
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}
