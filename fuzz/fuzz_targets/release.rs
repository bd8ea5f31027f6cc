//! Release parsing: never panics; what parses prints back to itself; the CRD's
//! pattern admits exactly what the parser does; stepping is consistent.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use ratchet_release::{PatchedRelease, RELEASE_PATTERN, Release, Step};

static PATTERN: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(RELEASE_PATTERN).expect("the release pattern compiles"));

fuzz_target!(|input: (&str, &str)| {
    let (a, b) = input;
    let parsed = Release::parse(a);
    assert_eq!(
        parsed.is_ok(),
        PATTERN.is_match(a),
        "pattern and parser disagree on {a:?}"
    );
    if let Ok(release) = parsed {
        assert_eq!(release.to_string(), a);
        assert_eq!(Release::parse(&release.to_string()), Ok(release));
        if let Some(next) = release.next() {
            assert_eq!(next.previous(), Some(release));
            assert_eq!(release.step_to(next), Step::Sequential);
            assert!(release < next);
        }
        if let Some(previous) = release.previous() {
            assert_eq!(previous.next(), Some(release));
            assert_eq!(release.step_to(previous), Step::Downgrade);
        }
        if let Ok(other) = Release::parse(b) {
            assert_eq!(release.distance(other), -other.distance(release));
            assert_eq!(
                release.cmp(&other),
                release.distance(other).cmp(&0).reverse()
            );
        }
    }
    if let Ok(patched) = PatchedRelease::parse(a) {
        let text = match &patched.patch {
            Some(patch) => format!("{}-{patch}", patched.release),
            None => patched.release.to_string(),
        };
        assert_eq!(text, a);
    }
});
