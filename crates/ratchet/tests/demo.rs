//! The README's main command, end to end: a local cluster, the operator, an
//! install and an upgrade (a failing Cinder upgrade that is aborted; an Ironic
//! upgrade failing past the point of no return, fixed and retried), judged by
//! the demo's final verdict.

use std::process::Command;

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
