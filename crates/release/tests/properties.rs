//! Properties of the release rules over generated inputs.

use proptest::prelude::*;
use ratchet_release::{PatchedRelease, RELEASE_PATTERN, Release, Step};

fn release() -> impl Strategy<Value = Release> {
    (2010u16..=9999, 1u8..=2).prop_filter_map("in range", |(y, m)| Release::new(y, m))
}

proptest! {
    /// The CRD pattern and the parser accept exactly the same strings.
    #[test]
    fn crd_pattern_agrees_with_parser(text in "[ +0-9.\\-a-z]{0,8}|[0-9]{4}\\.[0-9]{1,2}|[0-9]{3,5}\\.[0-9]") {
        let pattern = regex::Regex::new(RELEASE_PATTERN).expect("pattern compiles");
        prop_assert_eq!(pattern.is_match(&text), Release::parse(&text).is_ok(), "{:?}", text);
    }

    #[test]
    fn display_round_trips(r in release()) {
        prop_assert_eq!(Release::parse(&r.to_string()), Ok(r));
    }

    #[test]
    fn next_is_the_only_sequential_step(a in release(), b in release()) {
        prop_assert_eq!(a.is_sequential_upgrade(b), a.next() == Some(b));
    }

    #[test]
    fn steps_agree_with_ordering(a in release(), b in release()) {
        let step = a.step_to(b);
        prop_assert_eq!(step == Step::Same, a == b);
        prop_assert_eq!(step == Step::Downgrade, b < a);
        prop_assert_eq!(matches!(step, Step::Sequential | Step::SkipLevel), b > a);
    }

    #[test]
    fn patch_suffix_never_changes_the_release(r in release(), patch in "[a-z0-9][a-z0-9._-]{0,10}") {
        let parsed = PatchedRelease::parse(&format!("{r}-{patch}"));
        prop_assert_eq!(parsed.map(|p| p.release), Ok(r));
    }

    #[test]
    fn parser_never_panics(text in "\\PC{0,24}") {
        let _ = Release::parse(&text);
        let _ = PatchedRelease::parse(&text);
    }
}
