//! A client that keeps using a Cinder API while it upgrades: creates volumes,
//! lists them, deletes some and asks for backups of others, through the API
//! Service's ClusterIP, from a client network namespace. Any transport
//! error or unexpected status is a failure; nothing is retried to hide one.
//! Without a login it needs `auth_strategy = noauth` (the token names the
//! user and project); with one, each request carries the user's Keystone
//! token, and an admin lifts the user's project's quotas first.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::auth::Credentials;
use super::{Made, Outcome, Request, RunningLoad, Session, exchange, start_load};
use crate::error::Result;
use crate::shared::ClientNetns;

/// `<user>:<project>` under noauth; the project is taken from the token, so
/// paths carry none (`/v3/volumes`, which cinder accepts since microversion
/// 3.67), with Keystone as without.
const NOAUTH_TOKEN: &str = "admin:admin";
const NOAUTH_PROJECT: &str = "admin";
/// Statuses a volume or backup passes through on its way to a final one.
const TRANSITIONAL: &[&str] = &[
    "creating",
    "deleting",
    "backing-up",
    "restoring-backup",
    "downloading",
    "attaching",
    "detaching",
];

/// What the client does with a volume once it is available, in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Keep,
    Delete,
    Backup,
}

#[derive(Clone, Debug)]
struct Tracked {
    id: String,
    status: String,
    fate: Fate,
    acted: bool,
}

/// What became of everything the client made.
#[derive(Clone, Debug, Default)]
pub struct CinderLoadOutcome {
    /// Volumes the client kept (or backed up): id → final status.
    pub kept: BTreeMap<String, String>,
    /// Volumes the client deleted: id → final status, `gone` once listed no more.
    pub deleted: BTreeMap<String, String>,
    /// Backups the client asked for: id → final status (and fail reason).
    pub backups: BTreeMap<String, String>,
    /// Volumes that ended in `error`: id → what Cinder says about them.
    pub errors: BTreeMap<String, String>,
}

impl Outcome for CinderLoadOutcome {
    /// Lost: a kept volume not `available`, a deleted one still listed, a
    /// backup not `available`.
    fn made(&self) -> Made {
        let not = |what: &str, map: &BTreeMap<String, String>, wanted: &str| {
            map.iter()
                .filter(|(_, status)| status.as_str() != wanted)
                .map(|(id, status)| format!("{what} {id} {status}"))
                .collect::<Vec<_>>()
        };
        let mut lost = not("volume", &self.kept, "available");
        lost.extend(not("deleted volume", &self.deleted, "gone"));
        lost.extend(not("backup", &self.backups, "available"));
        Made {
            summary: format!(
                "{} volumes kept, {} deleted, {} backups",
                self.kept.len(),
                self.deleted.len(),
                self.backups.len()
            ),
            lost,
        }
    }
}

/// Options of the load.
#[derive(Clone, Debug)]
pub struct CinderLoadOptions {
    /// Pause between rounds (a round: create, list, act on available volumes).
    pub pause: Duration,
    /// Backups of every third volume once it is available, at most one per this
    /// interval (`None`: no backups). A backup reads the whole volume (1 GiB):
    /// seconds of a core each, on a machine that also runs the upgrade.
    pub backup_every: Option<Duration>,
    /// The user the client logs in as (`None`: noauth).
    pub login: Option<Credentials>,
    /// The admin who lifts the quotas of the login's project (with a login).
    pub admin: Option<Credentials>,
}

impl Default for CinderLoadOptions {
    fn default() -> Self {
        CinderLoadOptions {
            pause: Duration::from_millis(200),
            backup_every: Some(Duration::from_secs(15)),
            login: None,
            admin: None,
        }
    }
}

/// The running client.
pub type CinderLoad = RunningLoad<CinderLoadOutcome>;

/// Starts the client in `netns` against the Service `service` (port `api`).
pub async fn start(
    client: &kube::Client,
    netns: &ClientNetns,
    namespace: &str,
    service: &str,
    options: CinderLoadOptions,
) -> Result<CinderLoad> {
    let login = options.login.clone();
    start_load(client, netns, namespace, service, login, |session, stop| {
        Worker {
            session,
            volumes: Vec::new(),
            backups: BTreeMap::new(),
            last_backup: None,
        }
        .run(options, stop)
    })
    .await
}

struct Worker {
    session: Session,
    volumes: Vec<Tracked>,
    backups: BTreeMap<String, String>,
    /// When the client last asked for a backup.
    last_backup: Option<Instant>,
}

impl Worker {
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        expect: u16,
    ) -> Option<Value> {
        self.session
            .tallied(self.send(method, path, body, expect, None))
            .await
    }

    /// One request, not tallied; `microversion` sets `OpenStack-API-Version`.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        expect: u16,
        microversion: Option<&str>,
    ) -> std::result::Result<Value, String> {
        let Request { builder, what } = self.session.request(method, "/v3", path).await?;
        let mut request = match &self.session.login {
            Some(_) => builder,
            None => builder.header("X-Auth-Token", NOAUTH_TOKEN),
        };
        if let Some(version) = microversion {
            request = request.header("OpenStack-API-Version", format!("volume {version}"));
        }
        if let Some(body) = &body {
            request = request.json(body);
        }
        exchange(request, &what, expect).await
    }

    /// What Cinder says about each volume that ended in `error`: its host, its
    /// timestamps and the user messages naming it (API microversion 3.3).
    async fn explain_errors(&self) -> BTreeMap<String, String> {
        let failed: Vec<&Tracked> = self
            .volumes
            .iter()
            .filter(|v| v.status == "error")
            .collect();
        if failed.is_empty() {
            return BTreeMap::new();
        }
        let messages = self
            .send(Method::GET, "/messages", None, 200, Some("3.3"))
            .await
            .unwrap_or_else(|e| json!({ "unreadable": e }));
        let mut explained = BTreeMap::new();
        for volume in failed {
            let path = format!("/volumes/{}", volume.id);
            let detail = match self.send(Method::GET, &path, None, 200, None).await {
                Ok(v) => format!(
                    "host {} created {} updated {}",
                    v["volume"]["os-vol-host-attr:host"],
                    v["volume"]["created_at"],
                    v["volume"]["updated_at"]
                ),
                Err(e) => e,
            };
            let said: Vec<String> = messages["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| m["resource_uuid"].as_str() == Some(volume.id.as_str()))
                .map(|m| format!("{} at {}", m["user_message"], m["created_at"]))
                .collect();
            explained.insert(volume.id.clone(), format!("{detail}; messages: {said:?}"));
        }
        explained
    }

    async fn create_volume(&mut self, backups: bool) {
        let n = self.volumes.len();
        let body = json!({ "volume": { "size": 1, "name": format!("load-{n}") } });
        let created = self.call(Method::POST, "/volumes", Some(body), 202).await;
        if let Some(id) = created.as_ref().and_then(|c| c["volume"]["id"].as_str()) {
            let fate = match n % 3 {
                0 => Fate::Keep,
                1 => Fate::Delete,
                _ if backups => Fate::Backup,
                _ => Fate::Keep,
            };
            self.volumes.push(Tracked {
                id: id.to_string(),
                status: "creating".into(),
                fate,
                acted: false,
            });
        }
    }

    /// Lists volumes; those not listed any more count as `gone`.
    async fn read_volumes(&mut self) -> bool {
        let Some(listed) = self.call(Method::GET, "/volumes/detail", None, 200).await else {
            return false;
        };
        let statuses: BTreeMap<&str, &str> = listed["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| Some((v["id"].as_str()?, v["status"].as_str()?)))
            .collect();
        for volume in &mut self.volumes {
            volume.status = statuses
                .get(volume.id.as_str())
                .map_or("gone", |s| s)
                .to_string();
        }
        true
    }

    async fn read_backups(&mut self) -> bool {
        let Some(listed) = self.call(Method::GET, "/backups/detail", None, 200).await else {
            return false;
        };
        for backup in listed["backups"].as_array().into_iter().flatten() {
            let (Some(id), Some(status)) = (backup["id"].as_str(), backup["status"].as_str())
            else {
                continue;
            };
            if let Some(seen) = self.backups.get_mut(id) {
                *seen = match backup["fail_reason"].as_str() {
                    Some(reason) if !reason.is_empty() => format!("{status}: {reason}"),
                    _ => status.to_string(),
                };
            }
        }
        true
    }

    async fn act(&mut self, backup_every: Option<Duration>) {
        for i in 0..self.volumes.len() {
            let volume = self.volumes[i].clone();
            if volume.acted || volume.status != "available" {
                continue;
            }
            let backup_due = match (backup_every, self.last_backup) {
                (Some(every), Some(last)) => last.elapsed() >= every,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if volume.fate == Fate::Backup && !backup_due {
                continue;
            }
            let acted = match volume.fate {
                Fate::Keep => true,
                Fate::Delete => {
                    let path = format!("/volumes/{}", volume.id);
                    self.call(Method::DELETE, &path, None, 202).await.is_some()
                }
                Fate::Backup => {
                    let body = json!({ "backup": { "volume_id": volume.id, "name": format!("of-{}", volume.id) } });
                    let made = self.call(Method::POST, "/backups", Some(body), 202).await;
                    match made.as_ref().and_then(|b| b["backup"]["id"].as_str()) {
                        Some(id) => {
                            self.backups.insert(id.to_string(), "creating".into());
                            self.last_backup = Some(Instant::now());
                            true
                        }
                        None => false,
                    }
                }
            };
            self.volumes[i].acted = acted;
        }
    }

    fn settled(&self) -> bool {
        let transitional = |s: &str| TRANSITIONAL.iter().any(|t| s.starts_with(t));
        self.volumes.iter().all(|v| {
            !transitional(&v.status) && (v.fate != Fate::Delete || !v.acted || v.status == "gone")
        }) && self.backups.values().all(|s| !transitional(s))
    }

    /// Lifts the project's quotas (10 volumes by default), as an operator of a
    /// busy cloud would, so the load measures the upgrade, not the quota.
    async fn lift_quotas(&self, admin: Option<&Credentials>) {
        let body = json!({ "quota_set": {
            "volumes": -1, "gigabytes": -1, "backups": -1, "backup_gigabytes": -1, "snapshots": -1,
        } });
        let (Some(login), Some(admin)) = (&self.session.login, admin) else {
            let path = format!("/os-quota-sets/{NOAUTH_PROJECT}");
            self.call(Method::PUT, &path, Some(body), 200).await;
            return;
        };
        // The admin's token, on the user's project.
        let http = &self.session.http;
        let lifted = async {
            let project = login
                .credentials
                .issue(http)
                .await?
                .project_id
                .ok_or_else(|| "Cinder's client logs in to a project".to_string())?;
            let token = admin.issue(http).await?.value;
            let Request { builder, what } = self.session.unauthenticated(
                Method::PUT,
                "/v3",
                &format!("/os-quota-sets/{project}"),
            );
            exchange(
                builder.header("X-Auth-Token", token).json(&body),
                &what,
                200,
            )
            .await
        };
        self.session.tallied(lifted).await;
    }

    async fn run(
        mut self,
        options: CinderLoadOptions,
        mut stop: watch::Receiver<Option<Duration>>,
    ) -> CinderLoadOutcome {
        self.lift_quotas(options.admin.as_ref()).await;
        let settle = loop {
            if let Some(settle) = *stop.borrow() {
                break settle;
            }
            self.create_volume(options.backup_every.is_some()).await;
            if self.read_volumes().await {
                self.act(options.backup_every).await;
            }
            if options.backup_every.is_some() {
                self.read_backups().await;
            }
            tokio::select! {
                _ = tokio::time::sleep(options.pause) => {}
                _ = stop.changed() => {}
            }
        };
        let deadline = Instant::now() + settle;
        loop {
            let read = self.read_volumes().await && self.read_backups().await;
            if read && self.settled() || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let mut outcome = CinderLoadOutcome {
            backups: self.backups.clone(),
            errors: self.explain_errors().await,
            ..Default::default()
        };
        for volume in &self.volumes {
            let into = match (volume.fate, volume.acted) {
                (Fate::Delete, true) => &mut outcome.deleted,
                _ => &mut outcome.kept,
            };
            into.insert(volume.id.clone(), volume.status.clone());
        }
        outcome
    }
}
