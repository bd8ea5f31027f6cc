//! What an upgrade of a Cinder would do, and the patch that aborts one: pure
//! functions behind `ratchet plan` and `ratchet abort`.

use std::fmt::Write;

use ratchet_api::cinder::v1beta1::{Cinder, CinderUpgradePhase};
use ratchet_phase_machine::{Pin, Step};
use ratchet_release::{ImageRef, ImageRelease, Release, Step as ReleaseStep};

use super::profile::{profile, roles};

/// Whether the step is allowed, and if not, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Refused(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub from: String,
    pub to: String,
    pub verdict: Verdict,
    /// Human-readable steps in order.
    pub steps: Vec<String>,
    pub abort_window: String,
    /// The patch that starts the upgrade (release and image together).
    pub patch: serde_json::Value,
}

/// Plans `cinder` → `target` without changing anything.
pub fn plan(cinder: &Cinder, target: &str) -> Plan {
    let name = cinder.metadata.name.clone().unwrap_or_default();
    let status = cinder.status.clone().unwrap_or_default();
    let from = status.installed_release.clone();
    let image = cinder.spec.image.to_image_spec();
    // The tag stays a tag and the digest a digest: a merge patch merges into
    // `image.reference`, so the field the image does not use stays unset.
    let patch = match (&image.tag, &image.digest) {
        (Some(_), _) => {
            serde_json::json!({ "spec": { "openStackRelease": target, "image": { "reference": { "tag": target } } } })
        }
        _ => {
            serde_json::json!({ "spec": { "openStackRelease": target, "image": { "reference": { "digest": "<digest of the target release's image>" } } } })
        }
    };
    let refuse = |why: String| Plan {
        from: from.clone(),
        to: target.to_string(),
        verdict: Verdict::Refused(why),
        steps: Vec::new(),
        abort_window: String::new(),
        patch: patch.clone(),
    };
    let target_release = match Release::parse(target) {
        Ok(r) => r,
        Err(e) => return refuse(e.to_string()),
    };
    if status.upgrade_phase != CinderUpgradePhase::None {
        return refuse(format!(
            "an upgrade to {} is in progress ({:?}); let it finish or abort it first",
            status.target_release, status.upgrade_phase
        ));
    }
    let installed = match Release::parse(&from) {
        Ok(r) => r,
        Err(_) => {
            return refuse(format!(
                "{name} has no installed release yet (a fresh install is still running)"
            ));
        }
    };
    match installed.step_to(target_release) {
        ReleaseStep::Sequential => {}
        ReleaseStep::Same => {
            return refuse(format!(
                "{target} is already installed (a new image of it is a patch bump, not an upgrade)"
            ));
        }
        ReleaseStep::Downgrade => {
            return refuse(format!(
                "{target} is older than the installed {installed}: downgrades are not supported"
            ));
        }
        ReleaseStep::SkipLevel => {
            return refuse(format!(
                "{installed} → {target} skips a release: upgrade to {} first",
                installed.next().map(|r| r.to_string()).unwrap_or_default()
            ));
        }
    }
    let mut steps = Vec::new();
    if let Ok(current) = ImageRef::new(
        &image.repository,
        image.tag.as_deref(),
        image.digest.as_deref(),
    ) && let ImageRelease::Unknown = current.release()
    {
        steps.push(format!(
            "lockstep: the image ({current}) names no release, so Ratchet trusts it; make sure the new image is {target}'s"
        ));
    } else {
        steps.push(format!("lockstep: set spec.image.reference.tag to {target} (or a {target}-<patch> build) in the same patch"));
    }
    let workloads: Vec<String> = roles(cinder)
        .iter()
        .map(|r| r.workload_name(&name))
        .collect();
    for phase in profile().phases {
        match phase.step {
            Step::Job(job) => {
                steps.push(format!(
                    "{}: Job {name}-{} runs `{}` on the {target} image",
                    phase.name,
                    job.suffix,
                    job.command.join(" ")
                ));
            }
            Step::Roll { pin } => {
                let pin = match pin {
                    Pin::None => String::new(),
                    Pin::Installed => format!(" pinned to {installed}"),
                };
                steps.push(format!(
                    "{}: restart onto {target}{pin}, one workload at a time, each fully rolled out before the next: {}",
                    phase.name,
                    workloads.join(" → ")
                ));
            }
        }
    }
    let second: Vec<String> = roles(cinder)
        .iter()
        .filter(|r| r.carries_installed_release())
        .map(|r| r.workload_name(&name))
        .collect();
    steps.push(format!("promote: status.installedRelease becomes {target}"));
    steps.push(format!(
        "second roll (releases the RPC pins): {}",
        second.join(", ")
    ));
    Plan {
        from,
        to: target.to_string(),
        verdict: Verdict::Allowed,
        steps,
        abort_window: format!(
            "abort safely (revert release and image to {installed}) during Expanding, Migrating and RollingUpdate; \
             during Contracting only after validating the database; after it completes a revert is a downgrade and is refused"
        ),
        patch,
    }
}

pub fn render(plan: &Plan) -> String {
    let mut out = format!("{} → {}: ", plan.from, plan.to);
    match &plan.verdict {
        Verdict::Refused(why) => {
            let _ = writeln!(out, "REFUSED: {why}");
            return out;
        }
        Verdict::Allowed => {
            let _ = writeln!(out, "allowed (one release forward)");
        }
    }
    for (i, step) in plan.steps.iter().enumerate() {
        let _ = writeln!(out, "  {}. {step}", i + 1);
    }
    let _ = writeln!(out, "abort window: {}", plan.abort_window);
    let _ = writeln!(
        out,
        "start it with: kubectl patch cinder <name> --type=merge -p '{}'",
        plan.patch
    );
    out
}

/// Why no abort patch is offered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AbortRefusal {
    #[error(
        "no upgrade is in progress (status.upgradePhase is empty); a revert now would be a downgrade"
    )]
    NotUpgrading,
    #[error(
        "the upgrade is in Contracting: online data migrations may already have rewritten rows for {0}; validate the database, then use --force"
    )]
    Contracting(String),
}

/// The patch that aborts the running upgrade: release and image back to the
/// installed release in one patch. A digest-pinned image needs the installed
/// release's digest (`installed_digest`); without it only the release is reverted
/// and the workloads keep the target image until the digest is reverted too.
pub fn abort_patch(
    cinder: &Cinder,
    force: bool,
    installed_digest: Option<&str>,
) -> Result<(serde_json::Value, Vec<String>), AbortRefusal> {
    let status = cinder.status.clone().unwrap_or_default();
    match status.upgrade_phase {
        CinderUpgradePhase::None => return Err(AbortRefusal::NotUpgrading),
        CinderUpgradePhase::Contracting if !force => {
            return Err(AbortRefusal::Contracting(status.target_release));
        }
        _ => {}
    }
    let installed = status.installed_release;
    let image = cinder.spec.image.to_image_spec();
    let mut notes = Vec::new();
    let tag_names_release = image
        .tag
        .as_deref()
        .and_then(|t| ImageRef::new(&image.repository, Some(t), None).ok())
        .is_some_and(|i| matches!(i.release(), ImageRelease::Named(_)));
    let patch = if tag_names_release {
        serde_json::json!({ "spec": { "openStackRelease": installed, "image": { "reference": { "tag": installed } } } })
    } else if let Some(digest) = installed_digest {
        // Whatever pinned the image before, the digest replaces it.
        serde_json::json!({ "spec": { "openStackRelease": installed, "image": { "reference": { "digest": digest, "tag": null } } } })
    } else {
        notes.push(format!(
            "the image ({}) carries no release: only the release is reverted; the workloads keep that image until you set the {installed} image",
            image.digest.clone().or(image.tag.clone()).unwrap_or_default()
        ));
        serde_json::json!({ "spec": { "openStackRelease": installed } })
    };
    Ok((patch, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratchet_api::cinder::v1beta1::CinderStatus;

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
                "second roll (releases the RPC pins): c-scheduler, c-volume-lvm, c-backup\n"
            ),
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
            Err(AbortRefusal::Contracting(_))
        ));
        assert!(abort_patch(&contracting, true, None).is_ok());
    }
}
