//! Key Secrets ([`KeySecret`]): created once, when absent, and never rewritten,
//! so every replica and every release reads the same keys. A Secret of that
//! name the user created is used as it is.

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;

use super::model::{KeySecret, ServiceModel};
use super::render::{self, Owner};
use crate::context::Context;
use crate::error::Result;

/// Creates each of the model's key Secrets that does not exist yet.
pub async fn ensure(ctx: &Context, owner: &Owner, model: &ServiceModel) -> Result<()> {
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    for secret in &model.key_secrets {
        ensure_one(&api, owner, secret).await?;
    }
    Ok(())
}

async fn ensure_one(api: &Api<Secret>, owner: &Owner, secret: &KeySecret) -> Result<()> {
    if api.get_metadata_opt(&secret.secret_name).await?.is_some() {
        return Ok(());
    }
    match api
        .create(&PostParams::default(), &render::key_secret(owner, secret)?)
        .await
    {
        // Another pass (or replica) created it first: its keys stand.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        created => created.map(|_| ()).map_err(Into::into),
    }
}
