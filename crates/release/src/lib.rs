//! Release rules shared by every OpenStack service Ratchet manages. Pure: no I/O.
//!
//! - [`Release`]: `YYYY.N`, N ∈ {1, 2}; ordering, next/previous, [`Step`] classification.
//! - [`PatchedRelease`]: `YYYY.N-<patch>` as image tags carry it.
//! - [`ImageRef`]: repository plus exactly one of tag or digest, and the release a tag
//!   names, which the image/release lockstep guard compares ([`lockstep_mismatch`]).

mod image;
mod release;

pub use image::{
    ImageError, ImageLayout, ImagePin, ImageRef, ImageRelease, REPOSITORY_CHARACTERS_PATTERN,
    TAG_PATTERN, lockstep_mismatch,
};
pub use release::{
    MAX_YEAR, MIN_YEAR, PatchedRelease, RELEASE_PATTERN, Release, ReleaseError, Step, StepRefusal,
};
