//! What the tests with a real Cinder share: its real example, and the
//! MariaDB, RabbitMQ, Secrets and backup claim it runs against.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use ratchet_operator::service::OpenStackService;
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_testenv::ClientNetns;
use ratchet_testenv::backing::{self, Backing};
use ratchet_testenv::load::cinder::CinderLoadOutcome;
use serde_json::Value;

use super::Harness;
use super::real::{log_lines_naming, rows};

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

/// Of `ids`, the volumes whose request oslo.messaging lost on its way to the
/// next service, read from Cinder's `workers` rows: a create no scheduler took
/// (no host, no row), a create a scheduler placed and handed on that its back
/// end never took (a host, the row still the scheduler's), a delete no back end
/// took (the API's row, naming no service). oslo.messaging acknowledges an RPC
/// message as it arrives, before it is handled, so one that reaches a process in
/// the instant it stops is gone (at-most-once delivery; docs/cinder.md). Any
/// other end fails the test: a service that died mid-work leaves its own row.
pub async fn lost_casts(netns: &ClientNetns, db: &Backing, ids: &[&str]) -> Result<Vec<String>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let listed = ids
        .iter()
        .map(|id| format!("'{id}'"))
        .collect::<Vec<_>>()
        .join(",");
    let sql = format!(
        "SELECT v.id FROM volumes v \
         LEFT JOIN workers w ON w.resource_id = v.id AND w.deleted = 0 \
         LEFT JOIN services s ON s.id = w.service_id \
         WHERE v.id IN ({listed}) AND ( \
           (v.status = 'creating' AND v.host IS NULL AND w.id IS NULL) \
           OR (v.status = 'creating' AND v.host IS NOT NULL AND s.topic = 'cinder-scheduler') \
           OR (v.status = 'deleting' AND w.id IS NOT NULL AND w.service_id IS NULL))"
    );
    Ok(rows(netns, db, "cinder", &sql)
        .await?
        .into_iter()
        .filter_map(|r| r.into_iter().next())
        .collect())
}

/// Of the kept volumes that ended in `error`, those a restarted scheduler
/// cleaned: its start-up cleanup marks `error` every volume still `creating`
/// whose `workers` row names it, i.e. one it placed and cast to a back end
/// that never took it (a lost cast, as in [`lost_casts`], found after the
/// scheduler's roll instead of before it; its row is gone with the cleanup,
/// so its log says it).
pub fn cleaned_by_a_scheduler(
    h: &Harness,
    not_available: &BTreeMap<&String, &String>,
) -> Vec<String> {
    let errored: Vec<&str> = not_available
        .iter()
        .filter(|(_, status)| status.as_str() == "error")
        .map(|(id, _)| id.as_str())
        .collect();
    let said = log_lines_naming(h, &errored);
    errored
        .into_iter()
        .filter(|id| {
            said.iter().any(|line| {
                line.starts_with("cinder-scheduler-")
                    && line.contains(&format!("Cleaning Volume with id {id} and status creating"))
            })
        })
        .map(str::to_string)
        .collect()
}

/// The volumes of `outcome` not as the client left them (a kept one not
/// `available`, a deleted one still listed) that no lost cast explains (docs/cinder.md:
/// oslo.messaging's at-most-once delivery to a stopping service, issue 40's),
/// and those it does.
pub async fn unexplained_volumes(
    h: &Harness,
    netns: &ClientNetns,
    db: &Backing,
    outcome: &CinderLoadOutcome,
) -> Result<(Vec<String>, Vec<String>)> {
    let not_available: BTreeMap<&String, &String> = outcome
        .kept
        .iter()
        .filter(|(_, s)| *s != "available")
        .collect();
    let stuck: Vec<&str> = not_available
        .keys()
        .map(|id| id.as_str())
        .chain(
            outcome
                .deleted
                .iter()
                .filter(|(_, s)| *s != "gone")
                .map(|(id, _)| id.as_str()),
        )
        .collect();
    let mut lost = lost_casts(netns, db, &stuck).await?;
    lost.extend(cleaned_by_a_scheduler(h, &not_available));
    let unexplained = stuck
        .into_iter()
        .filter(|id| !lost.iter().any(|l| l == id))
        .map(str::to_string)
        .collect();
    Ok((unexplained, lost))
}
