//! What one pass writes, rendered whole before anything is applied: the Jobs
//! and workloads (with their Services) the decision asks for, as typed
//! objects. A child that cannot be rendered fails the pass before any other
//! child is written.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Service;
use ratchet_phase_machine::registration::SUFFIX as REGISTRATION;
use ratchet_phase_machine::{Decision, JobAction, WorkloadAction};

use super::model::{SecretEnv, ServiceModel, WorkloadKind};
use super::render::{self, Owner, PodParams, Workload};
use crate::error::{Error, Result};

/// A workload to apply and the Services it needs.
pub struct DesiredWorkload {
    pub name: String,
    pub object: Workload,
    /// A StatefulSet's headless Service, applied before it: it gives the pods
    /// their names.
    pub headless: Option<Service>,
    /// The API's Service, applied after it.
    pub api: Option<Service>,
}

/// The pass's Jobs to have and workloads to apply; deletions need no rendering
/// and stay the decision's.
pub struct Desired {
    /// By key (the suffix of their names).
    pub jobs: Vec<(String, Job)>,
    pub workloads: Vec<DesiredWorkload>,
}

/// What rendering reads besides the model and the decision.
pub struct Inputs<'a> {
    pub config_hash: &'a str,
    /// The resource's annotation key for the installed release (second roll).
    pub installed_release_annotation: &'a str,
    /// The registration Job's Secrets, when the spec asks for one.
    pub registration_secrets: Option<&'a [SecretEnv]>,
}

impl Desired {
    pub fn render(
        owner: &Owner,
        model: &ServiceModel,
        decision: &Decision,
        inputs: &Inputs,
    ) -> Result<Desired> {
        let jobs = decision
            .jobs
            .iter()
            .filter_map(|action| job(owner, model, action, inputs).transpose())
            .collect::<Result<_>>()?;
        let workloads = decision
            .workloads
            .iter()
            .filter_map(|action| workload(owner, model, action, inputs).transpose())
            .collect::<Result<_>>()?;
        Ok(Desired { jobs, workloads })
    }

    pub fn job(&self, key: &str) -> Option<&Job> {
        self.jobs.iter().find(|(k, _)| k == key).map(|(_, job)| job)
    }

    pub fn workload(&self, name: &str) -> Option<&DesiredWorkload> {
        self.workloads.iter().find(|w| w.name == name)
    }
}

fn job(
    owner: &Owner,
    model: &ServiceModel,
    action: &JobAction,
    inputs: &Inputs,
) -> Result<Option<(String, Job)>> {
    let JobAction::Ensure {
        suffix,
        group,
        image,
        command,
        spec_hash,
        backoff_limit,
        fail_fast_exit_codes,
    } = action
    else {
        return Ok(None);
    };
    let group = match group {
        Some(name) => Some(model.job_groups.iter().find(|g| g.name == *name).ok_or(
            Error::Model("a per-group Job names a group the model lacks"),
        )?),
        None => None,
    };
    let job = render::job(
        owner,
        model,
        &render::JobSpec {
            suffix,
            image,
            command,
            spec_hash,
            backoff_limit: *backoff_limit,
            fail_fast_exit_codes,
            secrets: inputs
                .registration_secrets
                .filter(|_| suffix == REGISTRATION),
            group,
        },
    )?;
    Ok(Some((suffix.clone(), job)))
}

fn workload(
    owner: &Owner,
    model: &ServiceModel,
    action: &WorkloadAction,
    inputs: &Inputs,
) -> Result<Option<DesiredWorkload>> {
    let WorkloadAction::Apply {
        name,
        image,
        installed_release,
        pin,
        stopped,
        partition,
    } = action
    else {
        return Ok(None);
    };
    // A workload the model no longer has is the decision's to delete.
    let Some(workload) = model.workload(name) else {
        return Ok(None);
    };
    let object = render::workload(
        owner,
        model,
        workload,
        &PodParams {
            image,
            installed_release,
            pin: pin.as_deref(),
            config_hash: inputs.config_hash,
            installed_release_annotation: inputs.installed_release_annotation,
            stopped: *stopped,
            partition: *partition,
        },
    )?;
    let headless = match workload.kind {
        WorkloadKind::StatefulSet => Some(render::headless_service(owner, workload)?),
        WorkloadKind::Deployment | WorkloadKind::DaemonSet => None,
    };
    let api = workload
        .api_port
        .map(|port| render::api_service(owner, workload, port))
        .transpose()?;
    Ok(Some(DesiredWorkload {
        name: name.clone(),
        object,
        headless,
        api,
    }))
}
