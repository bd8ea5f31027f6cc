//! Key Secrets ([`KeySecret`]): created once, when absent, and never rewritten,
//! so every replica and every release reads the same keys. A Secret of that
//! name the user created is used as it is.

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;

use super::model::{KeySecret, ServiceModel};
use super::ownership::{Standing, standing};
use super::render::{self, Owner};
use crate::context::Context;
use crate::error::Result;

/// Creates each of the model's key Secrets that does not exist yet; returns
/// those of a deleted predecessor of the same name ("Secret <name> …"), which
/// the garbage collector is about to remove: keys this resource must not use.
pub async fn ensure(ctx: &Context, owner: &Owner, model: &ServiceModel) -> Result<Vec<String>> {
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let mut in_the_way = Vec::new();
    for secret in &model.key_secrets {
        in_the_way.extend(ensure_one(&api, owner, secret).await?);
    }
    Ok(in_the_way)
}

async fn ensure_one(
    api: &Api<Secret>,
    owner: &Owner,
    secret: &KeySecret,
) -> Result<Option<String>> {
    if let Some(live) = api.get_metadata_opt(&secret.secret_name).await? {
        return Ok(match standing(&live.metadata, &owner.reference.uid) {
            Standing::Foreign(by) => {
                Some(format!("Secret {} (owned by uid {by})", secret.secret_name))
            }
            Standing::Own | Standing::Orphan => None,
        });
    }
    match api
        .create(&PostParams::default(), &render::key_secret(owner, secret)?)
        .await
    {
        // Another pass (or replica) created it first: its keys stand.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(None),
        created => created.map(|_| None).map_err(Into::into),
    }
}
