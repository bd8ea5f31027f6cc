//! Which of the children labelled as a resource's a pass may take as its own.
//!
//! Labels say which resource a child was made for, not which *incarnation*:
//! a resource deleted and created again under the same name (`kubectl replace
//! --force`, a GitOps tool re-applying) finds its predecessor's Jobs and
//! workloads until the garbage collector removes them. A pass therefore sorts
//! every labelled child by its controller owner reference, as the ReplicaSet
//! controller does ([`standing`]):
//! - **own** (the controller reference is this resource's UID): observed,
//!   counted and changed;
//! - **foreign** (another UID is its controller): never patched, deleted or
//!   counted; the pass waits until the garbage collector removed it;
//! - **orphan** (no controller reference, e.g. after `kubectl delete
//!   --cascade=orphan`): a workload, ConfigMap or Service is adopted (its pods
//!   keep running); a Job is never adopted, since its result belongs to a run
//!   this resource did not start: while it runs the pass waits for it, once it
//!   finished it is deleted, and the resource runs its own.

use std::sync::Arc;

use futures::future::try_join_all;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::Store;
use ratchet_phase_machine::JobOutcome;
use serde::de::DeserializeOwned;

use super::cached::{Cached, CachedDaemonSet, CachedDeployment, CachedJob, CachedStatefulSet};
use super::caches::Caches;
use super::render::Owner;
use crate::children::{FIELD_MANAGER, delete_background};
use crate::context::Context;
use crate::error::Result;
use crate::labels::{INSTANCE, MANAGED_BY, MANAGER, NAME};

/// How a child labelled as a resource's stands to that resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    Own,
    /// No controller reference at all.
    Orphan,
    /// Another object (this UID) is its controller.
    Foreign(String),
}

/// The standing of a child with `meta` towards the resource with `uid`.
pub fn standing(meta: &ObjectMeta, uid: &str) -> Standing {
    let controller = meta
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true));
    match controller {
        None => Standing::Orphan,
        Some(r) if r.uid == uid => Standing::Own,
        Some(r) => Standing::Foreign(r.uid.clone()),
    }
}

/// One resource's labelled children, sorted by their standing.
#[derive(Default)]
pub struct Claims {
    /// Its own Jobs (never an orphan's: see the module docs).
    pub jobs: Vec<Arc<CachedJob>>,
    /// Its own workloads and the orphans it adopts this pass.
    pub deployments: Vec<Arc<CachedDeployment>>,
    pub stateful_sets: Vec<Arc<CachedStatefulSet>>,
    pub daemon_sets: Vec<Arc<CachedDaemonSet>>,
    /// What the pass waits for, as "<Kind> <name> …" for the condition:
    /// foreign children and orphaned Jobs still running.
    pub waiting_for: Vec<String>,
    /// Orphans to adopt, by kind.
    adopt: Adoptions,
    /// Orphaned Jobs that finished: deleted, their outcome never read.
    finished_orphan_jobs: Vec<String>,
}

impl Claims {
    /// Sorts what the caches hold for `owner` (its service, instance and
    /// namespace labels).
    pub fn read(caches: &Caches, owner: &Owner) -> Claims {
        let uid = owner.reference.uid.as_str();
        let mut claims = Claims::default();
        for job in labelled(&caches.jobs, owner) {
            match standing(&job.metadata, uid) {
                Standing::Own => claims.jobs.push(job),
                Standing::Foreign(by) => claims.waiting_for.push(foreign("Job", &job, &by)),
                Standing::Orphan if job.detail.outcome == JobOutcome::Running => claims
                    .waiting_for
                    .push(format!("Job {} (orphaned, still running)", name(&job))),
                Standing::Orphan => claims.finished_orphan_jobs.push(name(&job)),
            }
        }
        let waiting = &mut claims.waiting_for;
        let adopt = &mut claims.adopt;
        claims.deployments = sort(
            labelled(&caches.deployments, owner),
            uid,
            waiting,
            &mut adopt.deployments,
        );
        claims.stateful_sets = sort(
            labelled(&caches.stateful_sets, owner),
            uid,
            waiting,
            &mut adopt.stateful_sets,
        );
        claims.daemon_sets = sort(
            labelled(&caches.daemon_sets, owner),
            uid,
            waiting,
            &mut adopt.daemon_sets,
        );
        sort(
            labelled(&caches.config_maps, owner),
            uid,
            waiting,
            &mut adopt.config_maps,
        );
        sort(
            labelled(&caches.services, owner),
            uid,
            waiting,
            &mut adopt.services,
        );
        claims
    }

    /// Whether a pass may act: nothing foreign or still running in the way.
    pub fn clear(&self) -> bool {
        self.waiting_for.is_empty()
    }

    /// Adopts the orphans and deletes the finished orphaned Jobs.
    pub async fn settle(&self, ctx: &Context, owner: &Owner) -> Result<()> {
        let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &owner.namespace);
        let deletions = self.finished_orphan_jobs.iter().map(|name| {
            tracing::info!(name = %owner.name, namespace = %owner.namespace, job = %name, "deleting a finished orphaned Job: its result is not this resource's");
            delete_background(&jobs, name)
        });
        let adopt = &self.adopt;
        futures::try_join!(
            try_join_all(deletions),
            adopt_all::<Deployment>(ctx, owner, &adopt.deployments),
            adopt_all::<StatefulSet>(ctx, owner, &adopt.stateful_sets),
            adopt_all::<DaemonSet>(ctx, owner, &adopt.daemon_sets),
            adopt_all::<ConfigMap>(ctx, owner, &adopt.config_maps),
            adopt_all::<Service>(ctx, owner, &adopt.services),
        )?;
        Ok(())
    }
}

/// Orphans of each adoptable kind, by name and UID.
#[derive(Default)]
struct Adoptions {
    deployments: Vec<(String, String)>,
    stateful_sets: Vec<(String, String)>,
    daemon_sets: Vec<(String, String)>,
    config_maps: Vec<(String, String)>,
    services: Vec<(String, String)>,
}

/// Keeps the own children and the orphans (listed in `adopt`) of one
/// adoptable kind; foreign ones are listed in `waiting`.
fn sort<K: k8s_openapi::Resource, D>(
    children: Vec<Arc<Cached<K, D>>>,
    uid: &str,
    waiting: &mut Vec<String>,
    adopt: &mut Vec<(String, String)>,
) -> Vec<Arc<Cached<K, D>>> {
    children
        .into_iter()
        .filter(|child| match standing(&child.metadata, uid) {
            Standing::Own => true,
            Standing::Orphan => {
                adopt.push((name(child), child.metadata.uid.clone().unwrap_or_default()));
                true
            }
            Standing::Foreign(by) => {
                waiting.push(foreign(K::KIND, child, &by));
                false
            }
        })
        .collect()
}

/// The children of `owner`'s service and instance in its namespace, whatever
/// their owner references say.
fn labelled<K, D>(store: &Store<Cached<K, D>>, owner: &Owner) -> Vec<Arc<Cached<K, D>>>
where
    K: k8s_openapi::Resource + 'static,
    D: Clone + 'static,
{
    store.state_filter(|object| {
        object.metadata.namespace.as_deref() == Some(owner.namespace.as_str())
            && object.label(MANAGED_BY) == Some(MANAGER)
            && object.label(NAME) == Some(owner.service)
            && object.label(INSTANCE) == Some(owner.name.as_str())
    })
}

fn name<K, D>(child: &Cached<K, D>) -> String {
    child.metadata.name.clone().unwrap_or_default()
}

fn foreign<K, D>(kind: &str, child: &Cached<K, D>, by: &str) -> String {
    format!("{kind} {} (owned by uid {by})", name(child))
}

async fn adopt_all<K>(ctx: &Context, owner: &Owner, orphans: &[(String, String)]) -> Result<()>
where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    try_join_all(
        orphans
            .iter()
            .map(|(name, uid)| adopt::<K>(ctx, owner, name, uid)),
    )
    .await?;
    Ok(())
}

/// Makes this resource the controller of an orphan, as the ReplicaSet
/// controller adopts pods: a strategic merge keeps any other owner reference,
/// and the child's UID is a precondition, so a child deleted and recreated
/// since it was read is not adopted blindly.
async fn adopt<K>(ctx: &Context, owner: &Owner, name: &str, uid: &str) -> Result<()>
where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let patch = serde_json::json!({
        "metadata": { "uid": uid, "ownerReferences": [owner.reference] },
    });
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PatchParams::default()
    };
    match api.patch(name, &params, &Patch::Strategic(&patch)).await {
        Ok(_) => {
            tracing::info!(name = %owner.name, namespace = %owner.namespace, kind = K::kind(&()).as_ref(), child = name, "adopted an orphan");
            Ok(())
        }
        // Gone, or replaced by another object of that name: nothing to adopt.
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn meta(references: &[(&str, Option<bool>)]) -> ObjectMeta {
        ObjectMeta {
            owner_references: Some(
                references
                    .iter()
                    .map(|(uid, controller)| OwnerReference {
                        uid: uid.to_string(),
                        controller: *controller,
                        ..OwnerReference::default()
                    })
                    .collect(),
            ),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn the_controller_reference_decides_whose_a_child_is() {
        assert_eq!(standing(&meta(&[("me", Some(true))]), "me"), Standing::Own);
        assert_eq!(
            standing(&meta(&[("before", Some(true))]), "me"),
            Standing::Foreign("before".into())
        );
        assert_eq!(standing(&ObjectMeta::default(), "me"), Standing::Orphan);
        assert_eq!(
            standing(&meta(&[("me", None), ("me", Some(false))]), "me"),
            Standing::Orphan,
            "a reference that is not a controller's claims nothing"
        );
        assert_eq!(
            standing(&meta(&[("other", Some(false)), ("me", Some(true))]), "me"),
            Standing::Own
        );
    }
}
