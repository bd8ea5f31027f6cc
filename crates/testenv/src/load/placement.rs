//! A client that keeps using a Placement API while it upgrades, as Nova's
//! scheduler and computes do: it creates a few resource providers with
//! inventories, then every round lists the providers, claims resources for a
//! new consumer (an allocation), reads an earlier allocation back and, every
//! fourth round, deletes one. Through the API Service's ClusterIP, from a
//! client network namespace. Once stopped it reads every allocation back.
//! Any transport error or unexpected status is a failure; nothing is retried
//! to hide one. Given credentials it logs in to Keystone (placement's
//! policies ask a project-scoped `admin` or `service` role); otherwise
//! Placement must run `noauth2`, where the token names `admin:admin`.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::auth::Credentials;
use super::{Made, Outcome, Request, RunningLoad, Session, exchange, run_id, start_load};
use crate::error::Result;
use crate::shared::ClientNetns;

/// A microversion both releases of the pair serve (15.0.0 and 16.0.0 top
/// out at 1.39); from 1.38 an allocation names its consumer's type.
const MICROVERSION: &str = "placement 1.39";
/// `noauth2`'s token: user `admin` in project `admin`, which it gives the
/// `admin` role.
const NOAUTH_TOKEN: &str = "admin:admin";
/// What each consumer claims of one provider.
const CLAIM: &[(&str, u64)] = &[("VCPU", 1), ("MEMORY_MB", 128)];
/// What each provider offers: room for every claim a long run makes.
const INVENTORY: &[(&str, u64)] = &[("VCPU", 100_000), ("MEMORY_MB", 100_000 * 128)];

/// What became of what the client made.
#[derive(Clone, Debug, Default)]
pub struct PlacementLoadOutcome {
    /// Provider UUIDs the client created, with their inventory set.
    pub providers: Vec<String>,
    /// Consumer UUID → the provider its allocation was acknowledged on.
    pub allocated: BTreeMap<String, String>,
    /// Consumers whose allocation was acknowledged deleted.
    pub deleted: Vec<String>,
    /// What reading everything back after the load found wrong.
    pub lost_after: Vec<String>,
}

impl Outcome for PlacementLoadOutcome {
    fn made(&self) -> Made {
        Made {
            summary: format!(
                "{} providers, {} allocations kept, {} deleted",
                self.providers.len(),
                self.allocated.len(),
                self.deleted.len()
            ),
            lost: self.lost_after.clone(),
        }
    }
}

/// Options of the load.
#[derive(Clone, Debug)]
pub struct PlacementLoadOptions {
    pub providers: usize,
    /// Pause between rounds.
    pub pause: Duration,
    /// Whom to log in to Keystone as, when Placement authenticates; none:
    /// `noauth2`.
    pub login: Option<Credentials>,
}

impl Default for PlacementLoadOptions {
    fn default() -> Self {
        PlacementLoadOptions {
            providers: 3,
            pause: Duration::from_millis(200),
            login: None,
        }
    }
}

/// The running client; stopping it ends the rounds and reads everything back.
pub type PlacementLoad = RunningLoad<PlacementLoadOutcome>;

/// Starts the client in `netns` against the Service `service` (port `api`).
pub async fn start(
    client: &kube::Client,
    netns: &ClientNetns,
    namespace: &str,
    service: &str,
    options: PlacementLoadOptions,
) -> Result<PlacementLoad> {
    let login = options.login.clone();
    start_load(client, netns, namespace, service, login, |session, stop| {
        Worker {
            session,
            run: run_id(),
            outcome: PlacementLoadOutcome::default(),
        }
        .run(options, stop)
    })
    .await
}

/// The `n`th UUID of `kind` (1: provider, 2: consumer) in run `run`.
fn uuid(run: u32, kind: u16, n: u64) -> String {
    format!("{run:08x}-{kind:04x}-4000-8000-{n:012x}")
}

fn resources(amounts: &[(&str, u64)]) -> Value {
    amounts
        .iter()
        .map(|(class, amount)| (class.to_string(), json!(amount)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

struct Worker {
    session: Session,
    run: u32,
    outcome: PlacementLoadOutcome,
}

impl Worker {
    /// One tallied request: the body, if it answered `expect`.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        expect: u16,
    ) -> Option<Value> {
        self.session
            .tallied(async {
                let Request { builder, what } = self.session.request(method, "", path).await?;
                let mut request = builder.header("OpenStack-API-Version", MICROVERSION);
                if self.session.login.is_none() {
                    request = request.header("X-Auth-Token", NOAUTH_TOKEN);
                }
                if let Some(body) = &body {
                    request = request.json(body);
                }
                exchange(request, &what, expect).await
            })
            .await
    }

    async fn create_providers(&mut self, count: usize) {
        for n in 0..count {
            let provider = uuid(self.run, 1, n as u64);
            let body = json!({ "name": format!("load-{provider}"), "uuid": provider });
            if self
                .call(Method::POST, "/resource_providers", Some(body), 200)
                .await
                .is_none()
            {
                continue;
            }
            let inventories: serde_json::Map<String, Value> = INVENTORY
                .iter()
                .map(|(class, total)| (class.to_string(), json!({ "total": total })))
                .collect();
            let body = json!({ "resource_provider_generation": 0, "inventories": inventories });
            let path = format!("/resource_providers/{provider}/inventories");
            if self
                .call(Method::PUT, &path, Some(body), 200)
                .await
                .is_some()
            {
                self.outcome.providers.push(provider);
            }
        }
    }

    async fn round(&mut self, round: u64) {
        self.call(Method::GET, "/resource_providers", None, 200)
            .await;
        if self.outcome.providers.is_empty() {
            return;
        }
        let provider =
            self.outcome.providers[round as usize % self.outcome.providers.len()].clone();
        let consumer = uuid(self.run, 2, round);
        let body = json!({
            "allocations": { &provider: { "resources": resources(CLAIM) } },
            "consumer_generation": null,
            "project_id": "ratchet-load",
            "user_id": "ratchet-load",
            "consumer_type": "INSTANCE",
        });
        if self
            .call(
                Method::PUT,
                &format!("/allocations/{consumer}"),
                Some(body),
                204,
            )
            .await
            .is_some()
        {
            self.outcome.allocated.insert(consumer, provider);
        }
        // An earlier claim, read back as a scheduler would (a failure is tallied).
        let kept = self.outcome.allocated.len().max(1);
        let earlier = self.outcome.allocated.keys().nth(round as usize * 7 % kept);
        if let Some(earlier) = earlier.cloned() {
            let _ = self.check_allocation(&earlier).await;
        }
        let oldest = self.outcome.allocated.keys().next().cloned();
        if round.is_multiple_of(4)
            && let Some(oldest) = oldest
            && self
                .call(Method::DELETE, &format!("/allocations/{oldest}"), None, 204)
                .await
                .is_some()
        {
            self.outcome.allocated.remove(&oldest);
            self.outcome.deleted.push(oldest);
        }
    }

    /// Reads `consumer`'s allocation back: why it is not the claim made, if
    /// it is not (a claim read back wrong also fails its request).
    async fn check_allocation(&self, consumer: &str) -> Result<(), String> {
        let Some(expected) = self.outcome.allocated.get(consumer) else {
            return Err(format!("allocation of {consumer} was never acknowledged"));
        };
        let Some(found) = self
            .call(Method::GET, &format!("/allocations/{consumer}"), None, 200)
            .await
        else {
            return Err(format!("allocation of {consumer} not read back"));
        };
        let held = &found["allocations"][expected]["resources"];
        let intact = CLAIM
            .iter()
            .all(|(class, amount)| held[*class].as_u64() == Some(*amount));
        if intact {
            return Ok(());
        }
        let failure = format!("allocation of {consumer} on {expected}: {found}");
        self.session.fail_last(failure.clone());
        Err(failure)
    }

    async fn run(
        mut self,
        options: PlacementLoadOptions,
        mut stop: watch::Receiver<Option<Duration>>,
    ) -> PlacementLoadOutcome {
        self.create_providers(options.providers).await;
        let mut round = 1;
        while stop.borrow().is_none() {
            self.round(round).await;
            round += 1;
            tokio::select! {
                _ = tokio::time::sleep(options.pause) => {}
                _ = stop.changed() => {}
            }
        }
        let mut lost = Vec::new();
        let kept: Vec<String> = self.outcome.allocated.keys().cloned().collect();
        for consumer in kept {
            if let Err(why) = self.check_allocation(&consumer).await {
                lost.push(why);
            }
        }
        for consumer in self.outcome.deleted.clone() {
            let found = self
                .call(Method::GET, &format!("/allocations/{consumer}"), None, 200)
                .await;
            if found.is_some_and(|f| f["allocations"].as_object().is_some_and(|a| !a.is_empty())) {
                lost.push(format!(
                    "allocation of {consumer} still held after its delete"
                ));
            }
        }
        self.outcome.lost_after = lost;
        self.outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_well_formed_and_tell_kinds_and_runs_apart() {
        let provider = uuid(0xdead_beef, 1, 3);
        assert_eq!(provider, "deadbeef-0001-4000-8000-000000000003");
        assert_ne!(uuid(1, 1, 3), uuid(1, 2, 3));
        assert_ne!(uuid(1, 2, 3), uuid(2, 2, 3));
        assert_eq!(resources(CLAIM), json!({ "VCPU": 1, "MEMORY_MB": 128 }));
    }
}
