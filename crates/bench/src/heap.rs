//! What the operator's watch caches cost in heap, kind by kind: the objects
//! Ratchet manages are listed from the cluster, trimmed as the operator trims
//! them, and copied into a store as its reflector does, while this process's
//! allocator counts the bytes that stay.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

use k8s_openapi::NamespaceResourceScope;
use kube::api::ListParams;
use kube::{Api, Client, Resource};
use ratchet_operator::registry::Registry;
use ratchet_operator::service::{
    CachedConfigMap, CachedDeployment, CachedJob, CachedService, CachedStatefulSet,
    drop_managed_fields, parsed_lean, secret_key_names,
};
use ratchet_services::Services;
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_services::ironic::v1alpha1::Ironic;
use serde::de::DeserializeOwned;

/// The system allocator, counting the bytes currently allocated.
pub struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// One kind's cache: objects, and heap bytes kept (objects, keys and map).
pub struct CacheCost {
    pub kind: String,
    pub objects: usize,
    pub bytes: isize,
}

/// The heap a store of every managed `K` in the cluster keeps. Other tasks of
/// this process allocate meanwhile, so the figure is approximate: run it
/// while the cluster is quiet.
async fn cost<K>(
    client: &Client,
    selector: Option<&str>,
    trim: fn(&mut K),
) -> anyhow::Result<CacheCost>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    let params = selector.map_or_else(ListParams::default, |s| ListParams::default().labels(s));
    let mut listed = api.list(&params).await?.items;
    listed.iter_mut().for_each(trim);
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let store: std::collections::HashMap<kube::runtime::reflector::ObjectRef<K>, Arc<K>> = listed
        .iter()
        .map(|object| {
            (
                kube::runtime::reflector::ObjectRef::from_obj(object),
                Arc::new(object.clone()),
            )
        })
        .collect();
    let bytes = LIVE_BYTES.load(Ordering::Relaxed) - before;
    let objects = store.len();
    drop(store);
    Ok(CacheCost {
        kind: K::kind(&()).into_owned(),
        objects,
        bytes,
    })
}

/// The cost of each cache the operator keeps, as it selects and trims them:
/// the fleet's own resources, then their children.
pub async fn caches(client: &Client) -> anyhow::Result<Vec<CacheCost>> {
    let managed = ratchet_operator::service::managed_selector(&Services::service_names());
    let managed = Some(managed.as_str());
    Ok(vec![
        cost(client, None, drop_managed_fields::<Cinder>).await?,
        cost(client, None, drop_managed_fields::<Ironic>).await?,
        cost::<CachedJob>(client, managed, parsed_lean).await?,
        cost::<CachedDeployment>(client, managed, parsed_lean).await?,
        cost::<CachedStatefulSet>(client, managed, parsed_lean).await?,
        cost::<CachedConfigMap>(client, managed, parsed_lean).await?,
        cost::<CachedService>(client, managed, parsed_lean).await?,
        cost(client, None, secret_key_names).await?,
    ])
}
