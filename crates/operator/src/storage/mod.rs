//! Kubernetes' own storage of Ratchet's resources (seed 004): which versions a
//! CRD serves and stores, the migration that rewrites every stored object in the
//! storage version and then prunes `status.storedVersions`, and the pre-flight
//! check for applying the next Ratchet's CRDs.

pub mod condition;
pub mod migrator;
pub mod runner;
mod schedule;
pub mod versions;

pub use condition::migrate_recorded;
pub use migrator::{Migration, MigrationError, MigrationOptions, get_crd, migrate};
pub use versions::{CrdVersions, preflight};
