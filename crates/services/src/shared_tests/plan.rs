use crate::cinder::v1beta1::{Cinder, CinderStatus, CinderUpgradePhase};
use crate::ironic::v1alpha1::{Ironic, IronicStatus, IronicUpgradePhase};
use ratchet_api::common::UpgradeStatus;
use ratchet_operator::service::plan::*;

fn cinder(installed: &str, phase: CinderUpgradePhase, image: serde_json::Value) -> Cinder {
    let mut c: Cinder = serde_json::from_value(serde_json::json!({
        "apiVersion": "cinder.openstack.c5c3.io/v1beta1",
        "kind": "Cinder",
        "metadata": { "name": "c", "namespace": "ns" },
        "spec": {
            "openStackRelease": installed,
            "image": image,
            "database": { "secretName": "db", "key": "connection" },
            "transport": { "secretName": "mq", "key": "url" },
            "volumeBackends": [{ "name": "lvm" }],
        }
    }))
    .expect("cinder");
    c.status = Some(CinderStatus {
        installed_release: installed.into(),
        upgrade_phase: phase,
        target_release: if phase == CinderUpgradePhase::None {
            String::new()
        } else {
            "2026.2".into()
        },
        ..Default::default()
    });
    c
}

fn tagged(release: &str) -> serde_json::Value {
    serde_json::json!({ "repository": "cinder", "reference": { "tag": release } })
}

#[test]
fn plans_a_sequential_step_in_order() {
    let p = plan(
        &cinder("2026.1", CinderUpgradePhase::None, tagged("2026.1")),
        "2026.2",
    );
    assert_eq!(p.verdict, Verdict::Allowed);
    let text = render(&p);
    let order = [
        "Expanding",
        "Migrating",
        "RollingUpdate",
        "Contracting",
        "promote",
        "second roll",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|w| text.find(w).unwrap_or(usize::MAX))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(
        text.contains("c-scheduler → c-volume-lvm → c-backup → c"),
        "{text}"
    );
    assert!(
        text.contains(
            "before each restart of c-volume-lvm, Job c-drain-c-volume-lvm drains it (none of the \
             volumes, snapshots or backups of cinder-volume c-volume-lvm@lvm in a transitional \
             state for 3 s (at most 120 s)); Job c-undrain-c-volume-lvm gives it back once it \
             rolled out"
        ),
        "{text}"
    );
    assert!(
        text.contains("second roll (releases the RPC pins): c-scheduler, c-volume-lvm, c-backup\n"),
        "{text}"
    );
    assert_eq!(p.patch["spec"]["image"]["reference"]["tag"], "2026.2");
}

#[test]
fn refuses_skip_level_downgrade_same_and_busy() {
    let base = cinder("2026.1", CinderUpgradePhase::None, tagged("2026.1"));
    for (target, needle) in [
        ("2027.1", "upgrade to 2026.2 first"),
        ("2025.2", "downgrades"),
        ("2026.1", "already installed"),
        ("2025.9", "not a release"),
    ] {
        match plan(&base, target).verdict {
            Verdict::Refused(why) => assert!(why.contains(needle), "{target}: {why}"),
            Verdict::Allowed => panic!("{target} allowed"),
        }
    }
    let busy = cinder("2026.1", CinderUpgradePhase::Migrating, tagged("2026.2"));
    assert!(
        matches!(plan(&busy, "2026.2").verdict, Verdict::Refused(w) if w.contains("in progress"))
    );
}

#[test]
fn abort_patches_by_image_pin() {
    let tagged_upgrade = cinder(
        "2026.1",
        CinderUpgradePhase::RollingUpdate,
        tagged("2026.2-p1"),
    );
    let (patch, notes) = abort_patch(&tagged_upgrade, false, None).expect("abort");
    assert_eq!(patch["spec"]["openStackRelease"], "2026.1");
    assert_eq!(patch["spec"]["image"]["reference"]["tag"], "2026.1");
    assert!(notes.is_empty());

    let digest = serde_json::json!({ "repository": "cinder", "reference": { "digest": format!("sha256:{}", "a".repeat(64)) } });
    let pinned = cinder("2026.1", CinderUpgradePhase::Expanding, digest);
    let (patch, notes) = abort_patch(&pinned, false, None).expect("abort");
    assert!(
        patch["spec"].get("image").is_none(),
        "a lone release revert"
    );
    assert!(notes[0].contains("keep that image"));
    let old = format!("sha256:{}", "b".repeat(64));
    let (patch, _) = abort_patch(&pinned, false, Some(&old)).expect("abort");
    assert_eq!(patch["spec"]["image"]["reference"]["digest"], old.as_str());
    assert!(patch["spec"]["image"]["reference"]["tag"].is_null());
}

#[test]
fn abort_refuses_when_idle_and_in_contracting_unless_forced() {
    let idle = cinder("2026.1", CinderUpgradePhase::None, tagged("2026.1"));
    assert_eq!(
        abort_patch(&idle, true, None).err(),
        Some(AbortRefusal::NotUpgrading)
    );
    let contracting = cinder("2026.1", CinderUpgradePhase::Contracting, tagged("2026.2"));
    assert!(matches!(
        abort_patch(&contracting, false, None),
        Err(AbortRefusal::NeedsCare { .. })
    ));
    assert!(abort_patch(&contracting, true, None).is_ok());
}

fn ironic(installed: &str, phase: IronicUpgradePhase) -> Ironic {
    let mut i: Ironic = serde_json::from_value(crate::ironic::example_manifest(
        "i", installed, "ironic", installed, 2,
    ))
    .expect("ironic");
    i.metadata.namespace = Some("ns".into());
    i.status = Some(IronicStatus {
        upgrade: UpgradeStatus {
            installed_release: installed.into(),
            upgrade_phase: phase,
            target_release: if phase == IronicUpgradePhase::None {
                String::new()
            } else {
                "2026.2".into()
            },
            ..Default::default()
        },
        ..Default::default()
    });
    i
}

#[test]
fn an_ironic_plan_pins_conductors_then_the_api_unpins_and_migrates_without_a_second_roll() {
    let p = plan(&ironic("2026.1", IronicUpgradePhase::None), "2026.2");
    assert_eq!(p.verdict, Verdict::Allowed);
    let text = render(&p);
    assert!(
        text.contains("PinnedRoll: restart onto 2026.2 pinned to 2026.1, one workload at a time, each fully rolled out before the next: i-conductor → i-api"),
        "{text}"
    );
    assert!(
        text.contains("Unpinning: restart onto 2026.2, one workload at a time"),
        "{text}"
    );
    assert!(
        text.find("Unpinning") < text.find("OnlineMigrations: Job i-online-migrations"),
        "{text}"
    );
    assert!(!text.contains("second roll"), "{text}");
    assert!(
        text.contains("during Unpinning and OnlineMigrations a revert is refused"),
        "{text}"
    );
    assert!(text.contains("kubectl patch ironic <name>"), "{text}");
    assert_eq!(
        p.patch["spec"]["image"]["tag"], "2026.2",
        "Ironic's image is flat"
    );
}

#[test]
fn an_ironic_abort_is_offered_until_unpinning_starts() {
    let pinned = ironic("2026.1", IronicUpgradePhase::PinnedRoll);
    let (patch, notes) = abort_patch(&pinned, false, None).expect("abort");
    assert_eq!(patch["spec"]["image"]["tag"], "2026.1");
    assert!(notes.is_empty());
    for phase in [
        IronicUpgradePhase::Unpinning,
        IronicUpgradePhase::OnlineMigrations,
    ] {
        let late = ironic("2026.1", phase);
        let refused = abort_patch(&late, true, None).expect_err("refused even forced");
        assert!(
            matches!(&refused, AbortRefusal::PastPointOfNoReturn(p) if !p.is_empty()),
            "{refused:?}"
        );
        assert!(refused.to_string().contains("point of no return"));
    }
}
