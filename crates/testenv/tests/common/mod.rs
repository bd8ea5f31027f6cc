//! What the real-pod test binaries share: the environment with the process
//! kubelet, a namespace whose pods it runs, and object creation from JSON.

#![allow(dead_code)] // each test binary uses a different part

use std::time::Duration;

use anyhow::{Context, Result};
use kube::api::PostParams;
use kube::{Api, Client};
use ratchet_testenv::{TestEnv, TestNamespace};
use serde_json::Value;

pub const TIMEOUT: Duration = Duration::from_secs(60);
pub const PYTHON: &str = "ratchet.test/python3:3.11";

/// The shared environment with real pods, and a namespace of `prefix` in it.
pub async fn setup(prefix: &str) -> Result<(&'static TestEnv, Client, TestNamespace)> {
    let env = TestEnv::shared_with_processes()
        .context("real pods need root (network namespaces, mounts)")?;
    let client = env.client()?;
    let ns = env.process_namespace(&client, prefix).await?;
    Ok((env, client, ns))
}

pub async fn create<K>(api: &Api<K>, value: Value) -> Result<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = serde_json::from_value(value)?;
    Ok(api.create(&PostParams::default(), &object).await?)
}
