//! Keeps Ratchet's CRDs right at start-up and whenever a CRD's generation
//! changes (re-applied by Helm or GitOps, a version added or removed, the
//! storage version moved): the watch on the CRDs' metadata wakes it, nothing
//! polls. It restores the conversion webhook's endpoint and caBundle when this
//! operator serves conversion, then runs the stored-version migration. A failed
//! migration is retried with backoff (that CRD alone, see [`Schedule`]) and
//! reported as a Warning event on the CRD, a metric and a log line.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::Resource;
use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};

use ratchet_phase_machine::{Event, EventType};

use super::condition::{Outcome, migrate_recorded};
use super::migrator::{MigrationOptions, get_crd};
use super::schedule::Schedule;
use crate::context::Context;
use crate::registry::{Registered, Registry};
use crate::webhooks::registration::ensure_conversion;

/// The CRDs Ratchet owns, by name.
pub fn ratchet_crds<R: Registry>() -> Vec<String> {
    R::services().iter().map(Registered::crd_name).collect()
}

/// Until `shutdown`: migrate each Ratchet CRD whose generation was not migrated yet.
pub async fn run<R: Registry>(ctx: Arc<Context>, shutdown: impl std::future::Future<Output = ()>) {
    let names = ratchet_crds::<R>();
    // Metadata only: the generation is all that matters here.
    let api: Api<PartialObjectMeta<CustomResourceDefinition>> = Api::all(ctx.client.clone());
    let changes = watcher(api, watcher::Config::default())
        .default_backoff()
        .applied_objects();
    let mut schedule = Schedule::default();
    let work = async {
        let mut changes = std::pin::pin!(changes);
        loop {
            let next_due = schedule.next_due();
            let runs: Vec<(String, i64)> = tokio::select! {
                change = changes.next() => {
                    let Some(change) = change else { break };
                    let Ok(meta) = change else { continue };
                    match (meta.metadata.name, meta.metadata.generation) {
                        (Some(name), Some(generation))
                            if names.contains(&name) && schedule.wants(&name, generation) =>
                        {
                            vec![(name, generation)]
                        }
                        _ => continue,
                    }
                }
                () = sleep_until(next_due), if next_due.is_some() => {
                    schedule.due(Instant::now())
                }
            };
            for (name, generation) in runs {
                let succeeded = migrate_once::<R>(&ctx, &name).await.is_ok();
                schedule.finished(&name, generation, succeeded, Instant::now());
            }
        }
    };
    tokio::select! {
        _ = work => {}
        _ = shutdown => {}
    }
}

async fn migrate_once<R: Registry>(ctx: &Context, name: &str) -> Result<(), ()> {
    if let Some(target) = &ctx.conversion {
        match ensure_conversion::<R>(&ctx.client, target).await {
            // The patch changes the CRD: the next generation brings us back.
            Ok(true) => {
                tracing::info!(
                    crd = name,
                    "conversion webhook endpoint and caBundle restored"
                );
                return Ok(());
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(crd = name, error = %e, "keeping the conversion webhook configured failed");
                return Err(());
            }
        }
    }
    if !ctx.config.storage_migration {
        return Ok(());
    }
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
    let crd = match get_crd(&crds, name).await {
        Ok(crd) => crd,
        Err(e) => {
            tracing::warn!(crd = name, error = %e, "stored-version migration failed");
            return Err(());
        }
    };
    let reference = crd.object_ref(&());
    let started = std::time::Instant::now();
    match migrate_recorded(&ctx.client, &crd, MigrationOptions::default()).await {
        Ok(migration) => {
            let outcome = if migration.pruned {
                "pruned"
            } else if migration.crd_changed {
                "changed"
            } else {
                "clean"
            };
            ctx.metrics
                .storage_migration(name, outcome, migration.rewritten);
            tracing::info!(crd = name, outcome, rewritten = migration.rewritten, pages = migration.pages, restarts = migration.restarts, took = ?started.elapsed(), "stored-version migration finished");
            if migration.pruned {
                let note = Outcome::of(&Ok(migration)).message;
                ctx.events.publish(
                    &reference,
                    &[Event {
                        kind: EventType::Normal,
                        reason: "StorageMigrated".into(),
                        message: note,
                    }],
                );
            }
            Ok(())
        }
        Err(e) => {
            ctx.metrics.storage_migration(name, "failed", 0);
            tracing::warn!(crd = name, error = %e, "stored-version migration failed");
            ctx.events.publish(
                &reference,
                &[Event {
                    kind: EventType::Warning,
                    reason: "StorageMigrationFailed".into(),
                    message: e.to_string(),
                }],
            );
            Err(())
        }
    }
}

/// Resolves at `at` (never, without one).
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
