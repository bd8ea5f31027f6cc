//! The `ratchet` command's library: each subcommand a module (`src/main.rs`
//! parses the arguments), shared with `ratchet-bench`, which runs the demo's
//! real upgrade for its figures.

pub mod crds;
pub mod demo;
pub mod local;
pub mod manage;
pub mod manifests;
pub mod operator;
pub mod resource_status;
pub mod storage;
pub mod timeline;
