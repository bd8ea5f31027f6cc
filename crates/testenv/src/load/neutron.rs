//! A client that keeps using a Neutron API while it upgrades, as a cloud's
//! users do: it makes a security group, then every round lists the networks,
//! creates a network with a subnet and a port on it, renames the network,
//! adds a rule to the security group, reads an earlier network back and,
//! every fourth round (every round once it keeps `MAX_KEPT`), deletes the
//! oldest network (its port and subnet first) and the oldest rule. Through
//! the API Service's ClusterIP, from a client network namespace. Once
//! stopped it reads back everything it kept and looks for everything it
//! deleted. Any transport error or unexpected status is a failure; nothing
//! is retried to hide one.
//!
//! Subnets have DHCP off and ports are bound to no host, so no agent takes
//! part: what is measured is the API server and what it does within a
//! request. Given credentials it logs in to Keystone (a project `member`
//! may do all of this in its project); otherwise Neutron must run
//! `auth_strategy = noauth`, where a request that names no project is an
//! admin's in the project `fake_project_id`
//! (`neutron.auth.NoauthFakeProjectId`).

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::auth::Credentials;
use super::{Made, Outcome, Request, RunningLoad, Session, exchange, run_id, start_load};
use crate::error::Result;
use crate::shared::ClientNetns;

/// Where Neutron's API lives (`/` serves only the versions document).
const PREFIX: &str = "/v2.0";
/// Networks (each with its subnet and port) and rules the client keeps at
/// most; past that it deletes every round, not every fourth. Neutron's
/// default quotas (100 networks, 100 subnets, 100 security group rules a
/// project, admins' requests included) would otherwise refuse creates after
/// some 130 rounds, and a refused create reads as downtime. 30 leaves room
/// for two more runs in the same project.
const MAX_KEPT: usize = 30;
/// Deleted objects looked for per listing once stopped: one `GET` per
/// object would take about as long as the run (after [`MAX_KEPT`] every
/// round deletes four), a listing filtered by id answers for many at once.
const LISTED_AT_ONCE: usize = 40;

/// A kind of object the client makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    SecurityGroup,
    Rule,
    Network,
    Subnet,
    Port,
}

impl Kind {
    /// Its collection: `/v2.0/<collection>/<id>`.
    fn collection(self) -> &'static str {
        match self {
            Kind::SecurityGroup => "security-groups",
            Kind::Rule => "security-group-rules",
            Kind::Network => "networks",
            Kind::Subnet => "subnets",
            Kind::Port => "ports",
        }
    }

    /// Its key in a body (`{"network": {…}}`); failures name it so too.
    pub fn key(self) -> &'static str {
        match self {
            Kind::SecurityGroup => "security_group",
            Kind::Rule => "security_group_rule",
            Kind::Network => "network",
            Kind::Subnet => "subnet",
            Kind::Port => "port",
        }
    }

    /// A listing's key (`{"security_group_rules": […]}`).
    fn list_key(self) -> String {
        self.collection().replace('-', "_")
    }

    fn path(self, id: &str) -> String {
        format!("/{}/{id}", self.collection())
    }
}

/// A network the client keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptNetwork {
    /// The round that made it: the smallest is the oldest.
    pub round: u64,
    /// The name it must have: the last one acknowledged.
    pub name: String,
    /// A rename that got no acknowledgement, so may or may not have been
    /// applied: this name is right too.
    pub maybe_name: Option<String>,
    /// Deleting what is on it got no acknowledgement: it is kept from then
    /// on, as deleting the rest could then fail only because of that.
    pub stuck: bool,
}

/// A subnet the client keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptSubnet {
    pub network: String,
    pub cidr: String,
}

/// A port the client keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptPort {
    pub network: String,
    /// The security group it was put in (none: the project's default one).
    pub security_group: Option<String>,
}

/// A rule the client keeps in its security group: TCP in to one port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptRule {
    pub round: u64,
    pub port: u16,
}

/// What became of what the client made (only what was acknowledged).
#[derive(Clone, Debug, Default)]
pub struct NeutronLoadOutcome {
    /// The security group every rule and port is in.
    pub security_group: Option<String>,
    /// Network id → what it must be.
    pub networks: BTreeMap<String, KeptNetwork>,
    pub subnets: BTreeMap<String, KeptSubnet>,
    pub ports: BTreeMap<String, KeptPort>,
    pub rules: BTreeMap<String, KeptRule>,
    /// Id → kind of each object whose delete was acknowledged.
    pub deleted: BTreeMap<String, Kind>,
    /// Id → kind of each object whose delete got no acknowledgement: it may
    /// or may not have happened, so it is not read back.
    pub unsure: BTreeMap<String, Kind>,
    /// What reading everything back after the load found wrong.
    pub lost_after: Vec<String>,
}

impl Outcome for NeutronLoadOutcome {
    fn made(&self) -> Made {
        let mut summary = format!(
            "{} networks, {} subnets, {} ports, {} rules kept, {} deleted",
            self.networks.len(),
            self.subnets.len(),
            self.ports.len(),
            self.rules.len(),
            self.deleted.len(),
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
pub struct NeutronLoadOptions {
    /// Pause between rounds.
    pub pause: Duration,
    /// Whom to log in to Keystone as, when Neutron authenticates; none:
    /// `noauth`.
    pub login: Option<Credentials>,
}

impl Default for NeutronLoadOptions {
    fn default() -> Self {
        NeutronLoadOptions {
            pause: Duration::from_millis(200),
            login: None,
        }
    }
}

/// The running client; stopping it ends the rounds and reads everything back.
pub type NeutronLoad = RunningLoad<NeutronLoadOutcome>;

/// Starts the client in `netns` against the Service `service` (port `api`).
pub async fn start(
    client: &kube::Client,
    netns: &ClientNetns,
    namespace: &str,
    service: &str,
    options: NeutronLoadOptions,
) -> Result<NeutronLoad> {
    let login = options.login.clone();
    start_load(client, netns, namespace, service, login, |session, stop| {
        Worker {
            session,
            run: run_id(),
            outcome: NeutronLoadOutcome::default(),
        }
        .run(options, stop)
    })
    .await
}

/// The name of round `round`'s network in run `run`.
fn network_name(run: u32, round: u64) -> String {
    format!("load-{run:08x}-{round}")
}

/// What the network of round `round` is renamed to.
fn renamed(run: u32, round: u64) -> String {
    format!("{}-renamed", network_name(run, round))
}

/// Round `round`'s subnet: a /24 of 10.0.0.0/8 that differs from round to
/// round (for 65536 rounds), so a subnet read back for another shows.
fn cidr(round: u64) -> String {
    format!("10.{}.{}.0/24", (round / 256) % 256, round % 256)
}

/// The port round `round`'s rule lets in: distinct for 64000 rounds, as
/// Neutron refuses a rule equal to one the group has (409).
fn rule_port(round: u64) -> u16 {
    1024 + (round % 64_000) as u16
}

/// Why `found` (a network's body) is not `expected` with the subnets
/// `subnets` on it, if it is not.
fn network_wrong(expected: &KeptNetwork, subnets: &[&str], found: &Value) -> Option<String> {
    let right = |name: &str| name == expected.name || expected.maybe_name.as_deref() == Some(name);
    if !found["name"].as_str().is_some_and(right) {
        return Some(format!("named {}, not {}", found["name"], expected.name));
    }
    let listed = |id: &&str| {
        found["subnets"]
            .as_array()
            .is_some_and(|l| l.iter().any(|s| s.as_str() == Some(id)))
    };
    let missing: Vec<&str> = subnets.iter().filter(|s| !listed(s)).copied().collect();
    (!missing.is_empty()).then(|| format!("lists subnets {}, not {missing:?}", found["subnets"]))
}

/// Why `found` (a subnet's body) is not `expected`, if it is not.
fn subnet_wrong(expected: &KeptSubnet, found: &Value) -> Option<String> {
    let intact = found["network_id"].as_str() == Some(expected.network.as_str())
        && found["cidr"].as_str() == Some(expected.cidr.as_str());
    (!intact).then(|| {
        format!(
            "{} on {}, not {} on {}",
            found["cidr"], found["network_id"], expected.cidr, expected.network
        )
    })
}

/// Why `found` (a port's body) is not `expected`, if it is not.
fn port_wrong(expected: &KeptPort, found: &Value) -> Option<String> {
    let grouped = expected.security_group.as_deref().is_none_or(|group| {
        found["security_groups"]
            .as_array()
            .is_some_and(|l| l.iter().any(|g| g.as_str() == Some(group)))
    });
    let intact = found["network_id"].as_str() == Some(expected.network.as_str()) && grouped;
    (!intact).then(|| {
        format!(
            "on {} in {}, not on {} in {:?}",
            found["network_id"],
            found["security_groups"],
            expected.network,
            expected.security_group
        )
    })
}

/// Why `found` (a rule's body) is not `expected` in `group`, if it is not.
fn rule_wrong(expected: &KeptRule, group: &str, found: &Value) -> Option<String> {
    let port = Some(u64::from(expected.port));
    let intact = found["security_group_id"].as_str() == Some(group)
        && found["direction"].as_str() == Some("ingress")
        && found["protocol"].as_str() == Some("tcp")
        && found["port_range_min"].as_u64() == port
        && found["port_range_max"].as_u64() == port;
    (!intact).then(|| format!("{found}, not TCP in to {} in {group}", expected.port))
}

/// The query listing, of a collection, the members with the ids `ids` (by
/// id only).
fn ids_query(ids: &[&String]) -> String {
    let ids: Vec<String> = ids.iter().map(|id| format!("&id={id}")).collect();
    format!("?fields=id{}", ids.concat())
}

struct Worker {
    session: Session,
    run: u32,
    outcome: NeutronLoadOutcome,
}

impl Worker {
    /// One tallied request to `/v2.0<path>`: the body, if it answered
    /// `expect`. Under `noauth` no header stands in for a login: one naming a
    /// project (`X-Project-Id`) keeps Neutron from making the request an
    /// admin's in `fake_project_id`; it then runs as an admin of no project,
    /// and a create that names no project is refused (400).
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
                let request = match &body {
                    Some(body) => builder.json(body),
                    None => builder,
                };
                exchange(request, &what, expect).await
            })
            .await
    }

    /// Creates a `kind` from `body` (`POST`, 201): its id.
    async fn create(&self, kind: Kind, body: Value) -> Option<String> {
        let path = format!("/{}", kind.collection());
        let created = self
            .call(Method::POST, &path, Some(json!({ kind.key(): body })), 201)
            .await?;
        let id = created[kind.key()]["id"].as_str().map(str::to_string);
        if id.is_none() {
            self.session
                .fail_last(format!("POST {path}: no {}.id in {created}", kind.key()));
        }
        id
    }

    /// Makes the security group, unless made: at the start and, until that
    /// succeeds, every round.
    async fn ensure_security_group(&mut self) {
        if self.outcome.security_group.is_some() {
            return;
        }
        let body = json!({
            "name": format!("load-{:08x}", self.run),
            "description": "Ratchet's load client",
        });
        self.outcome.security_group = self.create(Kind::SecurityGroup, body).await;
    }

    async fn round(&mut self, round: u64) {
        self.ensure_security_group().await;
        self.call(Method::GET, "/networks", None, 200).await;
        if let Some(network) = self.make_network(round).await {
            self.make_subnet(&network, round).await;
            self.make_port(&network, round).await;
            self.rename(&network, round).await;
        }
        self.add_rule(round).await;
        self.check_earlier(round).await;
        if round.is_multiple_of(4) || self.outcome.networks.len() > MAX_KEPT {
            self.delete_oldest_network().await;
        }
        if round.is_multiple_of(4) || self.outcome.rules.len() > MAX_KEPT {
            self.delete_oldest_rule().await;
        }
    }

    async fn make_network(&mut self, round: u64) -> Option<String> {
        let name = network_name(self.run, round);
        let id = self.create(Kind::Network, json!({ "name": name })).await?;
        let kept = KeptNetwork {
            round,
            name,
            maybe_name: None,
            stuck: false,
        };
        self.outcome.networks.insert(id.clone(), kept);
        Some(id)
    }

    /// An IPv4 subnet without DHCP, which would need a DHCP agent (or OVN's).
    async fn make_subnet(&mut self, network: &str, round: u64) {
        let cidr = cidr(round);
        let body = json!({
            "network_id": network,
            "name": network_name(self.run, round),
            "ip_version": 4,
            "cidr": cidr,
            "enable_dhcp": false,
        });
        if let Some(id) = self.create(Kind::Subnet, body).await {
            let network = network.to_string();
            self.outcome
                .subnets
                .insert(id, KeptSubnet { network, cidr });
        }
    }

    async fn make_port(&mut self, network: &str, round: u64) {
        let security_group = self.outcome.security_group.clone();
        let mut body = json!({ "network_id": network, "name": network_name(self.run, round) });
        if let Some(group) = &security_group {
            body["security_groups"] = json!([group]);
        }
        if let Some(id) = self.create(Kind::Port, body).await {
            let network = network.to_string();
            let port = KeptPort {
                network,
                security_group,
            };
            self.outcome.ports.insert(id, port);
        }
    }

    async fn rename(&mut self, network: &str, round: u64) {
        let name = renamed(self.run, round);
        let body = json!({ "network": { "name": name } });
        let path = Kind::Network.path(network);
        let acknowledged = self.call(Method::PUT, &path, Some(body), 200).await;
        if let Some(kept) = self.outcome.networks.get_mut(network) {
            match acknowledged {
                Some(_) => kept.name = name,
                None => kept.maybe_name = Some(name),
            }
        }
    }

    async fn add_rule(&mut self, round: u64) {
        let Some(group) = self.outcome.security_group.clone() else {
            return;
        };
        let port = rule_port(round);
        let body = json!({
            "security_group_id": group,
            "direction": "ingress",
            "ethertype": "IPv4",
            "protocol": "tcp",
            "port_range_min": port,
            "port_range_max": port,
        });
        if let Some(id) = self.create(Kind::Rule, body).await {
            self.outcome.rules.insert(id, KeptRule { round, port });
        }
    }

    /// Reads back a network made earlier, as a user would (a failure is
    /// tallied).
    async fn check_earlier(&self, round: u64) {
        let kept = self.outcome.networks.len().max(1);
        let earlier = self.outcome.networks.keys().nth(round as usize * 7 % kept);
        if let Some(earlier) = earlier {
            let _ = self.check_network(earlier).await;
        }
    }

    /// Reads `kind` `id` back: why it is not as made, if `wrong` says so or
    /// it is not read (a body read back wrong also fails its request).
    async fn check(
        &self,
        kind: Kind,
        id: &str,
        wrong: impl FnOnce(&Value) -> Option<String>,
    ) -> Result<(), String> {
        let Some(found) = self.call(Method::GET, &kind.path(id), None, 200).await else {
            let failure = self.session.last_failure();
            return Err(format!("{} {id} not read back: {failure}", kind.key()));
        };
        match wrong(&found[kind.key()]) {
            None => Ok(()),
            Some(why) => {
                let failure = format!("{} {id}: {why}", kind.key());
                self.session.fail_last(failure.clone());
                Err(failure)
            }
        }
    }

    async fn check_network(&self, id: &str) -> Result<(), String> {
        let Some(expected) = self.outcome.networks.get(id) else {
            return Err(format!("network {id} was never acknowledged"));
        };
        let subnets: Vec<&str> = (self.outcome.subnets.iter())
            .filter(|(_, s)| s.network == id)
            .map(|(subnet, _)| subnet.as_str())
            .collect();
        self.check(Kind::Network, id, |found| {
            network_wrong(expected, &subnets, found)
        })
        .await
    }

    /// Deletes the oldest network that can be (its ports and subnets first:
    /// Neutron refuses to delete a network with a port on it).
    async fn delete_oldest_network(&mut self) {
        let oldest = (self.outcome.networks.iter())
            .filter(|(_, n)| !n.stuck)
            .min_by_key(|(_, n)| n.round)
            .map(|(id, _)| id.clone());
        let Some(network) = oldest else {
            return;
        };
        for (kind, id) in self.on_network(&network) {
            if !self.delete(kind, &id).await {
                if let Some(kept) = self.outcome.networks.get_mut(&network) {
                    kept.stuck = true;
                }
                return;
            }
        }
        self.delete(Kind::Network, &network).await;
    }

    /// The ports, then the subnets, the client keeps on `network`.
    fn on_network(&self, network: &str) -> Vec<(Kind, String)> {
        let ports = (self.outcome.ports.iter())
            .filter(|(_, p)| p.network == network)
            .map(|(id, _)| (Kind::Port, id.clone()));
        let subnets = (self.outcome.subnets.iter())
            .filter(|(_, s)| s.network == network)
            .map(|(id, _)| (Kind::Subnet, id.clone()));
        ports.chain(subnets).collect()
    }

    async fn delete_oldest_rule(&mut self) {
        let oldest = (self.outcome.rules.iter())
            .min_by_key(|(_, r)| r.round)
            .map(|(id, _)| id.clone());
        if let Some(rule) = oldest {
            self.delete(Kind::Rule, &rule).await;
        }
    }

    /// Deletes `kind` `id` (204): whether that was acknowledged. Either way
    /// the client keeps it no more.
    async fn delete(&mut self, kind: Kind, id: &str) -> bool {
        let done = (self.call(Method::DELETE, &kind.path(id), None, 204).await).is_some();
        match kind {
            Kind::SecurityGroup => self.outcome.security_group = None,
            Kind::Rule => {
                self.outcome.rules.remove(id);
            }
            Kind::Network => {
                self.outcome.networks.remove(id);
            }
            Kind::Subnet => {
                self.outcome.subnets.remove(id);
            }
            Kind::Port => {
                self.outcome.ports.remove(id);
            }
        }
        let into = match done {
            true => &mut self.outcome.deleted,
            false => &mut self.outcome.unsure,
        };
        into.insert(id.to_string(), kind);
        done
    }

    /// Reads back everything kept, and looks for everything deleted: what is
    /// not as it should be.
    async fn read_back(&self) -> Vec<String> {
        let mut lost = Vec::new();
        let outcome = &self.outcome;
        for id in outcome.networks.keys() {
            lost.extend(self.check_network(id).await.err());
        }
        for (id, subnet) in &outcome.subnets {
            let checked = self.check(Kind::Subnet, id, |f| subnet_wrong(subnet, f));
            lost.extend(checked.await.err());
        }
        for (id, port) in &outcome.ports {
            let checked = self.check(Kind::Port, id, |f| port_wrong(port, f));
            lost.extend(checked.await.err());
        }
        if let Some(group) = &outcome.security_group {
            lost.extend(self.check(Kind::SecurityGroup, group, |_| None).await.err());
            for (id, rule) in &outcome.rules {
                let checked = self.check(Kind::Rule, id, |f| rule_wrong(rule, group, f));
                lost.extend(checked.await.err());
            }
        }
        for kind in [Kind::Rule, Kind::Network, Kind::Subnet, Kind::Port] {
            lost.extend(self.still_listed(kind).await);
        }
        lost
    }

    /// The deleted `kind`s Neutron still lists (or the listings it did not
    /// answer).
    async fn still_listed(&self, kind: Kind) -> Vec<String> {
        let deleted: Vec<&String> = (self.outcome.deleted.iter())
            .filter(|(_, k)| **k == kind)
            .map(|(id, _)| id)
            .collect();
        let mut lost = Vec::new();
        for ids in deleted.chunks(LISTED_AT_ONCE) {
            let path = format!("/{}{}", kind.collection(), ids_query(ids));
            let Some(listed) = self.call(Method::GET, &path, None, 200).await else {
                let failure = self.session.last_failure();
                lost.push(format!(
                    "{} deleted {}s not looked for: {failure}",
                    ids.len(),
                    kind.key()
                ));
                continue;
            };
            let found = listed[kind.list_key()]
                .as_array()
                .cloned()
                .unwrap_or_default();
            lost.extend(
                found
                    .iter()
                    .filter_map(|f| f["id"].as_str())
                    .map(|id| format!("{} {id} still there after its delete", kind.key())),
            );
        }
        lost
    }

    async fn run(
        mut self,
        options: NeutronLoadOptions,
        mut stop: watch::Receiver<Option<Duration>>,
    ) -> NeutronLoadOutcome {
        self.ensure_security_group().await;
        let mut round = 1;
        while stop.borrow().is_none() {
            self.round(round).await;
            round += 1;
            tokio::select! {
                _ = tokio::time::sleep(options.pause) => {}
                _ = stop.changed() => {}
            }
        }
        self.outcome.lost_after = self.read_back().await;
        self.outcome
    }
}

/// Plugs a port into `server` (as Nova would: `device_owner compute:nova`,
/// `device_id` the server) on a network of its own, then unplugs it by
/// deleting it, as `credentials`' user: a Neutron that notifies Nova tells
/// it `network-vif-deleted` for the server. Returns the port's id.
pub async fn plug_and_unplug(
    netns: &ClientNetns,
    neutron: std::net::SocketAddr,
    credentials: &Credentials,
    server: &str,
) -> Result<String> {
    let credentials = credentials.clone();
    let server = server.to_string();
    netns
        .run(async move {
            let http = super::http_client()?;
            let token = credentials.issue(&http).await.map_err(plug_failure)?.value;
            let url = |path: &str| format!("http://{neutron}{PREFIX}/{path}");
            let network = exchange(
                http.post(url("networks"))
                    .header("X-Auth-Token", &token)
                    .json(&json!({ "network": { "name": format!("plug-{:08x}", run_id()) } })),
                "POST /v2.0/networks",
                201,
            )
            .await
            .map_err(plug_failure)?;
            let network = network["network"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let port = exchange(
                http.post(url("ports"))
                    .header("X-Auth-Token", &token)
                    .json(&json!({ "port": {
                        "network_id": network,
                        "device_id": server,
                        "device_owner": "compute:nova",
                    } })),
                "POST /v2.0/ports",
                201,
            )
            .await
            .map_err(plug_failure)?;
            let port = port["port"]["id"].as_str().unwrap_or_default().to_string();
            for (path, what) in [
                (format!("ports/{port}"), "DELETE /v2.0/ports/<id>"),
                (format!("networks/{network}"), "DELETE /v2.0/networks/<id>"),
            ] {
                super::exchange_with_headers(
                    http.delete(url(&path)).header("X-Auth-Token", &token),
                    what,
                    204,
                )
                .await
                .map_err(plug_failure)?;
            }
            Ok(port)
        })
        .await?
}

fn plug_failure(detail: String) -> crate::error::TestEnvError {
    crate::error::TestEnvError::Service {
        service: "neutron port plug".into(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_has_its_own_names_subnet_and_rule_port() {
        assert_eq!(network_name(0xdead_beef, 3), "load-deadbeef-3");
        assert_eq!(renamed(0xdead_beef, 3), "load-deadbeef-3-renamed");
        assert_ne!(network_name(1, 3), network_name(2, 3));
        assert_eq!(cidr(1), "10.0.1.0/24");
        assert_eq!(cidr(257), "10.1.1.0/24");
        assert_eq!(cidr(65_536 + 5), cidr(5));
        assert_eq!(rule_port(1), 1025);
        assert_eq!(rule_port(63_999), 65_023);
        assert_eq!(rule_port(64_000), 1024);
        let subnets: std::collections::BTreeSet<String> = (1..2000).map(cidr).collect();
        assert_eq!(subnets.len(), 1999);
    }

    #[test]
    fn a_network_is_right_with_either_name_of_an_unacknowledged_rename() {
        let kept = KeptNetwork {
            round: 1,
            name: "a".into(),
            maybe_name: Some("b".into()),
            stuck: false,
        };
        let found = |name: &str| json!({ "name": name, "subnets": ["s1", "s2"] });
        assert_eq!(network_wrong(&kept, &["s1"], &found("a")), None);
        assert_eq!(network_wrong(&kept, &["s1"], &found("b")), None);
        assert!(network_wrong(&kept, &["s1"], &found("c")).is_some());
        assert!(network_wrong(&kept, &["s3"], &found("a")).is_some());
        let sure = KeptNetwork {
            maybe_name: None,
            ..kept
        };
        assert!(network_wrong(&sure, &[], &json!({ "subnets": [] })).is_some());
    }

    #[test]
    fn subnets_ports_and_rules_are_compared_with_what_was_made() {
        let subnet = KeptSubnet {
            network: "n".into(),
            cidr: cidr(1),
        };
        let found = json!({ "network_id": "n", "cidr": "10.0.1.0/24" });
        assert_eq!(subnet_wrong(&subnet, &found), None);
        assert!(
            subnet_wrong(
                &subnet,
                &json!({ "network_id": "n", "cidr": "10.0.2.0/24" })
            )
            .is_some()
        );
        let port = KeptPort {
            network: "n".into(),
            security_group: Some("g".into()),
        };
        assert_eq!(
            port_wrong(
                &port,
                &json!({ "network_id": "n", "security_groups": ["g"] })
            ),
            None
        );
        assert!(port_wrong(&port, &json!({ "network_id": "n", "security_groups": [] })).is_some());
        let rule = KeptRule {
            round: 1,
            port: 1025,
        };
        let found = json!({ "security_group_id": "g", "direction": "ingress", "protocol": "tcp",
            "port_range_min": 1025, "port_range_max": 1025 });
        assert_eq!(rule_wrong(&rule, "g", &found), None);
        assert!(rule_wrong(&rule, "h", &found).is_some());
    }

    #[test]
    fn deleted_objects_are_looked_for_by_id() {
        let (a, b) = ("a".to_string(), "b".to_string());
        assert_eq!(ids_query(&[&a, &b]), "?fields=id&id=a&id=b");
        assert_eq!(Kind::Rule.list_key(), "security_group_rules");
        assert_eq!(Kind::Rule.path("x"), "/security-group-rules/x");
    }
}
