//! The demo's upgrade: patch release and image together, follow the phases,
//! the rolling workload and the Jobs live, abort on failure, and sum up.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::{StreamExt, stream};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use ratchet_api::cinder::v1beta1::{Cinder, CinderUpgradePhase};
use ratchet_release::Release;

use super::NAMESPACE;
use super::timeline::{render, spans};

const LIMIT: Duration = Duration::from_secs(300);

enum Seen {
    Cinder(Box<Cinder>),
    Job(Box<Job>),
}

/// How a follow ended.
enum Ending {
    Installed,
    Failed {
        phase: String,
        reason: String,
        message: String,
    },
}

/// Prints what changes and records the phase timeline until `done` decides.
struct Follower {
    started: Instant,
    phases: Vec<(Duration, String)>,
    last_line: String,
    rolling: String,
    /// Job UIDs already announced as running, and as finished.
    jobs_running: HashSet<String>,
    jobs_finished: HashSet<String>,
}

fn phase_of(c: &Cinder) -> String {
    c.status
        .as_ref()
        .and_then(|s| serde_json::to_value(s.upgrade_phase).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn condition(c: &Cinder, kind: &str) -> Option<(String, String, String)> {
    c.status
        .as_ref()?
        .conditions
        .iter()
        .find(|x| x.type_ == kind)
        .map(|x| (x.status.clone(), x.reason.clone(), x.message.clone()))
}

impl Follower {
    fn new() -> Follower {
        Follower {
            started: Instant::now(),
            phases: Vec::new(),
            last_line: String::new(),
            rolling: String::new(),
            jobs_running: HashSet::new(),
            jobs_finished: HashSet::new(),
        }
    }

    fn say(&self, text: &str) {
        println!("  [{:>5.1}s] {text}", self.started.elapsed().as_secs_f64());
    }

    fn on_cinder(&mut self, c: &Cinder, target: Release) -> Option<Ending> {
        let phase = phase_of(c);
        if self.phases.last().is_none_or(|(_, p)| *p != phase) {
            self.phases.push((self.started.elapsed(), phase.clone()));
            let shown = if phase.is_empty() {
                "steady state"
            } else {
                phase.as_str()
            };
            self.say(&format!("phase: {shown}"));
        }
        let status = c.status.as_ref()?;
        if status.rolling_workload != self.rolling {
            self.rolling = status.rolling_workload.clone();
            if !self.rolling.is_empty() {
                self.say(&format!("rolling: {}", self.rolling));
            }
        }
        // A status written for an older generation describes the spec before our
        // last patch: print it, but decide nothing on it.
        let current = status.observed_generation == c.metadata.generation;
        let (db_status, db_reason, db_message) = condition(c, "DatabaseReady")?;
        let line = format!("DatabaseReady={db_status} ({db_reason})");
        if line != self.last_line {
            self.say(&line);
            self.last_line = line;
        }
        if !current {
            return None;
        }
        if db_reason.ends_with("Failed") && db_status == "False" {
            return Some(Ending::Failed {
                phase,
                reason: db_reason,
                message: db_message,
            });
        }
        if let Some((_, reason, message)) =
            condition(c, "DeploymentsReady").filter(|(_, r, _)| r == "RolloutStalled")
        {
            return Some(Ending::Failed {
                phase,
                reason,
                message,
            });
        }
        let ready = condition(c, "Ready").is_some_and(|(s, _, _)| s == "True");
        let settled = status.upgrade_phase == CinderUpgradePhase::None
            && status.installed_release == target.to_string();
        (ready && settled).then_some(Ending::Installed)
    }

    fn on_job(&mut self, j: &Job) {
        let name = j.metadata.name.clone().unwrap_or_default();
        let verdict = j
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| {
                cs.iter()
                    .find_map(|c| match (c.type_.as_str(), c.status.as_str()) {
                        ("Complete" | "SuccessCriteriaMet", "True") => {
                            Some("succeeded".to_string())
                        }
                        ("Failed" | "FailureTarget", "True") => {
                            Some(format!("failed ({})", c.reason.clone().unwrap_or_default()))
                        }
                        _ => None,
                    })
            });
        let uid = j.metadata.uid.clone().unwrap_or_default();
        match verdict {
            Some(verdict) if self.jobs_finished.insert(uid.clone()) => {
                self.say(&format!("job {name}: {verdict}"))
            }
            None if j.status.as_ref().and_then(|s| s.active).unwrap_or(0) > 0
                && self.jobs_running.insert(uid) =>
            {
                self.say(&format!("job {name}: running"));
            }
            _ => {}
        }
    }

    /// Follows the namespace until the Cinder settles at `target` or fails.
    async fn follow(&mut self, client: &Client, target: Release) -> anyhow::Result<Ending> {
        let cinders = watcher::watcher(
            Api::<Cinder>::namespaced(client.clone(), NAMESPACE),
            watcher::Config::default(),
        )
        .applied_objects()
        .map(|c| c.map(|c| Seen::Cinder(Box::new(c))))
        .boxed();
        let jobs = watcher::watcher(
            Api::<Job>::namespaced(client.clone(), NAMESPACE),
            watcher::Config::default(),
        )
        .applied_objects()
        .map(|j| j.map(|j| Seen::Job(Box::new(j))))
        .boxed();
        let mut events = stream::select(cinders, jobs);
        let deadline = Instant::now() + LIMIT;
        loop {
            let next = tokio::time::timeout(
                deadline.saturating_duration_since(Instant::now()),
                events.next(),
            )
            .await
            .context("the upgrade did not finish in time")?;
            match next {
                Some(Ok(Seen::Cinder(c))) => {
                    if let Some(ending) = self.on_cinder(&c, target) {
                        return Ok(ending);
                    }
                }
                Some(Ok(Seen::Job(j))) => self.on_job(&j),
                Some(Err(e)) => tracing::debug!(error = %e, "watch error"),
                None => bail!("the watch ended"),
            }
        }
    }
}

async fn set_release(api: &Api<Cinder>, release: Release) -> anyhow::Result<()> {
    let patch = serde_json::json!({ "spec": { "openStackRelease": release.to_string(), "image": { "reference": { "tag": release.to_string() } } } });
    api.patch("cinder", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("setting release and image to {release}"))?;
    Ok(())
}

/// Upgrades `from` → `to`; on failure, aborts back to `from`. Returns the verdict.
pub async fn run(
    client: &Client,
    api: &Api<Cinder>,
    from: Release,
    to: Release,
) -> anyhow::Result<String> {
    println!(
        "Upgrading {from} → {to}: patching spec.openStackRelease and spec.image.reference.tag together."
    );
    let mut follower = Follower::new();
    set_release(api, to).await?;
    let ending = follower.follow(client, to).await?;
    let took = follower.started.elapsed();
    println!("Timeline:");
    print!("{}", render(&spans(&follower.phases, took)));
    match ending {
        Ending::Installed => Ok(format!(
            "VERDICT: upgraded {from} → {to} in {:.1}s; every phase passed and the Cinder is Ready at {to}.",
            took.as_secs_f64()
        )),
        Ending::Failed {
            phase,
            reason,
            message,
        } => {
            println!("The upgrade failed in {phase}: {reason}: {message}");
            println!(
                "Aborting: reverting spec.openStackRelease and spec.image.reference.tag to {from} in one patch."
            );
            let mut abort = Follower::new();
            set_release(api, from).await?;
            match abort.follow(client, from).await? {
                Ending::Installed => Ok(format!(
                    "VERDICT: upgrade {from} → {to} FAILED in {phase} ({reason}); aborted back to {from} in {:.1}s, Ready again.",
                    abort.started.elapsed().as_secs_f64()
                )),
                Ending::Failed { reason: again, .. } => Ok(format!(
                    "VERDICT: upgrade {from} → {to} FAILED in {phase} ({reason}); the abort did not recover ({again})."
                )),
            }
        }
    }
}
