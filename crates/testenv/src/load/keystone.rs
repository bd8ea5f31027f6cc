//! A client that keeps using a Keystone API while it upgrades: it issues a
//! token as the bootstrap admin every few rounds (a password check is a
//! bcrypt hash, hundreds of milliseconds), and every round validates one issued
//! earlier (tokens issued by the old release must stay valid on the new one)
//! and lists projects, now and then creating one, through the API Service's
//! ClusterIP, from a client network namespace. Any transport error or
//! unexpected status is a failure; nothing is retried to hide one.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::{Made, Outcome, Request, RunningLoad, Session, exchange_with_headers, start_load};
use crate::error::Result;
use crate::shared::ClientNetns;

/// Every how many rounds a token is issued.
const ISSUE_EVERY: u64 = 4;
/// Every how many rounds a project is created.
const CREATE_EVERY: u64 = 5;

/// A token the client was issued, and when.
#[derive(Clone, Debug)]
pub struct IssuedToken {
    pub at: SystemTime,
    pub token: String,
}

/// What became of what the client made.
#[derive(Clone, Debug, Default)]
pub struct KeystoneLoadOutcome {
    /// Every token issued, in order.
    pub issued: Vec<IssuedToken>,
    /// Issued tokens that did not validate once the load stopped, with when
    /// each was issued and what the API said.
    pub invalid_after: Vec<String>,
    /// Ids of the projects the client created (acknowledged with 201).
    pub created_projects: BTreeSet<String>,
    /// Ids of every project listed once the load stopped.
    pub listed_projects: BTreeSet<String>,
}

/// The pause between rounds the demo and the tests use.
pub const DEFAULT_PAUSE: Duration = Duration::from_millis(200);

impl Outcome for KeystoneLoadOutcome {
    fn made(&self) -> Made {
        let missing = self
            .created_projects
            .difference(&self.listed_projects)
            .map(|p| format!("project {p}"));
        Made {
            summary: format!(
                "{} tokens issued, {} projects created",
                self.issued.len(),
                self.created_projects.len()
            ),
            lost: self.invalid_after.iter().cloned().chain(missing).collect(),
        }
    }
}

/// Options of the load.
#[derive(Clone, Debug)]
pub struct KeystoneLoadOptions {
    /// The password of the bootstrap admin (user and project `admin`).
    pub admin_password: String,
    /// Pause between rounds.
    pub pause: Duration,
}

/// The running client; stopping it ends the rounds, validates every token it
/// was issued once more and lists the projects.
pub type KeystoneLoad = RunningLoad<KeystoneLoadOutcome>;

/// Starts the client in `netns` against the Service `service` (port `api`).
pub async fn start(
    client: &kube::Client,
    netns: &ClientNetns,
    namespace: &str,
    service: &str,
    options: KeystoneLoadOptions,
) -> Result<KeystoneLoad> {
    start_load(client, netns, namespace, service, None, |session, stop| {
        Worker {
            session,
            outcome: KeystoneLoadOutcome::default(),
        }
        .run(options, stop)
    })
    .await
}

struct Worker {
    session: Session,
    outcome: KeystoneLoadOutcome,
}

impl Worker {
    /// One tallied request to `/v3<path>` with `headers`: the response's
    /// headers and body, if it answered `expect`.
    async fn call(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
        expect: u16,
    ) -> Option<(reqwest::header::HeaderMap, Value)> {
        self.session
            .tallied(async {
                let Request { mut builder, what } =
                    self.session.request(method, "/v3", path).await?;
                for (name, value) in headers {
                    builder = builder.header(*name, *value);
                }
                if let Some(body) = &body {
                    builder = builder.json(body);
                }
                exchange_with_headers(builder, &what, expect).await
            })
            .await
    }

    /// A project-scoped token for the admin, recorded as issued.
    async fn issue(&mut self, password: &str) -> Option<String> {
        let body = json!({ "auth": {
            "identity": { "methods": ["password"], "password": { "user": {
                "name": "admin", "domain": { "id": "default" }, "password": password } } },
            "scope": { "project": { "name": "admin", "domain": { "id": "default" } } },
        } });
        let (headers, _) = self
            .call(Method::POST, "/auth/tokens", &[], Some(body), 201)
            .await?;
        let token = headers.get("X-Subject-Token")?.to_str().ok()?.to_string();
        self.outcome.issued.push(IssuedToken {
            at: SystemTime::now(),
            token: token.clone(),
        });
        Some(token)
    }

    /// Validates `subject` with `auth`; what the API said when it did not.
    async fn validate(&self, auth: &str, subject: &str) -> std::result::Result<(), String> {
        let headers = [("X-Auth-Token", auth), ("X-Subject-Token", subject)];
        match self
            .call(Method::GET, "/auth/tokens", &headers, None, 200)
            .await
        {
            Some(_) => Ok(()),
            None => Err(self.session.last_failure()),
        }
    }

    async fn round(&mut self, round: u64, password: &str) {
        if round % ISSUE_EVERY == 1 || self.outcome.issued.is_empty() {
            self.issue(password).await;
        }
        let Some(token) = self.outcome.issued.last().map(|t| t.token.clone()) else {
            return;
        };
        let earlier = self.outcome.issued[round as usize % self.outcome.issued.len()]
            .token
            .clone();
        let _ = self.validate(&token, &earlier).await;
        let auth = [("X-Auth-Token", token.as_str())];
        if round.is_multiple_of(CREATE_EVERY) {
            let body =
                json!({ "project": { "name": format!("load-{round}"), "domain_id": "default" } });
            if let Some((_, created)) = self
                .call(Method::POST, "/projects", &auth, Some(body), 201)
                .await
                && let Some(id) = created["project"]["id"].as_str()
            {
                self.outcome.created_projects.insert(id.to_string());
            }
        }
        self.call(Method::GET, "/projects", &auth, None, 200).await;
    }

    async fn run(
        mut self,
        options: KeystoneLoadOptions,
        mut stop: watch::Receiver<Option<Duration>>,
    ) -> KeystoneLoadOutcome {
        let mut round = 1;
        while stop.borrow().is_none() {
            self.round(round, &options.admin_password).await;
            round += 1;
            tokio::select! {
                _ = tokio::time::sleep(options.pause) => {}
                _ = stop.changed() => {}
            }
        }
        let Some(token) = self.issue(&options.admin_password).await else {
            return self.outcome;
        };
        for issued in self.outcome.issued.clone() {
            if let Err(said) = self.validate(&token, &issued.token).await {
                self.outcome
                    .invalid_after
                    .push(format!("issued at {:?}: {said}", issued.at));
            }
        }
        let auth = [("X-Auth-Token", token.as_str())];
        if let Some((_, listed)) = self.call(Method::GET, "/projects", &auth, None, 200).await {
            self.outcome.listed_projects = listed["projects"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["id"].as_str().map(str::to_string))
                .collect();
        }
        self.outcome
    }
}
