//! The controller's part of a service's registration in Keystone: the
//! Keystone resource `spec.identity` names (its admin password's Secret and
//! its image, which the Job runs on),
//! what the registration Job reads, and the Secrets it gets. The decision is
//! the machine's ([`ratchet_phase_machine::registration`]); the work is the
//! Job's (`registration.py`, run on Keystone's image). A Job, not calls
//! from the operator: the operator may run where Keystone's Service address
//! is not routable (outside the pod network), and a Job's failures are
//! reported and retried like every phase Job's.

use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use ratchet_api::common::{ImageSpec, SecretKeyRef};
use ratchet_api::identity::{KEYSTONE_GROUP, KEYSTONE_KIND, KEYSTONE_VERSION};
use ratchet_phase_machine::ObservedRegistration;
use ratchet_phase_machine::hash::content_hash;
use ratchet_release::ImageRef;

use super::caches::Caches;
use super::model::{SecretEnv, ServiceModel};
use super::render::Owner;
use crate::context::Context;
use crate::error::Result;

/// The variables the script reads its two passwords from.
const ADMIN_PASSWORD_ENV: &str = "RATCHET_ADMIN_PASSWORD";
const SERVICE_PASSWORD_ENV: &str = "RATCHET_SERVICE_PASSWORD";

/// The registration as observed, and the Secrets its Job gets.
pub struct Found {
    pub observed: ObservedRegistration,
    pub secrets: Vec<SecretEnv>,
}

/// Reads the Keystone the model's registration names; `None` without one.
pub async fn observe(
    ctx: &Context,
    caches: &Caches,
    owner: &Owner,
    model: &ServiceModel,
) -> Result<Option<Found>> {
    let Some(registration) = &model.registration else {
        return Ok(None);
    };
    let keystone = keystone(ctx, &owner.namespace, &registration.keystone).await?;
    let keystone = keystone.and_then(|keystone| {
        let admin = &keystone.admin_password;
        caches
            .secret_version(&owner.namespace, admin)
            .map(|_| keystone.clone())
            .ok_or_else(|| {
                format!(
                    "Keystone {}'s admin password, Secret {} key {}, does not exist",
                    registration.keystone, admin.secret_name, admin.key
                )
            })
    });
    let admin = keystone
        .as_ref()
        .map(|k| k.admin_password.clone())
        .map_err(String::clone);
    let owner_name = format!("{} {}/{}", owner.service, owner.namespace, owner.name);
    let command = admin
        .as_ref()
        .map(|admin| registration.command(model.config_dir, &owner.namespace, admin, &owner_name))
        .map_err(String::clone);
    // A new password in either Secret runs the registration again (and the
    // pods, whose configuration hash carries these versions, restart after it).
    let versions = [Some(&registration.password), admin.as_ref().ok()]
        .into_iter()
        .flatten()
        .map(|key| {
            caches
                .secret_version(&owner.namespace, key)
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("\0");
    let secrets = match &admin {
        Ok(admin) => vec![
            SecretEnv {
                env: ADMIN_PASSWORD_ENV.into(),
                source: admin.clone(),
            },
            SecretEnv {
                env: SERVICE_PASSWORD_ENV.into(),
                source: registration.password.clone(),
            },
        ],
        Err(_) => Vec::new(),
    };
    Ok(Some(Found {
        observed: ObservedRegistration {
            image: keystone.map(|k| k.image).unwrap_or_default(),
            command,
            inputs: content_hash(versions.as_bytes()),
            summary: registration.summary(),
        },
        secrets,
    }))
}

/// What the registration takes from the Keystone resource.
#[derive(Clone)]
struct KeystoneFacts {
    /// `spec.adminPassword`.
    admin_password: SecretKeyRef,
    /// `spec.image`: the Job runs on Keystone's image, chosen by whoever
    /// manages Keystone, not on the service's, so a service's owner cannot
    /// pick the code that reads Keystone's admin password.
    image: String,
}

/// The Keystone resource's admin password and image, or why there are none.
async fn keystone(
    ctx: &Context,
    namespace: &str,
    keystone: &str,
) -> Result<std::result::Result<KeystoneFacts, String>> {
    let kind = GroupVersionKind::gvk(KEYSTONE_GROUP, KEYSTONE_VERSION, KEYSTONE_KIND);
    let api: Api<DynamicObject> =
        Api::namespaced_with(ctx.client.clone(), namespace, &ApiResource::from_gvk(&kind));
    let Some(found) = api.get_opt(keystone).await? else {
        return Ok(Err(format!(
            "spec.identity.keystone names Keystone {keystone}, which is not in namespace {namespace}"
        )));
    };
    let field = |name: &str| found.data.get("spec").and_then(|s| s.get(name)).cloned();
    let Some(admin_password) =
        field("adminPassword").and_then(|v| serde_json::from_value::<SecretKeyRef>(v).ok())
    else {
        return Ok(Err(format!(
            "Keystone {keystone} names no spec.adminPassword"
        )));
    };
    let image = field("image")
        .and_then(|v| serde_json::from_value::<ImageSpec>(v).ok())
        .and_then(|i| ImageRef::new(&i.repository, i.tag.as_deref(), i.digest.as_deref()).ok());
    let Some(image) = image else {
        return Ok(Err(format!("Keystone {keystone} has no valid spec.image")));
    };
    Ok(Ok(KeystoneFacts {
        admin_password,
        image: image.to_string(),
    }))
}
