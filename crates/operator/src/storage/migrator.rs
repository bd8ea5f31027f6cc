//! The stored-version migration of one CRD: page through every object, rewrite
//! each in the storage version with a no-op update guarded by its
//! resourceVersion, and only when every object succeeded, prune
//! `status.storedVersions` to the storage version — with optimistic locking, and
//! only if the CRD's generation and storage version did not change meanwhile.
//!
//! A rewrite that the API server refuses (for example a validating webhook)
//! stops the migration with an error naming the object; nothing is pruned after
//! a stop, so a version that may still be stored is never forgotten.

use futures::{StreamExt, stream};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, ListParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Api, Client};

use super::versions::{CrdVersions, served_managed_fields};

/// How a migration pages.
pub struct MigrationOptions {
    /// Objects per list page (the list is never read whole).
    pub page_size: u32,
    /// Rewrites in flight at once.
    pub concurrency: usize,
    /// Times the listing may start over after its continue token expired.
    pub max_restarts: u32,
    /// Called after each page with the objects rewritten so far (progress
    /// reporting; tests use it to expire the continue token).
    pub on_page: Option<Box<dyn FnMut(u64) + Send>>,
}

impl Default for MigrationOptions {
    fn default() -> Self {
        MigrationOptions {
            page_size: 500,
            concurrency: 8,
            max_restarts: 5,
            on_page: None,
        }
    }
}

/// What a migration did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    pub crd: String,
    /// The storage version every object is now stored in.
    pub storage: String,
    /// Objects rewritten (including ones a concurrent writer or deletion handled);
    /// when nothing older is stored, only those whose managed fields needed cleaning.
    pub rewritten: u64,
    /// Of those, objects whose managed fields named versions no longer served.
    pub managed_fields_cleaned: u64,
    pub pages: u64,
    /// Times the listing started over because its continue token expired.
    pub restarts: u32,
    /// `status.storedVersions` before the migration.
    pub stored_before: Vec<String>,
    /// Whether `status.storedVersions` was pruned (false when there was nothing
    /// to do or the CRD changed during the migration; see `note`).
    pub pruned: bool,
    /// The CRD's generation or storage version changed while objects were
    /// rewritten: nothing was pruned, the next run (its change wakes one) does it.
    pub crd_changed: bool,
    pub note: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    #[error("reading CRD {crd}: {source}")]
    Crd {
        crd: String,
        #[source]
        source: kube::Error,
    },
    #[error("CRD {0} has no storage version")]
    NoStorageVersion(String),
    #[error(
        "rewriting {kind} {namespace}/{name} in {version} was refused: {source}; storedVersions left unchanged — fix the cause (the object or what refuses it) and run the migration again"
    )]
    Rewrite {
        kind: String,
        namespace: String,
        name: String,
        version: String,
        #[source]
        source: kube::Error,
    },
    #[error("listing {crd} objects: {source}")]
    List {
        crd: String,
        #[source]
        source: kube::Error,
    },
    #[error("listing {crd} objects: the continue token expired {restarts} times; giving up")]
    TooManyRestarts { crd: String, restarts: u32 },
    #[error("pruning storedVersions of {crd}: {source}")]
    Prune {
        crd: String,
        #[source]
        source: kube::Error,
    },
}

fn status_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Migrates every object of `crd` (as the caller just read it) to its storage
/// version and prunes `status.storedVersions`.
pub async fn migrate(
    client: &Client,
    crd: &CustomResourceDefinition,
    mut options: MigrationOptions,
) -> Result<Migration, MigrationError> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let versions = CrdVersions::of(crd);
    let crd_name = versions.name.as_str();
    let storage = versions
        .storage
        .clone()
        .ok_or_else(|| MigrationError::NoStorageVersion(crd_name.into()))?;
    let mut migration = Migration {
        crd: crd_name.into(),
        storage: storage.clone(),
        rewritten: 0,
        managed_fields_cleaned: 0,
        pages: 0,
        restarts: 0,
        stored_before: versions.stored.clone(),
        pruned: false,
        crd_changed: false,
        note: None,
    };
    // Everything is rewritten while older versions may be stored; otherwise
    // only objects whose managed fields name versions no longer served.
    let full = versions.needs_migration();
    let gvk = GroupVersionKind::gvk(&versions.group, &storage, &crd.spec.names.kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural);
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);

    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(options.page_size);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let page = match all.list(&params).await {
            Ok(page) => page,
            // 410 Gone: the continue token outlived etcd's compaction. Start
            // over; rewriting an already migrated object again is harmless.
            Err(e) if status_code(&e) == Some(410) && token.is_some() => {
                migration.restarts += 1;
                if migration.restarts > options.max_restarts {
                    return Err(MigrationError::TooManyRestarts {
                        crd: crd_name.into(),
                        restarts: migration.restarts,
                    });
                }
                tracing::info!(
                    crd = crd_name,
                    restarts = migration.restarts,
                    "continue token expired; listing again"
                );
                token = None;
                continue;
            }
            Err(source) => {
                return Err(MigrationError::List {
                    crd: crd_name.into(),
                    source,
                });
            }
        };
        migration.pages += 1;
        // Rewrites are independent: several in flight, the first refusal stops
        // the page (and with it the migration).
        let mut rewrites = stream::iter(page.items)
            .map(|object| rewrite(client, &resource, &versions, &storage, object, full))
            .buffer_unordered(options.concurrency.max(1));
        while let Some(done) = rewrites.next().await {
            match done? {
                Rewrite::Skipped => {}
                Rewrite::Stored => migration.rewritten += 1,
                Rewrite::Cleaned => {
                    migration.rewritten += 1;
                    migration.managed_fields_cleaned += 1;
                }
            }
        }
        if let Some(report) = options.on_page.as_mut() {
            report(migration.rewritten);
        }
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    if full {
        prune(&crds, &versions, &storage, &mut migration).await?;
    } else {
        migration.note = Some(format!("storedVersions is already [{storage}]"));
    }
    Ok(migration)
}

#[derive(Debug)]
enum Rewrite {
    Skipped,
    Stored,
    /// Stored, with managed fields of versions no longer served removed.
    Cleaned,
}

/// Rewrites one object in the storage version (when `all`, or when its managed
/// fields need cleaning). A conflict (somebody else wrote it, so it is stored
/// anew) or its deletion counts as done.
async fn rewrite(
    client: &Client,
    resource: &ApiResource,
    versions: &CrdVersions,
    storage: &str,
    mut object: DynamicObject,
    all: bool,
) -> Result<Rewrite, MigrationError> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let cleaned = match object
        .metadata
        .managed_fields
        .as_deref()
        .and_then(|entries| served_managed_fields(entries, versions))
    {
        Some(kept) if kept.is_empty() => {
            // An empty list would leave the field untouched; one empty entry
            // is the API's way to clear every entry.
            object.metadata.managed_fields = Some(vec![Default::default()]);
            true
        }
        Some(kept) => {
            object.metadata.managed_fields = Some(kept);
            true
        }
        None => false,
    };
    if !all && !cleaned {
        return Ok(Rewrite::Skipped);
    }
    let done = if cleaned {
        Rewrite::Cleaned
    } else {
        Rewrite::Stored
    };
    let api: Api<DynamicObject> = if namespace.is_empty() {
        Api::all_with(client.clone(), resource)
    } else {
        Api::namespaced_with(client.clone(), &namespace, resource)
    };
    // The object carries the resourceVersion it was read at: the update fails
    // with a conflict instead of overwriting a newer write.
    match api.replace(&name, &PostParams::default(), &object).await {
        Ok(_) => Ok(done),
        Err(e) if matches!(status_code(&e), Some(404 | 409)) => Ok(done),
        Err(source) => Err(MigrationError::Rewrite {
            kind: resource.kind.clone(),
            namespace,
            name,
            version: storage.into(),
            source,
        }),
    }
}

/// Prunes `status.storedVersions` to the storage version, if the CRD still is
/// what the migration started from.
async fn prune(
    crds: &Api<CustomResourceDefinition>,
    before: &CrdVersions,
    storage: &str,
    migration: &mut Migration,
) -> Result<(), MigrationError> {
    let crd_name = before.name.as_str();
    let mut crd = get_crd(crds, crd_name).await?;
    let now = CrdVersions::of(&crd);
    if now.generation != before.generation || now.storage.as_deref() != Some(storage) {
        migration.crd_changed = true;
        migration.note = Some(format!(
            "the CRD changed during the migration (generation {} → {}); storedVersions not pruned, migrating again",
            before.generation, now.generation
        ));
        return Ok(());
    }
    if let Some(status) = crd.status.as_mut() {
        status.stored_versions = Some(vec![storage.to_string()]);
    }
    // The CRD carries the resourceVersion it was read at: a concurrent change
    // makes this fail instead of being overwritten.
    crds.replace_status(crd_name, &PostParams::default(), &crd)
        .await
        .map_err(|source| MigrationError::Prune {
            crd: crd_name.into(),
            source,
        })?;
    migration.pruned = true;
    Ok(())
}

/// Reads CRD `name`, the start of every migration.
pub async fn get_crd(
    crds: &Api<CustomResourceDefinition>,
    name: &str,
) -> Result<CustomResourceDefinition, MigrationError> {
    crds.get(name).await.map_err(|source| MigrationError::Crd {
        crd: name.into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::client::Body;
    use serde_json::json;

    fn versions() -> CrdVersions {
        CrdVersions {
            name: "cinders.cinder.openstack.c5c3.io".into(),
            group: "cinder.openstack.c5c3.io".into(),
            generation: 2,
            storage: Some("v1beta1".into()),
            served: vec!["v1alpha1".into(), "v1beta1".into()],
            stored: vec!["v1alpha1".into(), "v1beta1".into()],
        }
    }

    /// Rewrites object `ns/c` (read at resourceVersion 42) against an API
    /// server that answers the update with `code`; returns the request body
    /// and what the rewrite made of the answer.
    async fn rewrite_answered(code: u16) -> (serde_json::Value, Result<Rewrite, MigrationError>) {
        let (service, handle) =
            tower_test::mock::pair::<http::Request<Body>, http::Response<Body>>();
        let client = Client::new(service, "default");
        let server = tokio::spawn(async move {
            let mut handle = std::pin::pin!(handle);
            let (request, respond) = handle.next_request().await.expect("a request");
            assert_eq!(request.method(), http::Method::PUT);
            assert_eq!(
                request.uri().path(),
                "/apis/cinder.openstack.c5c3.io/v1beta1/namespaces/ns/cinders/c"
            );
            let body = request.into_body().collect_bytes().await.expect("a body");
            let status = json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": if code < 300 { "Success" } else { "Failure" },
                "message": "answered by the test", "reason": "Test", "code": code,
            });
            let response = http::Response::builder()
                .status(code)
                .body(Body::from(serde_json::to_vec(&status).expect("json")))
                .expect("a response");
            respond.send_response(response);
            serde_json::from_slice::<serde_json::Value>(&body).expect("a JSON body")
        });
        let gvk = GroupVersionKind::gvk("cinder.openstack.c5c3.io", "v1beta1", "Cinder");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "cinders");
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "cinder.openstack.c5c3.io/v1beta1",
            "kind": "Cinder",
            "metadata": { "name": "c", "namespace": "ns", "resourceVersion": "42" },
            "spec": { "openStackRelease": "2026.1" },
        }))
        .expect("an object");
        let result = rewrite(&client, &resource, &versions(), "v1beta1", object, true).await;
        (server.await.expect("the mock server"), result)
    }

    #[tokio::test]
    async fn the_rewrite_is_guarded_by_the_version_it_read() {
        let (sent, _) = rewrite_answered(409).await;
        assert_eq!(sent["metadata"]["resourceVersion"], "42");
        assert_eq!(sent["spec"]["openStackRelease"], "2026.1", "a no-op write");
    }

    #[tokio::test]
    async fn a_conflict_or_a_deletion_counts_as_done() {
        for code in [409, 404] {
            let (_, result) = rewrite_answered(code).await;
            assert!(matches!(result, Ok(Rewrite::Stored)), "{code}");
        }
    }

    #[tokio::test]
    async fn any_other_refusal_stops_the_migration_naming_the_object() {
        for code in [403, 422, 500] {
            let (_, result) = rewrite_answered(code).await;
            match result {
                Err(MigrationError::Rewrite {
                    namespace, name, ..
                }) => assert_eq!((namespace.as_str(), name.as_str()), ("ns", "c"), "{code}"),
                other => panic!("{code}: expected a stop, got {other:?}"),
            }
        }
    }
}
