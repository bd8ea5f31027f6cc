//! A client that keeps using an Ironic API while it upgrades: enrolls a few
//! `fake-hardware` nodes, then lists them, shows one and patches one's `extra`
//! in turn, through the API Service's ClusterIP, from a client network
//! namespace. Between rounds it reads the version document of the pod it
//! reached (its maximum microversion; kube-proxy picks any ready pod for each
//! connection), so the test sees what the API pods offered when. Any transport error or unexpected status is a failure;
//! nothing is retried to hide one. With a login it sends a token (enrolling
//! nodes needs a system-scoped admin's), without one it needs
//! `auth_strategy = noauth`.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::auth::Credentials;
use super::{Made, Outcome, Request, RunningLoad, Session, exchange, start_load};
use crate::error::Result;
use crate::shared::ClientNetns;

/// A microversion both releases of the pair serve (node `extra`, `fields`).
const MICROVERSION: &str = "1.80";

/// One reading of an API pod's version document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionSample {
    pub at: SystemTime,
    /// `versions[0].version`: the highest microversion it serves.
    pub max_microversion: String,
}

/// What became of the nodes the client made.
#[derive(Clone, Debug, Default)]
pub struct IronicLoadOutcome {
    /// Node UUID → the `extra.load` value the client last set (acknowledged).
    pub expected_extra: BTreeMap<String, u64>,
    /// Node UUID → the whole node as read after the load stopped.
    pub nodes: BTreeMap<String, Value>,
    pub versions: Vec<VersionSample>,
}

impl Outcome for IronicLoadOutcome {
    /// A node is lost when it was not read back, or does not hold the last
    /// `extra.load` the client set.
    fn made(&self) -> Made {
        let lost = self
            .expected_extra
            .iter()
            .filter(|(uuid, expected)| {
                let wanted = (**expected > 0).then(|| expected.to_string());
                self.nodes
                    .get(*uuid)
                    .is_none_or(|node| node["extra"]["load"].as_str() != wanted.as_deref())
            })
            .map(|(uuid, _)| format!("node {uuid}"))
            .collect();
        Made {
            summary: format!("{} nodes enrolled and updated", self.expected_extra.len()),
            lost,
        }
    }
}

/// Options of the load.
#[derive(Clone, Debug)]
pub struct IronicLoadOptions {
    pub nodes: usize,
    /// Pause between rounds (a round: list, show, patch, read the version).
    pub pause: Duration,
    /// Whom to log in to Keystone as, when Ironic authenticates; none: no
    /// token is sent.
    pub login: Option<Credentials>,
}

impl Default for IronicLoadOptions {
    fn default() -> Self {
        IronicLoadOptions {
            nodes: 4,
            pause: Duration::from_millis(200),
            login: None,
        }
    }
}

/// The running client; stopping it ends the rounds and reads every node once more.
pub type IronicLoad = RunningLoad<IronicLoadOutcome>;

/// Starts the client in `netns` against the Service `service` (port `api`).
pub async fn start(
    client: &kube::Client,
    netns: &ClientNetns,
    namespace: &str,
    service: &str,
    options: IronicLoadOptions,
) -> Result<IronicLoad> {
    let login = options.login.clone();
    start_load(client, netns, namespace, service, login, |session, stop| {
        Worker {
            session,
            outcome: IronicLoadOutcome::default(),
        }
        .run(options, stop)
    })
    .await
}

struct Worker {
    session: Session,
    outcome: IronicLoadOutcome,
}

impl Worker {
    /// One tallied request to `path` (under `/v1` unless it is `/`); the
    /// body, if it answered `expect`.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        expect: u16,
    ) -> Option<Value> {
        self.session
            .tallied(async {
                // The root lists the API's versions; everything else is under /v1.
                let prefix = if path == "/" { "" } else { "/v1" };
                let Request { builder, what } = self.session.request(method, prefix, path).await?;
                let mut request = builder.header("X-OpenStack-Ironic-API-Version", MICROVERSION);
                if let Some(body) = &body {
                    request = request.json(body);
                }
                exchange(request, &what, expect).await
            })
            .await
    }

    async fn enroll(&mut self, count: usize) {
        for n in 0..count {
            let body = json!({ "name": format!("load-{n}"), "driver": "fake-hardware" });
            if let Some(node) = self.call(Method::POST, "/nodes", Some(body), 201).await
                && let Some(uuid) = node["uuid"].as_str()
            {
                self.outcome.expected_extra.insert(uuid.to_string(), 0);
            }
        }
    }

    async fn round(&mut self, round: u64) {
        self.call(Method::GET, "/nodes?fields=uuid,name,extra", None, 200)
            .await;
        let uuids: Vec<String> = self.outcome.expected_extra.keys().cloned().collect();
        if uuids.is_empty() {
            return;
        }
        let uuid = &uuids[round as usize % uuids.len()];
        self.call(Method::GET, &format!("/nodes/{uuid}"), None, 200)
            .await;
        let patch = json!([{ "op": "add", "path": "/extra/load", "value": round.to_string() }]);
        if self
            .call(Method::PATCH, &format!("/nodes/{uuid}"), Some(patch), 200)
            .await
            .is_some()
        {
            self.outcome.expected_extra.insert(uuid.clone(), round);
        }
        if let Some(doc) = self.call(Method::GET, "/", None, 200).await
            && let Some(version) = doc["versions"][0]["version"].as_str()
        {
            self.outcome.versions.push(VersionSample {
                at: SystemTime::now(),
                max_microversion: version.to_string(),
            });
        }
    }

    async fn run(
        mut self,
        options: IronicLoadOptions,
        mut stop: watch::Receiver<Option<Duration>>,
    ) -> IronicLoadOutcome {
        self.enroll(options.nodes).await;
        let mut round = 1;
        while stop.borrow().is_none() {
            self.round(round).await;
            round += 1;
            tokio::select! {
                _ = tokio::time::sleep(options.pause) => {}
                _ = stop.changed() => {}
            }
        }
        let uuids: Vec<String> = self.outcome.expected_extra.keys().cloned().collect();
        for uuid in uuids {
            if let Some(node) = self
                .call(Method::GET, &format!("/nodes/{uuid}"), None, 200)
                .await
            {
                self.outcome.nodes.insert(uuid, node);
            }
        }
        self.outcome
    }
}
