//! Ratchet's local Kubernetes control plane, for tests, benchmarks and the demo.
//!
//! - [`LocalCluster`]: etcd, kube-apiserver and kube-controller-manager built
//!   from Go modules, on free loopback ports with fresh certificates.
//! - [`SimKubelet`]: a Ready node whose pods run simulated lifecycles chosen
//!   per workload through [`Scenarios`].
//! - [`ProcessKubelet`]: a second node whose pods run as real Linux processes
//!   (namespaces, volumes, probes, restarts); [`binding`] says which kubelet
//!   takes a pod.
//! - [`services`]: ready endpoints of a Service, picked as kube-proxy would.
//! - [`TestEnv`]: one of each per test binary, shared by its tests.
//! - [`EtcdClient`]: raw reads of what etcd really stores.
//! - [`prerequisites`]: what real pods need of this machine (root, Debian
//!   packages, room for the images), checked before anything starts.

pub mod backing;
pub mod binaries;
pub mod binding;
pub mod cluster;
pub mod error;
pub mod etcd;
pub mod kubelet;
pub mod load;
mod node;
pub mod pki;
pub mod prerequisites;
mod process;
pub mod process_kubelet;
pub mod services;
pub mod shared;
pub mod wait;

pub use binaries::KubeBinaries;
pub use cluster::{ClusterOptions, EtcdClientFiles, LocalCluster, StartupTimings};
pub use error::{Result, TestEnvError};
pub use etcd::{EtcdClient, EtcdTls, StoredObject};
pub use kubelet::{Behaviour, Exit, KubeletOptions, PodSelector, RuleId, Scenarios, SimKubelet};
pub use process_kubelet::{ProcessKubelet, ProcessKubeletOptions};
pub use services::ready_endpoints;
pub use shared::{ClientNetns, TestEnv, TestNamespace};
