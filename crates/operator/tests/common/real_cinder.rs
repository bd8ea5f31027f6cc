//! What the tests with a real Cinder share: its real example, and the
//! MariaDB, RabbitMQ, Secrets and backup claim it runs against.

use anyhow::{Context, Result};
use ratchet_operator::service::OpenStackService;
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_testenv::backing::{self, Backing};
use serde_json::Value;

use super::Harness;

pub const NAME: &str = "cinder";
pub const REPOSITORY: &str = "ratchet.test/cinder";
pub const IMAGES: [&str; 2] = ["ratchet.test/cinder:2026.1", "ratchet.test/cinder:2026.2"];

/// The Cinder the real tests install at `release` (`Cinder::real_example`).
pub fn manifest(release: &str) -> Result<Value> {
    Ok(Cinder::real_example(NAME, release, REPOSITORY)
        .context("Cinder has a real example")?
        .manifest)
}

/// MariaDB and RabbitMQ as pods in the test's namespace, with the Secrets
/// and the backup claim `manifest` refers to: the database first.
pub async fn backing(h: &Harness, manifest: &Value) -> Result<Backing> {
    let provisioned = backing::provision(&h.client, h.name(), NAME, &manifest["spec"], &[]).await?;
    provisioned.database.context("the Cinder names a database")
}
