//! Ratchet's local Kubernetes control plane, for tests, benchmarks and the demo.
//!
//! - [`LocalCluster`]: etcd, kube-apiserver and kube-controller-manager built
//!   from Go modules, on free loopback ports with fresh certificates.
//! - [`SimKubelet`]: a Ready node whose pods run simulated lifecycles chosen
//!   per workload through [`Scenarios`].
//! - [`TestEnv`]: one of each per test binary, shared by its tests.
//! - [`EtcdClient`]: raw reads of what etcd really stores.

pub mod binaries;
pub mod cluster;
pub mod error;
pub mod etcd;
pub mod kubelet;
pub mod pki;
mod process;
pub mod shared;
pub mod wait;

pub use binaries::KubeBinaries;
pub use cluster::{ClusterOptions, EtcdClientFiles, LocalCluster, StartupTimings};
pub use error::{Result, TestEnvError};
pub use etcd::{EtcdClient, EtcdTls, StoredObject};
pub use kubelet::{Behaviour, Exit, KubeletOptions, PodSelector, RuleId, Scenarios, SimKubelet};
pub use shared::{TestEnv, TestNamespace};
