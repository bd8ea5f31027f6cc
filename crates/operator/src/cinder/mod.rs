//! The Cinder service: its profile, configuration, objects and controller.

pub mod config;
mod observe;
pub mod plan;
pub mod profile;
mod reconcile;
pub mod render;

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::Api;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use ratchet_api::cinder::v1alpha1::Cinder;

use crate::context::Context;
use crate::error::{Error, backoff};
use crate::labels::{MANAGED_BY, MANAGER};

fn api<K>(ctx: &Context) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match &ctx.config.namespace {
        Some(ns) => Api::namespaced(ctx.client.clone(), ns),
        None => Api::all(ctx.client.clone()),
    }
}

fn key(cinder: &Cinder) -> String {
    ObjectRef::from_obj(cinder).to_string()
}

fn error_policy(cinder: Arc<Cinder>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.failed(profile::SERVICE, &error.metric_label());
    let failures = ctx.record_failure(&key(&cinder));
    let delay = backoff(failures);
    tracing::warn!(cinder = %key(&cinder), error = %error, failures, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// Runs the Cinder controller until `shutdown` resolves. Owned Jobs, Deployments,
/// ConfigMaps and Services wake it on every change: no polling.
pub async fn run(ctx: Arc<Context>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let owned = watcher::Config::default().labels(&format!("{MANAGED_BY}={MANAGER}"));
    Controller::new(api::<Cinder>(&ctx), watcher::Config::default())
        .owns(api::<Job>(&ctx), owned.clone())
        .owns(api::<Deployment>(&ctx), owned.clone())
        .owns(api::<ConfigMap>(&ctx), owned.clone())
        .owns(api::<Service>(&ctx), owned)
        .with_config(controller::Config::default().concurrency(ctx.config.concurrency))
        .graceful_shutdown_on(shutdown)
        .run(
            |cinder, ctx: Arc<Context>| async move {
                let key = key(&cinder);
                let started = std::time::Instant::now();
                let result = reconcile::reconcile(cinder, ctx.clone()).await;
                ctx.metrics.reconciled(profile::SERVICE, started.elapsed());
                if result.is_ok() {
                    ctx.record_success(&key);
                }
                result
            },
            error_policy,
            ctx.clone(),
        )
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "controller event");
            }
        })
        .await;
}
