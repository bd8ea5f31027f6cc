//! A client that keeps using a Nova API while it upgrades, as a cloud's users
//! do: every round it lists its servers, boots a new one (while fewer than
//! `MAX_IN_BUILD` of its servers are still building), reads an earlier
//! one back and, every fourth round (every round once it keeps `MAX_KEPT`),
//! deletes the oldest one that became `ACTIVE`; every eighth round it also
//! lists the flavors. Through the API Service's ClusterIP, from a client
//! network namespace. Any transport error or unexpected status is a failure;
//! nothing is retried to hide one.
//!
//! Nova answers a boot or a delete at once (202, 204) and does the work in
//! its conductor, scheduler and computes, so a server's fate shows only
//! later: the client keeps the last status it saw of each server. Once
//! stopped it lists its servers until every kept one is `ACTIVE` and every
//! deleted one is gone (or the settle time is up); what is not is lost, with
//! the fault Nova recorded.
//!
//! Servers boot with `"networks": "none"` (microversion 2.37 and later), so
//! creating one asks nothing of Neutron; deleting one does (the compute lists
//! the server's ports), and a delete Neutron does not answer leaves the
//! server in `ERROR`. Nova has no test mode without Keystone any more (it
//! dropped `[api] auth_strategy = noauth2` in 32.0.0): the client logs in (a
//! project `member` may do all of this in its project), and an admin, if
//! given, lifts that project's quotas first.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::auth::Credentials;
use super::{Made, Outcome, Request, RunningLoad, Session, exchange, run_id, start_load};
use crate::error::{Result, TestEnvError};
use crate::shared::ClientNetns;

/// Where Nova's API lives (`/` serves only the versions document).
const PREFIX: &str = "/v2.1";
/// A microversion both releases of the pair serve (33.0.2 tops out at 2.103,
/// 34.0.0 at 2.104), past 2.37, which lets a server boot without networks.
const MICROVERSION: &str = "compute 2.100";
/// Servers the client keeps at most; past that it deletes every round, not
/// every fourth. Nova's default quota is 10 instances a project (a boot it
/// refuses would read as downtime): without an admin to lift it, 8 leaves
/// room for the server being booted and one being deleted.
const MAX_KEPT: usize = 8;
/// Servers the client waits on at most before it boots another, as a user
/// waits for their boots to land: unbounded, boots queue up in the
/// scheduler faster than two cores place them, and the client would judge
/// a queue, not the upgrade.
const MAX_IN_BUILD: usize = 3;
/// How often the client lists its servers once stopped.
const POLL: Duration = Duration::from_secs(1);
/// The status of a server that booted.
const ACTIVE: &str = "ACTIVE";
/// The status of a server on its way to a host.
const BUILD: &str = "BUILD";
/// The status of a server whose boot or delete failed: final.
const ERROR: &str = "ERROR";
/// What the client records of a kept server its listing did not show.
const NOT_LISTED: &str = "not listed";

/// A server's state as Nova last showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// `BUILD`, `ACTIVE`, `ERROR`, … (or [`NOT_LISTED`]).
    pub status: String,
    /// What Nova is doing with it (`OS-EXT-STS:task_state`), if anything.
    pub task: Option<String>,
    /// `fault.message`, which Nova shows with a server in `ERROR`.
    pub fault: Option<String>,
}

impl Seen {
    fn status(status: &str) -> Seen {
        Seen {
            status: status.into(),
            task: None,
            fault: None,
        }
    }
}

impl fmt::Display for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.status)?;
        if let Some(task) = &self.task {
            write!(f, " ({task})")?;
        }
        if let Some(fault) = &self.fault {
            write!(f, ": {fault}")?;
        }
        Ok(())
    }
}

/// A server the client keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptServer {
    /// The round that booted it: the smallest is the oldest.
    pub round: u64,
    /// What the client saw of it last (`BUILD` until it looked).
    pub seen: Seen,
}

/// What became of the servers the client booted (only acknowledged ones).
#[derive(Clone, Debug, Default)]
pub struct NovaLoadOutcome {
    /// The run its servers are named after.
    pub run: u32,
    /// Server id → what the client saw of it last.
    pub kept: BTreeMap<String, KeptServer>,
    /// Servers whose delete was acknowledged.
    pub deleted: BTreeSet<String>,
    /// Servers whose delete got no acknowledgement: it may or may not have
    /// happened, so they are not judged.
    pub unsure: BTreeSet<String>,
    /// What listing the servers after the load found wrong.
    pub lost_after: Vec<String>,
}

impl Outcome for NovaLoadOutcome {
    fn made(&self) -> Made {
        let active = (self.kept.values())
            .filter(|k| k.seen.status == ACTIVE)
            .count();
        let mut summary = format!(
            "{} servers kept ({active} ACTIVE), {} deleted",
            self.kept.len(),
            self.deleted.len()
        );
        if !self.unsure.is_empty() {
            summary.push_str(&format!(", {} deletes unacknowledged", self.unsure.len()));
        }
        Made {
            summary,
            lost: self.lost_after.clone(),
        }
    }
}

/// Options of the load.
#[derive(Clone, Debug)]
pub struct NovaLoadOptions {
    /// Pause between rounds.
    pub pause: Duration,
    /// Whom to log in to Keystone as (required: Nova has no noauth mode).
    pub login: Option<Credentials>,
    /// The admin who lifts the quotas of the login's project (none: the
    /// client stays within the default ones, see [`MAX_KEPT`]).
    pub admin: Option<Credentials>,
    /// The Glance image servers boot from (active, and no bigger than the
    /// flavor's disk).
    pub image: String,
    /// The flavor servers boot with.
    pub flavor: String,
    /// Whether the client boots and deletes servers (false: it only lists,
    /// reads back and lists flavors, which no Nova process but the API and
    /// the database serve).
    pub lifecycle: bool,
    /// An earlier client's outcome to go on from: its run's servers are
    /// this client's to list and read back (none: a run of its own).
    pub resume: Option<NovaLoadOutcome>,
}

impl Default for NovaLoadOptions {
    fn default() -> Self {
        NovaLoadOptions {
            pause: Duration::from_millis(500),
            login: None,
            admin: None,
            image: String::new(),
            flavor: String::new(),
            lifecycle: true,
            resume: None,
        }
    }
}

/// The running client; stopping it waits for its servers to settle.
pub type NovaLoad = RunningLoad<NovaLoadOutcome>;

/// Starts the client in `netns` against the Service `service` (port `api`).
/// Refused without a login, an image or a flavor: every request or every
/// boot would fail, which would read as downtime.
pub async fn start(
    client: &kube::Client,
    netns: &ClientNetns,
    namespace: &str,
    service: &str,
    options: NovaLoadOptions,
) -> Result<NovaLoad> {
    if let Some(missing) = unusable(&options) {
        return Err(TestEnvError::Service {
            service: format!("{namespace}/{service}"),
            detail: format!("Nova's load client needs {missing}"),
        });
    }
    let login = options.login.clone();
    start_load(client, netns, namespace, service, login, |session, stop| {
        let mut outcome = options.resume.clone().unwrap_or_else(|| NovaLoadOutcome {
            run: run_id(),
            ..NovaLoadOutcome::default()
        });
        outcome.lost_after.clear();
        Worker {
            session,
            image: options.image.clone(),
            flavor: options.flavor.clone(),
            outcome,
            still_listed: BTreeMap::new(),
        }
        .run(options, stop)
    })
    .await
}

/// What `options` lack for a client that can work, if anything.
fn unusable(options: &NovaLoadOptions) -> Option<&'static str> {
    if options.login.is_none() {
        Some("a login: Nova authenticates every request through Keystone")
    } else if options.image.is_empty() {
        Some("the image its servers boot from")
    } else if options.flavor.is_empty() {
        Some("the flavor its servers boot with")
    } else {
        None
    }
}

/// The name of round `round`'s server in run `run`.
fn server_name(run: u32, round: u64) -> String {
    format!("load-{run:08x}-{round}")
}

/// The listing of run `run`'s servers with their statuses. Nova matches
/// `name` anywhere in a server's name (a regular expression, or SQL `LIKE
/// %…%` on a database without one), so the prefix without an anchor.
fn listing_path(run: u32) -> String {
    format!("/servers/detail?name=load-{run:08x}-")
}

/// What a server's body says of it: none without a status.
fn seen_of(server: &Value) -> Option<Seen> {
    let text = |value: &Value| value.as_str().map(str::to_string);
    Some(Seen {
        status: text(&server["status"])?,
        task: text(&server["OS-EXT-STS:task_state"]),
        fault: text(&server["fault"]["message"]),
    })
}

/// Id → state of every server in a listing; none if it is not one.
fn listed_servers(listing: &Value) -> Option<BTreeMap<String, Seen>> {
    let servers = listing["servers"].as_array()?;
    let seen = servers
        .iter()
        .filter_map(|s| Some((s["id"].as_str()?.to_string(), seen_of(s)?)));
    Some(seen.collect())
}

/// Records `listed` as the last state of every kept server (one it does not
/// show: [`NOT_LISTED`]): the deleted servers it still shows.
fn observe(
    kept: &mut BTreeMap<String, KeptServer>,
    deleted: &BTreeSet<String>,
    mut listed: BTreeMap<String, Seen>,
) -> BTreeMap<String, Seen> {
    for (id, server) in kept.iter_mut() {
        server.seen = listed
            .remove(id)
            .unwrap_or_else(|| Seen::status(NOT_LISTED));
    }
    listed.retain(|id, _| deleted.contains(id));
    listed
}

/// The kept servers the client last saw on their way to a host.
fn in_build(kept: &BTreeMap<String, KeptServer>) -> usize {
    kept.values()
        .filter(|s| s.seen.status == BUILD || s.seen.status == NOT_LISTED)
        .count()
}

/// Whether a server may still change without the client doing anything: a
/// kept one booting (or not listed, as a boot between cells may briefly
/// be), a deleted one listed in other than `ERROR`.
fn in_transit(kept: &BTreeMap<String, KeptServer>, still_listed: &BTreeMap<String, Seen>) -> bool {
    in_build(kept) > 0 || still_listed.values().any(|s| s.status != ERROR)
}

/// The kept servers not `ACTIVE` and the deleted ones still there.
fn lost(kept: &BTreeMap<String, KeptServer>, still_listed: &BTreeMap<String, Seen>) -> Vec<String> {
    let not_active = (kept.iter())
        .filter(|(_, s)| s.seen.status != ACTIVE)
        .map(|(id, s)| format!("server {id} {}", s.seen));
    let still_there = (still_listed.iter())
        .map(|(id, seen)| format!("server {id} still there after its delete: {seen}"));
    not_active.chain(still_there).collect()
}

/// The server to delete: the oldest one last seen `ACTIVE`, so the delete
/// does not race the server's own boot.
fn oldest_active(kept: &BTreeMap<String, KeptServer>) -> Option<String> {
    (kept.iter())
        .filter(|(_, s)| s.seen.status == ACTIVE)
        .min_by_key(|(_, s)| s.round)
        .map(|(id, _)| id.clone())
}

struct Worker {
    session: Session,
    image: String,
    flavor: String,
    outcome: NovaLoadOutcome,
    /// The deleted servers the last listing still showed.
    still_listed: BTreeMap<String, Seen>,
}

impl Worker {
    /// One tallied request to `/v2.1<path>` at [`MICROVERSION`]: the body,
    /// if it answered `expect`.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        expect: u16,
    ) -> Option<Value> {
        self.session
            .tallied(async {
                let Request { builder, what } = self.session.request(method, PREFIX, path).await?;
                let mut request = builder.header("OpenStack-API-Version", MICROVERSION);
                if let Some(body) = &body {
                    request = request.json(body);
                }
                exchange(request, &what, expect).await
            })
            .await
    }

    async fn round(&mut self, round: u64, lifecycle: bool) {
        self.list().await;
        if lifecycle && in_build(&self.outcome.kept) < MAX_IN_BUILD {
            self.boot(round).await;
        }
        self.check_earlier(round).await;
        if lifecycle && (round.is_multiple_of(4) || self.outcome.kept.len() > MAX_KEPT) {
            self.delete_oldest_active().await;
        }
        if round.is_multiple_of(8) {
            self.call(Method::GET, "/flavors", None, 200).await;
        }
    }

    /// Lists this run's servers (one request answers for all of them) and
    /// records what it shows: whether Nova answered.
    async fn list(&mut self) -> bool {
        let path = listing_path(self.outcome.run);
        let Some(listing) = self.call(Method::GET, &path, None, 200).await else {
            return false;
        };
        let Some(listed) = listed_servers(&listing) else {
            let failure = format!("GET {path}: no servers in {listing}");
            self.session.fail_last(failure);
            return false;
        };
        let outcome = &mut self.outcome;
        self.still_listed = observe(&mut outcome.kept, &outcome.deleted, listed);
        true
    }

    /// Boots round `round`'s server (202): Nova has only accepted it then.
    async fn boot(&mut self, round: u64) {
        let body = json!({ "server": {
            "name": server_name(self.outcome.run, round),
            "imageRef": self.image,
            "flavorRef": self.flavor,
            "networks": "none",
        } });
        let Some(created) = self.call(Method::POST, "/servers", Some(body), 202).await else {
            return;
        };
        let Some(id) = created["server"]["id"].as_str() else {
            let failure = format!("POST /servers: no server.id in {created}");
            self.session.fail_last(failure);
            return;
        };
        let seen = Seen::status(BUILD);
        (self.outcome.kept).insert(id.to_string(), KeptServer { round, seen });
    }

    /// Reads back a server booted earlier, as a user would, and records its
    /// status (a failure is tallied; a kept server gone answers 404).
    async fn check_earlier(&mut self, round: u64) {
        let kept = self.outcome.kept.len().max(1);
        let Some(id) = (self.outcome.kept.keys())
            .nth(round as usize * 7 % kept)
            .cloned()
        else {
            return;
        };
        let path = format!("/servers/{id}");
        let Some(found) = self.call(Method::GET, &path, None, 200).await else {
            return;
        };
        let Some(seen) = seen_of(&found["server"]) else {
            self.session
                .fail_last(format!("GET {path}: no server.status in {found}"));
            return;
        };
        if let Some(server) = self.outcome.kept.get_mut(&id) {
            server.seen = seen;
        }
    }

    /// Deletes the oldest `ACTIVE` server (204). Either way the client keeps
    /// it no more.
    async fn delete_oldest_active(&mut self) {
        let Some(id) = oldest_active(&self.outcome.kept) else {
            return;
        };
        let path = format!("/servers/{id}");
        let done = (self.call(Method::DELETE, &path, None, 204).await).is_some();
        self.outcome.kept.remove(&id);
        let into = match done {
            true => &mut self.outcome.deleted,
            false => &mut self.outcome.unsure,
        };
        into.insert(id);
    }

    /// Lifts the login's project's quotas of servers (instances, cores, RAM:
    /// 10, 20, 50 GiB by default), as an operator of a busy cloud would, so
    /// the load measures the upgrade, not the quota; as the admin, on the
    /// project of the user's token.
    async fn lift_quotas(&self, admin: Option<&Credentials>) {
        let (Some(login), Some(admin)) = (&self.session.login, admin) else {
            return;
        };
        let http = &self.session.http;
        let body = json!({ "quota_set": { "instances": -1, "cores": -1, "ram": -1 } });
        let lifted = async {
            let project = (login.credentials.issue(http).await?.project_id)
                .ok_or_else(|| "Nova's client logs in to a project".to_string())?;
            let token = admin.issue(http).await?.value;
            let path = format!("/os-quota-sets/{project}");
            let Request { builder, what } =
                self.session.unauthenticated(Method::PUT, PREFIX, &path);
            let request = builder
                .header("X-Auth-Token", token)
                .header("OpenStack-API-Version", MICROVERSION)
                .json(&body);
            exchange(request, &what, 200).await
        };
        self.session.tallied(lifted).await;
    }

    /// Lists the servers until none is in transit or `settle` is up: whether
    /// a listing answered meanwhile (else the states are the rounds' ones).
    async fn settle(&mut self, settle: Duration) -> bool {
        let deadline = Instant::now() + settle;
        let mut read = false;
        loop {
            let answered = self.list().await;
            read |= answered;
            let settled = answered && !in_transit(&self.outcome.kept, &self.still_listed);
            if settled || Instant::now() >= deadline {
                return read;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn run(
        mut self,
        options: NovaLoadOptions,
        mut stop: watch::Receiver<Option<Duration>>,
    ) -> NovaLoadOutcome {
        self.lift_quotas(options.admin.as_ref()).await;
        let mut round = 1;
        let settle = loop {
            if let Some(settle) = *stop.borrow() {
                break settle;
            }
            self.round(round, options.lifecycle).await;
            round += 1;
            tokio::select! {
                _ = tokio::time::sleep(options.pause) => {}
                _ = stop.changed() => {}
            }
        };
        self.outcome.lost_after = match self.settle(settle).await {
            true => lost(&self.outcome.kept, &self.still_listed),
            false => vec![format!(
                "servers not listed after the load: {}",
                self.session.last_failure()
            )],
        };
        self.outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(round: u64, status: &str) -> KeptServer {
        KeptServer {
            round,
            seen: Seen::status(status),
        }
    }

    #[test]
    fn every_round_has_its_own_name_and_the_listing_finds_the_run() {
        assert_eq!(server_name(0xdead_beef, 3), "load-deadbeef-3");
        assert_ne!(server_name(1, 3), server_name(2, 3));
        assert_eq!(
            listing_path(0xdead_beef),
            "/servers/detail?name=load-deadbeef-"
        );
        assert!(server_name(0xdead_beef, 3).contains("load-deadbeef-"));
    }

    #[test]
    fn a_server_reads_with_its_task_and_fault() {
        let body = json!({ "status": "ERROR", "OS-EXT-STS:task_state": null,
            "fault": { "code": 500, "message": "No valid host was found." } });
        let seen = seen_of(&body);
        assert_eq!(
            seen.as_ref().map(ToString::to_string).as_deref(),
            Some("ERROR: No valid host was found.")
        );
        let deleting = json!({ "status": "ACTIVE", "OS-EXT-STS:task_state": "deleting" });
        assert_eq!(
            seen_of(&deleting).map(|s| s.to_string()).as_deref(),
            Some("ACTIVE (deleting)")
        );
        assert_eq!(seen_of(&json!({ "id": "x" })), None);
        let listing = json!({ "servers": [{ "id": "a", "status": "BUILD" }, { "id": "b" }] });
        let listed = listed_servers(&listing).unwrap_or_default();
        assert_eq!(listed.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(listed_servers(&json!({})), None);
    }

    #[test]
    fn a_listing_updates_kept_servers_and_finds_deleted_ones() {
        let mut servers =
            BTreeMap::from([("a".into(), kept(1, BUILD)), ("b".into(), kept(2, BUILD))]);
        let deleted = BTreeSet::from(["d".to_string()]);
        let listed = BTreeMap::from([
            ("a".to_string(), Seen::status(ACTIVE)),
            ("d".to_string(), Seen::status(ERROR)),
            ("other".to_string(), Seen::status(ACTIVE)),
        ]);
        let still = observe(&mut servers, &deleted, listed);
        assert_eq!(servers["a"].seen.status, ACTIVE);
        assert_eq!(servers["b"].seen.status, NOT_LISTED);
        assert_eq!(still.keys().collect::<Vec<_>>(), ["d"]);
        assert!(in_transit(&servers, &still), "b is not listed yet");
        servers.remove("b");
        assert!(!in_transit(&servers, &still), "a failed delete is final");
        assert_eq!(
            lost(&servers, &still),
            ["server d still there after its delete: ERROR"]
        );
    }

    #[test]
    fn servers_on_their_way_count_as_building() {
        let servers = BTreeMap::from([
            ("a".to_string(), kept(1, ACTIVE)),
            ("b".to_string(), kept(2, BUILD)),
            ("c".to_string(), kept(3, NOT_LISTED)),
            ("d".to_string(), kept(4, ERROR)),
        ]);
        assert_eq!(in_build(&servers), 2);
    }

    #[test]
    fn the_oldest_active_server_is_deleted() {
        let servers = BTreeMap::from([
            ("a".into(), kept(3, ACTIVE)),
            ("b".into(), kept(1, BUILD)),
            ("c".into(), kept(2, ACTIVE)),
        ]);
        assert_eq!(oldest_active(&servers).as_deref(), Some("c"));
        assert_eq!(lost(&servers, &BTreeMap::new()), ["server b BUILD"]);
        assert_eq!(
            oldest_active(&BTreeMap::from([("b".into(), kept(1, BUILD))])),
            None
        );
    }

    #[test]
    fn the_summary_counts_active_servers_and_unacknowledged_deletes() {
        let mut outcome = NovaLoadOutcome {
            kept: BTreeMap::from([("a".into(), kept(1, ACTIVE)), ("b".into(), kept(2, ERROR))]),
            deleted: BTreeSet::from(["c".into()]),
            ..Default::default()
        };
        assert_eq!(
            outcome.made().summary,
            "2 servers kept (1 ACTIVE), 1 deleted"
        );
        outcome.unsure.insert("d".into());
        assert_eq!(
            outcome.made().summary,
            "2 servers kept (1 ACTIVE), 1 deleted, 1 deletes unacknowledged"
        );
    }

    #[test]
    fn a_client_without_login_image_or_flavor_is_refused() {
        let login = Credentials {
            keystone: ([10, 0, 0, 1], 5000).into(),
            user: "demo".into(),
            password: "p".into(),
            scope: super::super::auth::Scope::Project("demo".into()),
        };
        let complete = NovaLoadOptions {
            login: Some(login),
            image: "i".into(),
            flavor: "f".into(),
            ..Default::default()
        };
        assert_eq!(unusable(&complete), None);
        let no_login = NovaLoadOptions {
            login: None,
            ..complete.clone()
        };
        assert!(unusable(&no_login).is_some_and(|m| m.contains("login")));
        let no_image = NovaLoadOptions {
            image: String::new(),
            ..complete.clone()
        };
        assert!(unusable(&no_image).is_some_and(|m| m.contains("image")));
        let no_flavor = NovaLoadOptions {
            flavor: String::new(),
            ..complete
        };
        assert!(unusable(&no_flavor).is_some_and(|m| m.contains("flavor")));
    }
}

/// What servers boot from: an image in Glance and a flavor in Nova.
#[derive(Clone, Debug)]
pub struct BootSource {
    pub image: String,
    pub flavor: String,
}

/// The image's bytes: the fake driver never reads them, Glance only needs
/// the image active.
const IMAGE_BYTES: &[u8] = b"ratchet fake-driver boot image";

/// Makes, as `admin`, a public raw image in the Glance at `glance` (its
/// ClusterIP) with `hw_machine_type` set (without it `nova-status` warns of
/// every fake-driver server) and uploaded, and a flavor of one vCPU, 64 MiB
/// and 1 GiB of disk in the Nova at `nova`, from `netns`.
pub async fn boot_source(
    netns: &ClientNetns,
    glance: std::net::SocketAddr,
    nova: std::net::SocketAddr,
    admin: &Credentials,
) -> Result<BootSource> {
    let admin = admin.clone();
    netns
        .run(async move {
            let http = super::http_client()?;
            let token = admin.issue(&http).await.map_err(boot_failure)?.value;
            let image = super::exchange(
                http.post(format!("http://{glance}/v2/images"))
                    .header("X-Auth-Token", &token)
                    .json(&json!({
                        "name": format!("load-{:08x}", run_id()),
                        "disk_format": "raw",
                        "container_format": "bare",
                        "visibility": "public",
                        "hw_machine_type": "pc",
                    })),
                "POST /v2/images",
                201,
            )
            .await
            .map_err(boot_failure)?;
            let image = image["id"].as_str().unwrap_or_default().to_string();
            super::exchange_with_headers(
                http.put(format!("http://{glance}/v2/images/{image}/file"))
                    .header("X-Auth-Token", &token)
                    .header("Content-Type", "application/octet-stream")
                    .body(IMAGE_BYTES),
                "PUT /v2/images/<id>/file",
                204,
            )
            .await
            .map_err(boot_failure)?;
            let flavor = super::exchange(
                http.post(format!("http://{nova}{PREFIX}/flavors"))
                    .header("X-Auth-Token", &token)
                    .header("OpenStack-API-Version", MICROVERSION)
                    .json(&json!({ "flavor": {
                        "name": format!("load-{:08x}", run_id()),
                        "ram": 64, "vcpus": 1, "disk": 1,
                    } })),
                "POST /v2.1/flavors",
                200,
            )
            .await
            .map_err(boot_failure)?;
            let flavor = flavor["flavor"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if image.is_empty() || flavor.is_empty() {
                return Err(boot_failure(format!(
                    "no id came back: image {image:?}, flavor {flavor:?}"
                )));
            }
            Ok(BootSource { image, flavor })
        })
        .await?
}

fn boot_failure(detail: String) -> TestEnvError {
    TestEnvError::Service {
        service: "nova boot source".into(),
        detail,
    }
}
