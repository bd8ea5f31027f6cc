//! The README's main command, end to end: a local cluster, the operator, an
//! install and an upgrade (a failing Cinder upgrade that is aborted; an Ironic
//! upgrade failing past the point of no return, fixed and retried), judged by
//! the demo's final verdict; and what the demo refuses before it starts
//! anything.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn demo(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(["demo", "--exit-when-done", "--ready-delay-ms", "50"])
        .args(args)
        .output()
        .expect("the ratchet binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "demo failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn demo_upgrades_one_release_forward() {
    let out = demo(&[]);
    assert!(out.contains("Cinder is Ready at release 2026.1"), "{out}");
    for phase in ["Expanding", "Migrating", "RollingUpdate", "Contracting"] {
        assert!(
            out.contains(&format!("phase: {phase}")),
            "no {phase} in\n{out}"
        );
    }
    // The timeline `ratchet timeline` reads back from the cluster.
    let timeline = out
        .split_once("Timeline (ratchet timeline cinder/cinder -n demo):\n")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no timeline in\n{out}"));
    for row in [
        "  Expanding ",
        "  Contracting ",
        "  cinder-scheduler ",
        "  cinder-db-contract ",
    ] {
        assert!(timeline.contains(row), "no {row:?} in\n{out}");
    }
    assert!(
        out.contains("VERDICT: upgraded 2026.1 → 2026.2 in"),
        "{out}"
    );
    // The check reads as in a real cluster, and each event shows once.
    let check = "event Normal UpgradeCheckCompleted: cinder upgrade check exited 0";
    assert_eq!(out.matches(check).count(), 1, "{out}");
    assert_eq!(
        out.matches("event Normal UpgradeComplete:").count(),
        1,
        "{out}"
    );
    // The second roll, after promotion, starting with Ready held (the demo's
    // lone replicas then drop it while each restarts: docs/conditions.md).
    let second_roll = out
        .lines()
        .find(|l| l.contains("second roll, releasing the RPC pins"));
    assert!(
        second_roll.is_some_and(|l| l.contains("cinder-scheduler") && l.contains("(Ready=True)")),
        "{out}"
    );
    assert!(
        !out.contains("ScalingReplicaSet"),
        "only Ratchet's events:\n{out}"
    );
}

#[test]
fn demo_reports_upgrade_check_warnings_and_goes_on() {
    let out = demo(&["--inject", "warn-check"]);
    assert!(
        out.contains("event Warning UpgradeCheckWarnings: cinder upgrade check exited 1"),
        "{out}"
    );
    assert!(
        out.contains("VERDICT: upgraded 2026.1 → 2026.2 in"),
        "{out}"
    );
}

#[test]
fn demo_shows_a_failed_phase_and_its_abort() {
    let out = demo(&["--release", "2026.2", "--inject", "fail-check"]);
    assert!(
        out.contains("VERDICT: upgrade 2026.2 → 2027.1 FAILED in Migrating (MigrateFailed); aborted back to 2026.2"),
        "{out}"
    );
    assert!(
        out.contains("Cinder demo/cinder: 2026.2 → 2027.1, aborted after")
            && out.contains("MigrateFailed; aborted"),
        "the timeline shows the failed phase and the abort:\n{out}"
    );
}

#[test]
fn demo_upgrades_an_ironic_and_recovers_forward_past_the_point_of_no_return() {
    let out = demo(&["--service", "ironic", "--inject", "fail-data-migrations"]);
    assert!(out.contains("Ironic is Ready at release 2026.1"), "{out}");
    for line in [
        "phase: DatabaseUpgrade",
        "phase: UpgradeCheck",
        "phase: PinnedRoll",
        "new pods pinned to 2026.1 (pin_release_version)",
        "pin removed: new pods run unpinned",
        "phase: Unpinning",
        "phase: OnlineMigrations",
        "Ironic demo/ironic: 2026.1 → 2026.2, complete in",
        "recovered after DatabaseNotCompatible",
        "  ironic-conductor ",
        "OnlineMigrations is past the point of no return: no abort.",
        "Deleted the failed Job ironic-online-migrations.",
    ] {
        assert!(out.contains(line), "no {line:?} in\n{out}");
    }
    assert!(
        out.contains("VERDICT: upgrade 2026.1 → 2026.2 FAILED in OnlineMigrations (DatabaseNotCompatible); retried after the fix and completed"),
        "{out}"
    );
}

/// `ratchet` with `args` and `envs`, as the user `uid` when given: then a
/// copy of the binary in a directory that user can enter (the build may live
/// under root's home, which it cannot).
fn ratchet_as(uid: Option<u32>, args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let built = Path::new(env!("CARGO_BIN_EXE_ratchet"));
    let copy = tempfile::tempdir().expect("a directory for the binary");
    let binary = match uid {
        Some(_) => {
            let open = |path: &Path, mode| {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
                    .expect("permissions")
            };
            let binary = copy.path().join("ratchet");
            std::fs::copy(built, &binary).expect("the binary copied");
            open(copy.path(), 0o755);
            open(&binary, 0o755);
            binary
        }
        None => built.to_path_buf(),
    };
    let mut command = Command::new(binary);
    command.args(args).env("RUST_BACKTRACE", "1");
    for (key, value) in envs {
        command.env(key, value);
    }
    if let Some(uid) = uid {
        command.uid(uid).gid(uid);
    }
    command.output().expect("the ratchet binary runs")
}

/// A failed command says what failed in one line, never anyhow's report with
/// its stack trace (which `RUST_BACKTRACE=1` adds).
#[test]
fn a_failure_is_one_line() {
    let out = ratchet_as(None, &["demo", "--release", "2026.x"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "ratchet: \"2026.x\" is not a release: expected YYYY.N with N 1 or 2, e.g. 2026.1"
    );
}

/// `demo --real` checks the machine before it starts anything: run by
/// another user than root it stops at once, with one line naming the command
/// to run as root (the test drops to `nobody` when it runs as root).
#[test]
fn demo_real_without_root_stops_at_once_saying_what_to_run() {
    let cache = tempfile::tempdir().expect("a cache directory");
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o777))
        .expect("open to nobody");
    // SAFETY: geteuid has no preconditions.
    let uid = (unsafe { libc::geteuid() } == 0).then_some(65534);
    let started = Instant::now();
    let out = ratchet_as(
        uid,
        &["demo", "--real", "--service", "ironic"],
        &[("RATCHET_CACHE_DIR", cache.path()), ("HOME", cache.path())],
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "{stderr}");
    assert_eq!(stdout, "", "nothing started");
    let line = stderr.trim_end();
    assert!(!line.contains('\n'), "{line}");
    assert!(
        line.starts_with("ratchet: demo --real needs root")
            && line.ends_with(" demo --real --service ironic`")
            && line.contains("run `sudo -E env \"PATH=$PATH\" "),
        "{line}"
    );
    assert_eq!(
        std::fs::read_dir(cache.path()).map(|d| d.count()).ok(),
        Some(0),
        "nothing written to the cache"
    );
}
