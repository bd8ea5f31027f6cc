//! Everything a service shares, by job: the contract a service's folder
//! implements (`contract.rs`), the controller loop (`controller.rs`) and a
//! pass's observe → decide → apply (`reconcile.rs`, `observe.rs`), the pure
//! renderers of what a [`ServiceModel`] asks for (`render.rs`, `ini.rs`,
//! `identity.rs`, `readiness.rs`, `uwsgi.rs`), the shared watches a pass
//! reads its children from (`caches.rs`, `cached.rs`), and the other services'
//! resources its configuration reads (`peers.rs`).

mod cached;
pub mod caches;
pub mod contract;
mod controller;
pub mod desired;
pub mod identity;
pub mod ini;
mod key_secrets;
pub mod model;
mod observe;
mod own_writes;
mod ownership;
pub mod peer_directory;
pub mod peers;
pub mod plan;
pub mod readiness;
mod reconcile;
mod referrers;
mod registration;
pub mod registration_plan;
pub mod render;
pub mod secret_options;
mod stall;
pub mod status;
pub mod uwsgi;

pub use caches::watch_backoff;
pub use contract::{Conversion, Example, OpenStackService, ServiceStatus};
pub use controller::run;
pub use model::ServiceModel;
pub use render::Owner;

pub use cached::{
    Cached, CachedConfigMap, CachedDeployment, CachedJob, CachedService, CachedStatefulSet,
};
pub use caches::{
    Caches, Reflected, Routed, Triggers, drop_managed_fields, managed_selector, parsed_lean,
    secret_key_names,
};
