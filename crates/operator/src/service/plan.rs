//! What an upgrade of a service resource would do, and the patch that aborts
//! one: pure functions behind `ratchet plan` and `ratchet abort`, read off the
//! service's profile, so every service on the machine gets them.

use super::peers::Peers;
use std::fmt::Write;

use ratchet_phase_machine::{Pin, SpecView, Step, WorkloadId, drain, job_runs};
use ratchet_release::{ImageLayout, ImageRef, ImageRelease, Release};
use serde_json::{Value, json};

use super::contract::OpenStackService;

/// Whether the step is allowed, and if not, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Refused(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The resource's kubectl name (`cinder`, `ironic`).
    pub service: &'static str,
    pub from: String,
    pub to: String,
    pub verdict: Verdict,
    /// Human-readable steps in order.
    pub steps: Vec<String>,
    pub abort_window: String,
    /// The patch that starts the upgrade (release and image together).
    pub patch: Value,
}

/// `spec.image` as a merge patch setting the tag and/or digest fields, shaped
/// as the resource keeps them.
fn image_patch(layout: ImageLayout, pins: &[(&str, Value)]) -> Value {
    let fields: serde_json::Map<String, Value> = pins
        .iter()
        .map(|(field, value)| ((*field).to_owned(), value.clone()))
        .collect();
    match layout {
        ImageLayout::Flat => Value::Object(fields),
        ImageLayout::Reference => json!({ "reference": fields }),
    }
}

/// The patch that moves release and image to `target`: the tag stays a tag
/// and the digest a digest (a merge patch merges into the image, so the field
/// it does not use stays unset).
pub fn start_patch(spec: &SpecView, target: &str) -> Value {
    let image = match &spec.image_tag {
        Some(_) => image_patch(spec.image_layout, &[("tag", json!(target))]),
        None => image_patch(
            spec.image_layout,
            &[("digest", json!("<digest of the target release's image>"))],
        ),
    };
    json!({ "spec": { "openStackRelease": target, "image": image } })
}

/// Plans `object` → `target` without changing anything.
pub fn plan<S: OpenStackService>(object: &S, target: &str) -> Plan {
    let name = object.meta().name.clone().unwrap_or_default();
    let status = object.status_view();
    let spec = object.spec_view();
    let profile = S::profile();
    let from = status.installed_release.clone();
    let patch = start_patch(&spec, target);
    let refuse = |why: String| Plan {
        service: S::SERVICE,
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
    if !status.phase.is_empty() {
        return refuse(format!(
            "an upgrade to {} is in progress ({}); let it finish or abort it first",
            status.target_release, status.phase
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
    if let Some(refusal) = installed.refuse_step_to(target_release) {
        return refuse(refusal.to_string());
    }
    if installed == target_release {
        return refuse(format!(
            "{target} is already installed (a new image of it is a patch bump, not an upgrade)"
        ));
    }
    let mut steps = Vec::new();
    let current = ImageRef::new(
        &spec.image_repository,
        spec.image_tag.as_deref(),
        spec.image_digest.as_deref(),
    );
    if let Ok(current) = current
        && let ImageRelease::Unknown = current.release()
    {
        steps.push(format!(
            "lockstep: the image ({current}) names no release, so Ratchet trusts it; make sure the new image is {target}'s"
        ));
    } else {
        steps.push(format!(
            "lockstep: set {}.tag to {target} (or a {target}-<patch> build) in the same patch",
            spec.image_layout.pin_field()
        ));
    }
    let model = object.model(&name, &Peers::none());
    let groups = model.job_group_names();
    let workloads = model.workload_ids();
    let roll_order: Vec<&str> = workloads.iter().map(|w| w.name.as_str()).collect();
    for phase in &profile.phases {
        match &phase.step {
            Step::Jobs { templates, .. } => {
                steps.extend(job_runs(templates, &groups).iter().map(|run| {
                    format!(
                        "{}: Job {name}-{} runs `{}` on the {target} image",
                        phase.name,
                        run.key(),
                        run.template.command.join(" ")
                    )
                }))
            }
            Step::Roll { pin } => {
                let pin = match pin {
                    Pin::None => String::new(),
                    Pin::Installed => format!(" pinned to {installed}"),
                };
                steps.push(format!(
                    "{}: restart onto {target}{pin}, one workload at a time, each fully rolled out before the next: {}",
                    phase.name,
                    roll_order.join(" → ")
                ));
                steps.extend(drains(&name, &workloads));
            }
        }
    }
    steps.push(format!("promote: status.installedRelease becomes {target}"));
    let second: Vec<&str> = workloads
        .iter()
        .filter(|w| w.carries_installed_release)
        .map(|w| w.name.as_str())
        .collect();
    if !second.is_empty() {
        steps.push(format!(
            "second roll (releases the RPC pins): {}",
            second.join(", ")
        ));
    }
    Plan {
        service: S::SERVICE,
        from,
        to: target.to_string(),
        verdict: Verdict::Allowed,
        steps,
        abort_window: abort_window(&profile, installed),
        patch,
    }
}

/// How each drained workload's host is taken out of service before each of
/// its restarts, and given back after (docs/drain.md).
fn drains(name: &str, workloads: &[WorkloadId]) -> Vec<String> {
    workloads
        .iter()
        .filter_map(|w| {
            let drain = w.drain.as_ref()?;
            let host = drain::Host::workload(&w.name);
            Some(if drain.per_pod {
                format!(
                    "{} rolls one pod at a time: before each pod's restart, Job {name}-{}-<ordinal> drains it ({}); Job {name}-{}-<ordinal> gives it back once it is ready",
                    w.name,
                    host.drain_key(),
                    drain.waits_for,
                    host.undrain_key(),
                )
            } else {
                format!(
                    "before each restart of {}, Job {name}-{} drains it ({}); Job {name}-{} gives it back once it rolled out",
                    w.name,
                    host.drain_key(),
                    drain.waits_for,
                    host.undrain_key(),
                )
            })
        })
        .collect()
}

/// When reverting aborts cleanly, with care, or not at all, from the profile.
fn abort_window(profile: &ratchet_phase_machine::Profile, installed: Release) -> String {
    let names = |filter: &dyn Fn(&ratchet_phase_machine::Phase) -> bool| {
        profile
            .phases
            .iter()
            .filter(|p| filter(p))
            .map(|p| p.name)
            .collect::<Vec<_>>()
    };
    let safe = names(&|p| p.abortable && p.abort_caution.is_none());
    let careful = names(&|p| p.abortable && p.abort_caution.is_some());
    let refused = names(&|p| !p.abortable);
    let mut window = format!(
        "abort safely (revert release and image to {installed}) during {}",
        listing(&safe)
    );
    if !careful.is_empty() {
        let _ = write!(
            window,
            "; during {} only after validating the database (`ratchet abort --force`)",
            listing(&careful)
        );
    }
    if !refused.is_empty() {
        let _ = write!(
            window,
            "; during {} a revert is refused (past the point of no return)",
            listing(&refused)
        );
    }
    window.push_str("; after the upgrade completes a revert is a downgrade and is refused");
    window
}

/// `a`, `a and b`, `a, b and c`.
fn listing(names: &[&str]) -> String {
    match names {
        [] => "no phase".to_string(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
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
        "start it with: kubectl patch {} <name> --type=merge -p '{}'",
        plan.service, plan.patch
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
    #[error("the upgrade is in {phase}: {caution}; validate the database, then use --force")]
    NeedsCare {
        phase: String,
        caution: &'static str,
    },
    #[error(
        "the upgrade is in {0}, past the point of no return: Ratchet refuses a revert now (AbortNotSafe); let it finish"
    )]
    PastPointOfNoReturn(String),
}

/// The patch that aborts the running upgrade: release and image back to the
/// installed release in one patch. A digest-pinned image needs the installed
/// release's digest (`installed_digest`); without it only the release is reverted
/// and the workloads keep the target image until the digest is reverted too.
pub fn abort_patch<S: OpenStackService>(
    object: &S,
    force: bool,
    installed_digest: Option<&str>,
) -> Result<(Value, Vec<String>), AbortRefusal> {
    let status = object.status_view();
    let profile = S::profile();
    let Some((_, phase)) = profile.phase(&status.phase) else {
        return Err(AbortRefusal::NotUpgrading);
    };
    if !phase.abortable {
        return Err(AbortRefusal::PastPointOfNoReturn(status.phase));
    }
    if let (Some(caution), false) = (phase.abort_caution, force) {
        return Err(AbortRefusal::NeedsCare {
            phase: status.phase,
            caution,
        });
    }
    let installed = status.installed_release;
    let spec = object.spec_view();
    let mut notes = Vec::new();
    let tag_names_release = spec
        .image_tag
        .as_deref()
        .and_then(|t| ImageRef::new(&spec.image_repository, Some(t), None).ok())
        .is_some_and(|i| matches!(i.release(), ImageRelease::Named(_)));
    let patch = if tag_names_release {
        let image = image_patch(spec.image_layout, &[("tag", json!(installed))]);
        json!({ "spec": { "openStackRelease": installed, "image": image } })
    } else if let Some(digest) = installed_digest {
        // Whatever pinned the image before, the digest replaces it.
        let image = image_patch(
            spec.image_layout,
            &[("digest", json!(digest)), ("tag", Value::Null)],
        );
        json!({ "spec": { "openStackRelease": installed, "image": image } })
    } else {
        notes.push(format!(
            "the image ({}) carries no release: only the release is reverted; the workloads keep that image until you set the {installed} image",
            spec.image_digest
                .clone()
                .or(spec.image_tag.clone())
                .unwrap_or_default()
        ));
        json!({ "spec": { "openStackRelease": installed } })
    };
    Ok((patch, notes))
}
