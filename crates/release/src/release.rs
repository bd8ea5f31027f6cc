//! OpenStack's date-based releases: `YYYY.N`, two a year (N is 1 or 2).

use std::fmt;
use std::str::FromStr;

/// The oldest year accepted. OpenStack's date-based names start at 2023.1; anything
/// before 2010 is certainly a typo, so it is refused rather than treated as ancient.
pub const MIN_YEAR: u16 = 2010;
/// Four-digit years only.
pub const MAX_YEAR: u16 = 9999;

/// The regular expression the CRD uses for `spec.openStackRelease`; it accepts
/// exactly what [`Release::parse`] accepts (a property test holds them together).
pub const RELEASE_PATTERN: &str = r"^(20[1-9][0-9]|2[1-9][0-9]{2}|[3-9][0-9]{3})\.[12]$";

/// One OpenStack release, e.g. 2026.1. Ordered chronologically.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release {
    year: u16,
    minor: u8,
}

/// Why a string is not a release.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReleaseError {
    #[error("{0:?} is not a release: expected YYYY.N with N 1 or 2, e.g. 2026.1")]
    Format(String),
    #[error("{0:?} is not a release: the year must be between {MIN_YEAR} and {MAX_YEAR}")]
    Year(String),
    #[error("{0:?} is not a release: OpenStack ships two releases a year, so N must be 1 or 2")]
    Minor(String),
}

/// How moving from one release to another is classified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Same release: not an upgrade (at most a patch bump).
    Same,
    /// One release forward: 2026.1 → 2026.2, 2026.2 → 2027.1.
    Sequential,
    /// More than one release forward (skips at least one release).
    SkipLevel,
    /// Backwards.
    Downgrade,
}

/// Why moving from the installed release to a target is not an upgrade: the
/// one wording the condition, admission and `ratchet plan` all give.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StepRefusal {
    #[error(
        "{target} is older than the installed release {installed}; downgrades are not supported (OpenStack databases cannot be migrated backwards)"
    )]
    Downgrade { installed: Release, target: Release },
    #[error("{installed} → {target} skips a release: upgrade to {next} first", next = next_of(*installed))]
    SkipLevel { installed: Release, target: Release },
}

fn next_of(release: Release) -> String {
    release.next().map(|r| r.to_string()).unwrap_or_default()
}

impl Release {
    /// A release from its parts; `None` outside the accepted ranges.
    pub fn new(year: u16, minor: u8) -> Option<Release> {
        ((MIN_YEAR..=MAX_YEAR).contains(&year) && (minor == 1 || minor == 2))
            .then_some(Release { year, minor })
    }

    pub fn year(self) -> u16 {
        self.year
    }

    pub fn minor(self) -> u8 {
        self.minor
    }

    /// Parses `YYYY.N` strictly: four-digit year without sign, a single digit 1 or 2,
    /// nothing before or after (no whitespace, no leading zeros, no patch suffix).
    pub fn parse(text: &str) -> Result<Release, ReleaseError> {
        let format = || ReleaseError::Format(text.to_string());
        let (year, minor) = text.split_once('.').ok_or_else(format)?;
        if year.len() != 4 || !year.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format());
        }
        if minor.len() != 1 || !minor.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format());
        }
        let year: u16 = year.parse().map_err(|_| format())?;
        let minor: u8 = minor.parse().map_err(|_| format())?;
        if year < MIN_YEAR {
            return Err(ReleaseError::Year(text.to_string()));
        }
        if minor != 1 && minor != 2 {
            return Err(ReleaseError::Minor(text.to_string()));
        }
        Ok(Release { year, minor })
    }

    /// The release after this one.
    pub fn next(self) -> Option<Release> {
        match self.minor {
            1 => Release::new(self.year, 2),
            _ => Release::new(self.year.checked_add(1)?, 1),
        }
    }

    /// The release before this one.
    pub fn previous(self) -> Option<Release> {
        match self.minor {
            2 => Release::new(self.year, 1),
            _ => Release::new(self.year.checked_sub(1)?, 2),
        }
    }

    /// How many releases lie between the two (positive when `to` is newer).
    pub fn distance(self, to: Release) -> i32 {
        let index = |r: Release| i32::from(r.year) * 2 + i32::from(r.minor) - 1;
        index(to) - index(self)
    }

    /// Classifies moving from `self` to `to`.
    pub fn step_to(self, to: Release) -> Step {
        match self.distance(to) {
            0 => Step::Same,
            1 => Step::Sequential,
            d if d > 1 => Step::SkipLevel,
            _ => Step::Downgrade,
        }
    }

    /// Why `to` may not follow this installed release (`None`: the same
    /// release, or one step forward).
    pub fn refuse_step_to(self, to: Release) -> Option<StepRefusal> {
        let (installed, target) = (self, to);
        match self.step_to(to) {
            Step::Same | Step::Sequential => None,
            Step::SkipLevel => Some(StepRefusal::SkipLevel { installed, target }),
            Step::Downgrade => Some(StepRefusal::Downgrade { installed, target }),
        }
    }

    /// Only a single step forward is an upgrade.
    pub fn is_sequential_upgrade(self, to: Release) -> bool {
        self.step_to(to) == Step::Sequential
    }

    pub fn is_downgrade(self, to: Release) -> bool {
        self.step_to(to) == Step::Downgrade
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.year, self.minor)
    }
}

impl FromStr for Release {
    type Err = ReleaseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Release::parse(s)
    }
}

impl serde::Serialize for Release {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Release {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Release::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A release with an optional patch suffix, as image tags carry it:
/// `2026.1` or `2026.1-p1` (the patch is ignored when comparing releases).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchedRelease {
    pub release: Release,
    pub patch: Option<String>,
}

impl PatchedRelease {
    /// Parses `YYYY.N` or `YYYY.N-<patch>`, where the patch is one or more of
    /// `[A-Za-z0-9._-]` starting with a letter or digit.
    pub fn parse(text: &str) -> Result<PatchedRelease, ReleaseError> {
        let (base, patch) = match text.split_once('-') {
            None => (text, None),
            Some((base, patch)) => {
                let valid = patch
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_alphanumeric())
                    && patch
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
                if !valid {
                    return Err(ReleaseError::Format(text.to_string()));
                }
                (base, Some(patch.to_string()))
            }
        };
        let release = Release::parse(base).map_err(|e| match e {
            ReleaseError::Format(_) => ReleaseError::Format(text.to_string()),
            ReleaseError::Year(_) => ReleaseError::Year(text.to_string()),
            ReleaseError::Minor(_) => ReleaseError::Minor(text.to_string()),
        })?;
        Ok(PatchedRelease { release, patch })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Release {
        Release::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn seed_format_table() {
        for ok in ["2026.1", "2026.2", "2027.1"] {
            assert_eq!(r(ok).to_string(), ok);
        }
    }

    #[test]
    fn rejects_malformed_releases() {
        let cases = [
            ("2025.9", "N must be 1 or 2"),
            ("2026.0", "N must be 1 or 2"),
            ("2026.3", "N must be 1 or 2"),
            ("2026.02", "expected YYYY.N"),
            ("2026.1-", "expected YYYY.N"),
            ("2026.1-p1", "expected YYYY.N"),
            ("+2026.1", "expected YYYY.N"),
            ("-2026.1", "expected YYYY.N"),
            ("2009.2", "year must be between"),
            ("0001.1", "year must be between"),
            ("1999.1", "year must be between"),
            (" 2026.1", "expected YYYY.N"),
            ("2026.1 ", "expected YYYY.N"),
            ("2026.1\n", "expected YYYY.N"),
            ("2026 .1", "expected YYYY.N"),
            ("20261", "expected YYYY.N"),
            ("2026.", "expected YYYY.N"),
            (".1", "expected YYYY.N"),
            ("", "expected YYYY.N"),
            ("2026.1.1", "expected YYYY.N"),
            ("99999999999999999999.1", "expected YYYY.N"),
            ("2026.99999999999999999999", "expected YYYY.N"),
            ("12026.1", "expected YYYY.N"),
            ("２０２６.1", "expected YYYY.N"),
            ("v2026.1", "expected YYYY.N"),
            ("latest", "expected YYYY.N"),
        ];
        for (text, why) in cases {
            let err = Release::parse(text).expect_err(text).to_string();
            assert!(err.contains(why), "{text:?}: {err}");
        }
    }

    #[test]
    fn seed_transition_table() {
        let table = [
            ("2026.1", "2026.2", Step::Sequential),
            ("2026.2", "2027.1", Step::Sequential),
            ("2026.1", "2027.1", Step::SkipLevel),
            ("2026.2", "2026.1", Step::Downgrade),
            ("2026.1", "2026.1", Step::Same),
            ("2027.1", "2026.2", Step::Downgrade),
            ("2026.1", "2028.2", Step::SkipLevel),
        ];
        for (from, to, step) in table {
            assert_eq!(r(from).step_to(r(to)), step, "{from} → {to}");
            assert_eq!(
                r(from).is_sequential_upgrade(r(to)),
                step == Step::Sequential
            );
            assert_eq!(r(from).is_downgrade(r(to)), step == Step::Downgrade);
            assert_eq!(
                r(from).refuse_step_to(r(to)).is_none(),
                matches!(step, Step::Same | Step::Sequential),
                "{from} → {to}"
            );
        }
    }

    #[test]
    fn refusals_name_both_releases_and_the_way_forward() {
        let refused = |from: &str, to: &str| {
            r(from)
                .refuse_step_to(r(to))
                .map(|why| why.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            refused("2026.2", "2026.1"),
            "2026.1 is older than the installed release 2026.2; downgrades are not supported (OpenStack databases cannot be migrated backwards)"
        );
        assert_eq!(
            refused("2026.1", "2027.1"),
            "2026.1 → 2027.1 skips a release: upgrade to 2026.2 first"
        );
        assert_eq!(
            refused("2026.2", "2028.1"),
            "2026.2 → 2028.1 skips a release: upgrade to 2027.1 first"
        );
    }

    #[test]
    fn next_and_previous_cross_years_and_bounds() {
        assert_eq!(r("2026.1").next(), Some(r("2026.2")));
        assert_eq!(r("2026.2").next(), Some(r("2027.1")));
        assert_eq!(r("2027.1").previous(), Some(r("2026.2")));
        assert_eq!(r("9999.2").next(), None);
        assert_eq!(r("2010.1").previous(), None);
    }

    #[test]
    fn patched_releases_from_tags() {
        let p = PatchedRelease::parse("2026.1-p1").expect("patched");
        assert_eq!(p.release, r("2026.1"));
        assert_eq!(p.patch.as_deref(), Some("p1"));
        assert_eq!(PatchedRelease::parse("2026.2").expect("plain").patch, None);
        assert!(PatchedRelease::parse("2026.1-20260115.3").is_ok());
        for bad in [
            "2026.1-",
            "2026.1--x",
            "2026.1-.x",
            "2026.1-p 1",
            "+2026.1-p1",
            "2025.9-p1",
        ] {
            assert!(PatchedRelease::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn serde_round_trips_and_rejects_bad_strings() {
        let json = serde_json::to_string(&r("2026.2")).expect("serialise");
        assert_eq!(json, "\"2026.2\"");
        assert_eq!(
            serde_json::from_str::<Release>(&json).ok(),
            Some(r("2026.2"))
        );
        assert!(serde_json::from_str::<Release>("\"2025.9\"").is_err());
    }
}
