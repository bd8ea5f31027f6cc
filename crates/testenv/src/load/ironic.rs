//! A client that keeps using an Ironic API while it upgrades: enrolls a few
//! `fake-hardware` nodes, then lists them, shows one and patches one's `extra`
//! in turn, through the API Service's ClusterIP, from a client network
//! namespace. Between rounds it reads the version document of the pod it
//! reached (its maximum microversion; kube-proxy picks any ready pod for each
//! connection), so the test sees what the API pods offered when. Beside the
//! rounds, power switchers (when asked for) each keep switching one node's
//! power and wait until its conductor reports the switch done: with the fake
//! power interface's delay, a switch is in a conductor's hands whenever one
//! stops. Any transport error or unexpected status is a failure;
//! nothing is retried to hide one. With a login it sends a token (enrolling
//! nodes needs a system-scoped admin's), without one it needs
//! `auth_strategy = noauth`.

use std::collections::BTreeMap;
use std::sync::Arc;
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
    /// Every power switch the client asked for, in order.
    pub power_switches: Vec<PowerSwitch>,
}

/// One power switch: asked for (202) at `started`, and what became of it.
#[derive(Clone, Debug)]
pub struct PowerSwitch {
    pub node: String,
    pub target: String,
    pub started: SystemTime,
    /// When the node showed the target power state with no switch pending
    /// and no error; `None`: it never did (see `failure`).
    pub done: Option<SystemTime>,
    pub failure: Option<String>,
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
            .chain(self.power_switches.iter().filter_map(|switch| {
                let failure = switch.failure.as_ref()?;
                Some(format!(
                    "power switch of node {} to {}: {failure}",
                    switch.node, switch.target
                ))
            }))
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
    /// Nodes enrolled for power switching, one switcher each (their
    /// conductors should take seconds per switch: `[fake] power_delay`).
    pub power_switched_nodes: usize,
    /// Whom to log in to Keystone as, when Ironic authenticates; none: no
    /// token is sent.
    pub login: Option<Credentials>,
}

impl Default for IronicLoadOptions {
    fn default() -> Self {
        IronicLoadOptions {
            nodes: 4,
            pause: Duration::from_millis(200),
            power_switched_nodes: 0,
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
            session: Arc::new(session),
            outcome: IronicLoadOutcome::default(),
        }
        .run(options, stop)
    })
    .await
}

struct Worker {
    session: Arc<Session>,
    outcome: IronicLoadOutcome,
}

/// How long a switch may take before it counts as lost: past the API's RPC
/// timeout and a conductor's whole stop.
const SWITCH_BOUND: Duration = Duration::from_secs(180);

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
        call(&self.session, method, path, body, expect).await
    }

    async fn enroll(&mut self, count: usize) {
        for n in 0..count {
            if let Some(uuid) = enroll(&self.session, &format!("load-{n}")).await {
                self.outcome.expected_extra.insert(uuid, 0);
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
        let mut switchers = Vec::new();
        for n in 0..options.power_switched_nodes {
            if let Some(uuid) = enroll(&self.session, &format!("power-{n}")).await {
                let session = self.session.clone();
                switchers.push(tokio::spawn(switch_power(session, uuid, stop.clone())));
            }
        }
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
        for switcher in switchers {
            // A panicked switcher's switches are not judged; its requests
            // are tallied already.
            if let Ok(switches) = switcher.await {
                self.outcome.power_switches.extend(switches);
            }
        }
        self.outcome
    }
}

/// One tallied request to `path` (under `/v1` unless it is `/`); the body,
/// if it answered `expect`.
async fn call(
    session: &Session,
    method: Method,
    path: &str,
    body: Option<Value>,
    expect: u16,
) -> Option<Value> {
    session
        .tallied(async {
            // The root lists the API's versions; everything else is under /v1.
            let prefix = if path == "/" { "" } else { "/v1" };
            let Request { builder, what } = session.request(method, prefix, path).await?;
            let mut request = builder.header("X-OpenStack-Ironic-API-Version", MICROVERSION);
            if let Some(body) = &body {
                request = request.json(body);
            }
            exchange(request, &what, expect).await
        })
        .await
}

/// Enrolls a `fake-hardware` node named `name`: its UUID.
async fn enroll(session: &Session, name: &str) -> Option<String> {
    let body = json!({ "name": name, "driver": "fake-hardware" });
    let node = call(session, Method::POST, "/nodes", Some(body), 201).await?;
    node["uuid"].as_str().map(str::to_owned)
}

/// Switches node `uuid` on and off until stopped, each switch waited on.
async fn switch_power(
    session: Arc<Session>,
    uuid: String,
    stop: watch::Receiver<Option<Duration>>,
) -> Vec<PowerSwitch> {
    let mut switches = Vec::new();
    for target in ["power on", "power off"].iter().cycle() {
        if stop.borrow().is_some() {
            break;
        }
        let path = format!("/nodes/{uuid}/states/power");
        let started = SystemTime::now();
        let body = json!({ "target": target });
        if call(&session, Method::PUT, &path, Some(body), 202)
            .await
            .is_none()
        {
            // Refused: tallied as a failed request; nothing to wait for.
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        let (done, failure) = match until_switched(&session, &uuid, target).await {
            Ok(done) => (Some(done), None),
            Err(failure) => (None, Some(failure)),
        };
        switches.push(PowerSwitch {
            node: uuid.clone(),
            target: target.to_string(),
            started,
            done,
            failure,
        });
    }
    switches
}

/// Reads node `uuid` until it shows `target` with no switch pending: when,
/// or what it showed instead (an error, or still pending at the bound).
async fn until_switched(
    session: &Session,
    uuid: &str,
    target: &str,
) -> std::result::Result<SystemTime, String> {
    let path = format!("/nodes/{uuid}?fields=power_state,target_power_state,last_error");
    let deadline = tokio::time::Instant::now() + SWITCH_BOUND;
    let mut last = Value::Null;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let Some(node) = call(session, Method::GET, &path, None, 200).await else {
            continue;
        };
        if node["target_power_state"].is_null() {
            return match (node["power_state"].as_str(), &node["last_error"]) {
                (Some(state), Value::Null) if state == target => Ok(SystemTime::now()),
                _ => Err(format!("ended as {node}")),
            };
        }
        last = node;
    }
    Err(format!("still pending after {SWITCH_BOUND:?}: {last}"))
}
