//! Applying and removing owned objects: the thin I/O under every service.

use std::fmt::Debug;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Result;
use crate::labels::POD_SPEC_HASH;

pub const FIELD_MANAGER: &str = "ratchet";

/// How soon a pass looks again after a Job create met one of the same name.
/// The old Job's deletion usually wakes the controller first, but nothing
/// guarantees an event after the 409 (the deletion may have been seen before
/// the create was refused), so a pass that waited only for one could stall.
pub const REPLACE_RETRY: Duration = Duration::from_secs(1);

/// Server-side apply, taking ownership of the fields Ratchet sets.
pub async fn apply<K>(api: &Api<K>, name: &str, object: &K) -> Result<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let params = PatchParams::apply(FIELD_MANAGER).force();
    Ok(api.patch(name, &params, &Patch::Apply(object)).await?)
}

/// Deletes with background propagation (the garbage collector removes
/// dependents, e.g. a Job's pods); absent objects count as deleted.
pub async fn delete_background<K>(api: &Api<K>, name: &str) -> Result<()>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// What happened to a Job that should exist with a given pod-spec hash.
#[derive(Debug)]
pub enum JobEnsured {
    /// It already existed with this hash.
    Unchanged,
    /// As the server returned it.
    Created(Box<Job>),
    /// One of that name is still on the server (an older one being removed,
    /// or one the cache has not seen yet): the caller looks again shortly,
    /// since no event is sure to follow (see `REPLACE_RETRY`).
    Replacing,
}

/// Makes sure the Job exists with the desired pod-spec hash. Jobs are immutable,
/// so one with another hash is deleted (with its pods) and created anew.
/// `live_hash` is the live Job's hash, `Some(None)` for one without any.
pub async fn ensure_job(
    api: &Api<Job>,
    live_hash: Option<Option<&str>>,
    desired: &Job,
) -> Result<JobEnsured> {
    let name = desired.metadata.name.clone().unwrap_or_default();
    let desired_hash = desired
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(POD_SPEC_HASH))
        .map(String::as_str);
    if let Some(live_hash) = live_hash {
        if live_hash == desired_hash {
            return Ok(JobEnsured::Unchanged);
        }
        delete_background(api, &name).await?;
    }
    match api.create(&PostParams::default(), desired).await {
        Ok(created) => Ok(JobEnsured::Created(Box::new(created))),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(JobEnsured::Replacing),
        Err(e) => Err(e.into()),
    }
}
