//! `ratchet status`, `plan` and `abort` against a local cluster, as an operator
//! of a real cluster would use them (through a kubeconfig).

mod common;

use std::process::Output;
use std::time::Duration;

use anyhow::{Result, ensure};
use kube::Api;
use ratchet_services::cinder::v1beta1::{Cinder, CinderUpgradePhase};
use ratchet_services::testing::{create_example_cinder, settled_at};
use ratchet_services::{Registry, Services};
use ratchet_testenv::wait::until;
use ratchet_testenv::{Behaviour, PodSelector, TestEnv};

/// Starts `name`'s upgrade to 2026.2: release and tag in one patch.
async fn upgrade_cinder(api: &Api<Cinder>, name: &str) -> Result<()> {
    let patch = serde_json::json!({ "spec": { "openStackRelease": "2026.2", "image": { "reference": { "tag": "2026.2" } } } });
    api.patch(
        name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

fn ratchet(env: &TestEnv, args: &[&str]) -> Output {
    common::ratchet(env.kubeconfig_path(), args)
}

#[tokio::test]
async fn plan_status_and_abort_against_a_cluster() -> Result<()> {
    let env = TestEnv::shared()?;
    let client = env.client()?;
    let (ns, operator) = common::scoped_operator(env, client.clone(), "cli").await?;
    let name = ns.name().to_string();
    let api = create_example_cinder(&client, &name, "c", "2026.1", &["lvm"]).await?;
    until(
        &api,
        "c",
        Duration::from_secs(60),
        "installed",
        |c: &Cinder| {
            c.status.as_ref().is_some_and(|s| {
                s.installed_release == "2026.1"
                    && s.conditions
                        .iter()
                        .any(|x| x.type_ == "Ready" && x.status == "True")
            })
        },
    )
    .await?;

    // plan: an allowed step lists the Jobs and restarts in order; a skip is refused.
    let out = ratchet(env, &["plan", "c", "--to", "2026.2", "-n", &name]);
    let t = common::text(&out);
    ensure!(out.status.success(), "{t}");
    ensure!(
        t.contains("allowed")
            && t.contains("c-db-expand")
            && t.contains("c-scheduler → c-volume-lvm → c-backup → c"),
        "{t}"
    );
    let out = ratchet(env, &["plan", "c", "--to", "2027.1", "-n", &name]);
    ensure!(
        out.status.code() == Some(3) && common::text(&out).contains("REFUSED"),
        "{}",
        common::text(&out)
    );
    ensure!(
        api.get("c").await?.spec.open_stack_release == "2026.1",
        "plan changed nothing"
    );

    // abort with no upgrade running is refused with a reason.
    let out = ratchet(env, &["abort", "c", "-n", &name]);
    ensure!(
        !out.status.success() && common::text(&out).contains("no upgrade is in progress"),
        "{}",
        common::text(&out)
    );

    // status during an upgrade shows the phase; abort reverts it.
    env.scenarios().add(
        PodSelector::workload(&name, "c-db-migrate"),
        Behaviour::hang(),
    );
    upgrade_cinder(&api, "c").await?;
    until(
        &api,
        "c",
        Duration::from_secs(60),
        "Migrating",
        |c: &Cinder| {
            c.status
                .as_ref()
                .is_some_and(|s| s.upgrade_phase == CinderUpgradePhase::Migrating)
        },
    )
    .await?;
    let out = ratchet(env, &["status", "-n", &name]);
    ensure!(
        common::text(&out).contains("Migrating") && common::text(&out).contains("2026.2"),
        "{}",
        common::text(&out)
    );
    let out = ratchet(env, &["status", "-n", &name, "-o", "json"]);
    let parsed: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    ensure!(
        parsed[0]["status"]["upgradePhase"] == "Migrating",
        "{parsed}"
    );

    // Ironics are listed next to Cinders.
    let ironic: ratchet_services::ironic::v1alpha1::Ironic =
        serde_json::from_value(ratchet_services::ironic::example_manifest(
            "bm",
            "2026.1",
            "registry.invalid/ironic",
            "2026.1",
            2,
        ))?;
    kube::Api::<ratchet_services::ironic::v1alpha1::Ironic>::namespaced(client.clone(), &name)
        .create(&Default::default(), &ironic)
        .await?;
    let out = ratchet(env, &["status", "-n", &name]);
    let rows = common::text(&out);
    ensure!(
        rows.lines()
            .any(|l| l.starts_with("Ironic") && l.contains(" bm ")),
        "{rows}"
    );
    ensure!(
        rows.lines()
            .any(|l| l.starts_with("Cinder") && l.contains("Migrating")),
        "{rows}"
    );

    let out = ratchet(env, &["abort", "c", "-n", &name]);
    ensure!(out.status.success(), "{}", common::text(&out));
    ensure!(
        common::text(&out).contains(r#""tag":"2026.1""#),
        "{}",
        common::text(&out)
    );
    until(
        &api,
        "c",
        Duration::from_secs(60),
        "aborted",
        |c: &Cinder| {
            c.status.as_ref().is_some_and(|s| {
                s.upgrade_phase == CinderUpgradePhase::None
                    && s.installed_release == "2026.1"
                    && s.conditions
                        .iter()
                        .any(|x| x.type_ == "Ready" && x.status == "True")
            })
        },
    )
    .await?;
    operator.stop().await;
    ns.cleanup().await;
    Ok(())
}

/// `status` and `abort` in each abortable phase; `abort` in Contracting needs --force.
#[tokio::test]
async fn status_and_abort_in_every_phase() -> Result<()> {
    let env = TestEnv::shared()?;
    let client = env.client()?;
    let (ns, operator) = common::scoped_operator(env, client.clone(), "phases").await?;
    let name = ns.name().to_string();
    let api: Api<Cinder> = Api::namespaced(client.clone(), &name);
    let installed = settled_at("2026.1");
    let phases = [
        (CinderUpgradePhase::Expanding, "Expanding", "c-db-expand"),
        (
            CinderUpgradePhase::RollingUpdate,
            "RollingUpdate",
            "c-backup",
        ),
        (
            CinderUpgradePhase::Contracting,
            "Contracting",
            "c-db-contract",
        ),
    ];
    for (i, (phase, label, hold)) in phases.into_iter().enumerate() {
        let cname = format!("c{i}");
        create_example_cinder(&client, &name, &cname, "2026.1", &[]).await?;
        until(
            &api,
            &cname,
            Duration::from_secs(60),
            "installed",
            &installed,
        )
        .await?;
        // Hold the upgrade in the phase: its Job, or the backup's new pods, never finish.
        let workload = hold.replacen("c-", &format!("{cname}-"), 1);
        let selector = PodSelector::workload(&name, &workload);
        let selector = if label == "RollingUpdate" {
            selector.with_image_containing(":2026.2")
        } else {
            selector
        };
        env.scenarios().add(selector, Behaviour::hang());
        upgrade_cinder(&api, &cname).await?;
        until(
            &api,
            &cname,
            Duration::from_secs(60),
            label,
            |c: &Cinder| c.status.as_ref().is_some_and(|s| s.upgrade_phase == phase),
        )
        .await?;
        let out = ratchet(env, &["status", "-n", &name]);
        let row = common::text(&out)
            .lines()
            .find(|l| l.contains(&format!(" {cname} ")))
            .unwrap_or_default()
            .to_string();
        ensure!(row.contains(label), "status in {label}: {row}");
        let out = ratchet(env, &["abort", &cname, "-n", &name]);
        if phase == CinderUpgradePhase::Contracting {
            ensure!(
                !out.status.success() && common::text(&out).contains("--force"),
                "{}",
                common::text(&out)
            );
            let out = ratchet(env, &["abort", &cname, "-n", &name, "--force"]);
            ensure!(out.status.success(), "{}", common::text(&out));
        } else {
            ensure!(
                out.status.success(),
                "abort in {label}: {}",
                common::text(&out)
            );
        }
        until(
            &api,
            &cname,
            Duration::from_secs(60),
            "aborted and Ready",
            &installed,
        )
        .await?;
    }
    operator.stop().await;
    ns.cleanup().await;
    Ok(())
}

/// `plan` and `abort` for an Ironic, named `ironic/NAME`: its own phases read
/// off its profile, the abort offered during the pinned roll.
#[tokio::test]
async fn plan_and_abort_an_ironic() -> Result<()> {
    use ratchet_services::ironic::v1alpha1::{Ironic, IronicUpgradePhase};
    let env = TestEnv::shared()?;
    let client = env.client()?;
    let (ns, operator) = common::scoped_operator(env, client.clone(), "ironic-cli").await?;
    let name = ns.name().to_string();
    let api: Api<Ironic> = Api::namespaced(client.clone(), &name);
    let manifest = ratchet_services::ironic::example_manifest(
        "bm",
        "2026.1",
        "registry.invalid/ironic",
        "2026.1",
        2,
    );
    api.create(&Default::default(), &serde_json::from_value(manifest)?)
        .await?;
    let phase_is = |phase: IronicUpgradePhase, installed: &'static str| {
        move |i: &Ironic| {
            i.status.as_ref().is_some_and(|s| {
                s.upgrade.upgrade_phase == phase
                    && s.upgrade.installed_release == installed
                    && (phase != IronicUpgradePhase::None
                        || s.upgrade
                            .conditions
                            .iter()
                            .any(|c| c.type_ == "Ready" && c.status == "True"))
            })
        }
    };
    until(
        &api,
        "bm",
        Duration::from_secs(60),
        "installed",
        phase_is(IronicUpgradePhase::None, "2026.1"),
    )
    .await?;

    let out = ratchet(env, &["plan", "ironic/bm", "--to", "2026.2", "-n", &name]);
    let text = common::text(&out);
    ensure!(out.status.success(), "{text}");
    ensure!(
        text.contains("PinnedRoll: restart onto 2026.2 pinned to 2026.1")
            && text.contains("bm-conductor → bm-api")
            && text.contains("kubectl patch ironic <name>")
            && !text.contains("second roll"),
        "{text}"
    );
    let out = ratchet(env, &["plan", "heat/bm", "--to", "2026.2", "-n", &name]);
    ensure!(
        !out.status.success() && common::text(&out).contains("unknown kind"),
        "{}",
        common::text(&out)
    );

    // Held in the pinned roll: the new API pods never get ready.
    env.scenarios().add(
        PodSelector::workload(&name, "bm-api").with_image_containing(":2026.2"),
        Behaviour::hang(),
    );
    let patch = serde_json::json!({ "spec": { "openStackRelease": "2026.2", "image": { "tag": "2026.2" } } });
    api.patch(
        "bm",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await?;
    until(
        &api,
        "bm",
        Duration::from_secs(60),
        "PinnedRoll",
        phase_is(IronicUpgradePhase::PinnedRoll, "2026.1"),
    )
    .await?;
    let out = ratchet(env, &["abort", "ironic/bm", "-n", &name]);
    ensure!(
        out.status.success() && common::text(&out).contains(r#""tag":"2026.1""#),
        "{}",
        common::text(&out)
    );
    until(
        &api,
        "bm",
        Duration::from_secs(60),
        "aborted",
        phase_is(IronicUpgradePhase::None, "2026.1"),
    )
    .await?;
    operator.stop().await;
    ns.cleanup().await;
    Ok(())
}

/// `timeline` after a real upgrade: the phases from the events, every roll of
/// every workload (the ordered roll and the second roll), the Jobs with their
/// attempts and exit codes, the upgrade check's warning; as text and as an SVG
/// that parses and names the same.
#[tokio::test]
async fn timeline_of_an_upgrade_as_text_and_svg() -> Result<()> {
    let env = TestEnv::shared()?;
    let client = env.client()?;
    let (ns, operator) = common::scoped_operator(env, client.clone(), "timeline").await?;
    let name = ns.name().to_string();
    let api = create_example_cinder(&client, &name, "c", "2026.1", &["lvm"]).await?;
    until(
        &api,
        "c",
        common::TIMEOUT,
        "installed",
        settled_at("2026.1"),
    )
    .await?;

    let out = ratchet(env, &["timeline", "c", "-n", &name]);
    ensure!(
        !out.status.success() && common::text(&out).contains("no upgrade recorded for Cinder"),
        "{}",
        common::text(&out)
    );

    // The expand Job fails once, then succeeds; the upgrade check warns.
    env.scenarios().add(
        PodSelector::workload(&name, "c-db-expand"),
        Behaviour::fail_times(1, 1, "OperationalError: database is locked"),
    );
    env.scenarios().add(
        PodSelector::workload(&name, "c-db-migrate"),
        Behaviour::succeed_with_message("cinder-status upgrade check exit 1"),
    );
    upgrade_cinder(&api, "c").await?;
    until(
        &api,
        "c",
        Duration::from_secs(120),
        "upgraded",
        settled_at("2026.2"),
    )
    .await?;

    let dir = tempfile::tempdir()?;
    let svg_path = dir.path().join("timeline.svg");
    let svg_arg = svg_path.to_string_lossy().into_owned();
    let out = ratchet(
        env,
        &["timeline", "cinder/c", "-n", &name, "--svg", &svg_arg],
    );
    let text = common::text(&out);
    ensure!(out.status.success(), "{text}");
    ensure!(
        text.starts_with(&format!("Cinder {name}/c: 2026.1 → 2026.2, complete in")),
        "{text}"
    );
    let row = |label: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{label} ")))
            .map(str::to_string)
    };
    let phases = ["Expanding", "Migrating", "RollingUpdate", "Contracting"];
    let workloads = ["c-scheduler", "c-volume-lvm", "c-backup", "c"];
    let jobs = ["c-db-expand", "c-db-migrate", "c-db-contract"];
    for label in phases.iter().chain(&workloads).chain(&jobs) {
        ensure!(row(label).is_some(), "no row {label} in\n{text}");
    }
    let expand = row("c-db-expand").unwrap_or_default();
    ensure!(
        expand
            .contains("succeeded · 2 attempts · exit 1, 0 · OperationalError: database is locked"),
        "{expand}\n{text}"
    );
    ensure!(text.contains("Warning  UpgradeCheckWarnings"), "{text}");
    // Scheduler, volume and backup rolled twice: the upgrade's ordered roll,
    // then the second roll that releases the RPC pins; a row each, in order.
    let rolled = |when: &str| -> Vec<&str> {
        text.lines()
            .filter(|l| l.contains(when))
            .filter_map(|l| l.split_whitespace().next())
            .collect()
    };
    ensure!(
        rolled(" in RollingUpdate · ") == ["c-scheduler", "c-volume-lvm", "c-backup", "c"],
        "the ordered roll:\n{text}"
    );
    ensure!(
        rolled(" after the upgrade completed · ") == ["c-scheduler", "c-volume-lvm", "c-backup"],
        "the second roll:\n{text}"
    );

    let svg = std::fs::read_to_string(&svg_path)?;
    let document = roxmltree::Document::parse(&svg)?;
    let labels: Vec<&str> = document
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    for label in phases.iter().chain(&workloads).chain(&jobs) {
        ensure!(labels.contains(label), "no {label} in the SVG: {labels:?}");
    }
    for worker in &workloads[..3] {
        let rows = labels.iter().filter(|l| **l == *worker).count();
        ensure!(rows == 2, "{worker}: {rows} rows in the SVG: {labels:?}");
    }
    ensure!(
        labels
            .iter()
            .any(|l| l.contains("roll 2 of 2 after the upgrade completed")),
        "{labels:?}"
    );
    ensure!(
        labels
            .iter()
            .any(|l| l.starts_with(&format!("Cinder {name}/c: 2026.1 → 2026.2, complete in"))),
        "{labels:?}"
    );
    ensure!(
        labels.iter().any(|l| l.contains("UpgradeCheckWarnings")),
        "the warning is listed: {labels:?}"
    );
    operator.stop().await;
    ns.cleanup().await;
    Ok(())
}

/// Every help text that names services names every registered one: they come
/// from the registry, not from a list written into the help.
#[test]
fn help_names_every_registered_service() {
    let help = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ratchet"))
            .args(args)
            .arg("--help")
            .output()
            .expect("the ratchet binary runs");
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let line = |text: &str, start: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no line {start:?} in\n{text}"))
            .to_string()
    };
    let top = help(&[]);
    let status = line(&top, "status ");
    let plan = help(&["plan"]);
    let (abort, timeline, demo) = (help(&["abort"]), help(&["timeline"]), help(&["demo"]));
    for service in Services::services() {
        let (kind, target) = (&service.kind, format!("{}/NAME", service.service));
        assert!(status.contains(kind.as_str()), "{kind}: {status}");
        assert!(line(&top, "plan ").contains(kind.as_str()), "{kind}: {top}");
        for (command, text) in [("plan", &plan), ("abort", &abort), ("timeline", &timeline)] {
            assert!(
                line(text, "<NAME>").contains(&target),
                "{command}: {target}\n{text}"
            );
        }
        assert!(
            demo.lines()
                .filter(|l| l.trim_start().starts_with("[possible values:"))
                .any(|l| l.contains(service.service)),
            "--service: {demo}"
        );
        // Every service has a schema Job a failure can be injected into.
        assert!(
            line(&demo, "- fail-schema:").contains(&format!("{}-", service.service)),
            "{demo}"
        );
    }
}
