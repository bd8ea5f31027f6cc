//! The demo's upgrade: patch release and image together, follow the phases,
//! the rolling workload, the pin and the Jobs live; on failure abort, or, past
//! the point of no return, clear the cause and retry; and sum up.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::{StreamExt, stream};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Event;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use ratchet_release::Release;
use ratchet_testenv::{RuleId, Scenarios};

use super::NAMESPACE;
use super::real::Counters;
use super::subject::{Service, observed_current};
use crate::resource_status::{condition, status_text};
use crate::timeline::{JobVerdict, job_verdict};

const LIMIT: Duration = Duration::from_secs(300);
/// With a client running: the longest the demo stays silent (a line with
/// the client's counters when nothing else happened).
const QUIET: Duration = Duration::from_secs(10);

enum Seen {
    Resource(Box<DynamicObject>),
    Job(Box<Job>),
    Event(Box<Event>),
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

/// Prints what changes until the upgrade settles or fails.
struct Follower {
    started: Instant,
    /// The phase last printed (`None` before the first status).
    phase: Option<String>,
    service: Service,
    /// A failure reported before this follow began (the phase being retried):
    /// not an ending until DatabaseReady has moved on from it.
    earlier_failure: Option<String>,
    last_line: String,
    rolling: String,
    pin: String,
    /// Job UIDs already announced as running, and as finished.
    jobs_running: HashSet<String>,
    jobs_finished: HashSet<String>,
    /// Events already printed, by name (Ratchet publishes each once).
    events_seen: HashSet<String>,
    /// DeploymentsReady as last printed after promotion (the second roll).
    second_roll: String,
    /// Whether this follow moves forward (a roll after promotion is then the
    /// second roll), not back (an abort's roll back).
    forward: bool,
    /// The running client's counters, printed beside every line.
    counters: Option<Counters>,
}

impl Follower {
    fn new(service: &Service, counters: Option<Counters>) -> Follower {
        Follower {
            counters,
            service: service.clone(),
            earlier_failure: None,
            started: Instant::now(),
            phase: None,
            last_line: String::new(),
            rolling: String::new(),
            pin: String::new(),
            jobs_running: HashSet::new(),
            jobs_finished: HashSet::new(),
            events_seen: HashSet::new(),
            second_roll: String::new(),
            forward: true,
        }
    }

    fn say(&self, text: &str) {
        let at = self.started.elapsed().as_secs_f64();
        match &self.counters {
            Some(counters) => println!("  [{at:>5.1}s] {text:<64} | load: {}", counters.line()),
            None => println!("  [{at:>5.1}s] {text}"),
        }
    }

    fn on_resource(&mut self, object: &DynamicObject, target: Release) -> Option<Ending> {
        object.data.get("status")?;
        let phase = status_text(&object.data, "upgradePhase");
        if self.phase.as_ref() != Some(&phase) {
            self.phase = Some(phase.clone());
            let shown = if phase.is_empty() {
                "steady state"
            } else {
                phase.as_str()
            };
            self.say(&format!("phase: {shown}"));
        }
        let rolling = status_text(&object.data, "rollingWorkload");
        if rolling != self.rolling {
            self.rolling = rolling;
            if !self.rolling.is_empty() {
                self.say(&format!("rolling: {}", self.rolling));
            }
        }
        let pin = status_text(&object.data, "pinnedRelease");
        if pin != self.pin {
            match (pin.is_empty(), self.pin.is_empty()) {
                (false, _) => self.say(&format!("new pods pinned to {pin} (pin_release_version)")),
                (true, false) => self.say("pin removed: new pods run unpinned"),
                (true, true) => {}
            }
            self.pin = pin;
        }
        // A status written for an older generation describes the spec before our
        // last patch: print it, but decide nothing on it.
        let current = observed_current(object);
        let (db_status, db_reason, db_message) = condition(&object.data, "DatabaseReady")?;
        let line = format!("DatabaseReady={db_status} ({db_reason})");
        if line != self.last_line {
            self.say(&line);
            self.last_line = line;
        }
        if !current {
            return None;
        }
        if self.earlier_failure.as_ref() == Some(&db_reason) {
            return None;
        }
        self.earlier_failure = None;
        if self.service.is_failure(&db_reason) && db_status == "False" {
            return Some(Ending::Failed {
                phase,
                reason: db_reason,
                message: db_message,
            });
        }
        if let Some((_, reason, message)) =
            condition(&object.data, "DeploymentsReady").filter(|(_, r, _)| r == "RolloutStalled")
        {
            return Some(Ending::Failed {
                phase,
                reason,
                message,
            });
        }
        let ready = condition(&object.data, "Ready").is_some_and(|(s, _, _)| s == "True");
        let promoted =
            phase.is_empty() && status_text(&object.data, "installedRelease") == target.to_string();
        let (rolled, _, rolling) = condition(&object.data, "DeploymentsReady")?;
        if promoted && rolled != "True" && rolling != self.second_roll {
            let what = if self.forward {
                "second roll, releasing the RPC pins"
            } else {
                "rolling back"
            };
            self.say(&format!(
                "{what}: {rolling} (Ready={})",
                if ready { "True" } else { "False" }
            ));
            self.second_roll = rolling;
        }
        (ready && promoted && rolled == "True").then_some(Ending::Installed)
    }

    /// Prints each of the resource's events once, as `kubectl get events` would.
    fn on_event(&mut self, event: &Event) {
        let named = event.metadata.name.clone().unwrap_or_default();
        let about = &event.involved_object;
        if about.name.as_deref() != Some(self.service.name())
            || about.kind.as_deref() != Some(self.service.kind())
            || !self.events_seen.insert(named)
        {
            return;
        }
        self.say(&format!(
            "event {} {}: {}",
            event.type_.as_deref().unwrap_or_default(),
            event.reason.as_deref().unwrap_or_default(),
            event.message.as_deref().unwrap_or_default()
        ));
    }

    fn on_job(&mut self, j: &Job) {
        let name = j.metadata.name.clone().unwrap_or_default();
        let verdict = match job_verdict(j) {
            JobVerdict::Running => None,
            JobVerdict::Succeeded => Some("succeeded".to_string()),
            JobVerdict::Failed(reason) => Some(format!("failed ({reason})")),
        };
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

    /// Follows the namespace until the resource settles at `target` or fails.
    async fn follow(
        &mut self,
        client: &Client,
        api: &Api<DynamicObject>,
        target: Release,
    ) -> anyhow::Result<Ending> {
        let resources = watcher::watcher(api.clone(), watcher::Config::default())
            .applied_objects()
            .map(|o| o.map(|o| Seen::Resource(Box::new(o))))
            .boxed();
        let jobs = in_namespace(client, |j: Job| Seen::Job(Box::new(j)));
        let events = in_namespace(client, |e: Event| Seen::Event(Box::new(e)));
        let mut events = stream::select_all([resources, jobs, events]);
        // Real processes take minutes where simulated ones take seconds.
        let limit = if self.counters.is_some() {
            3 * LIMIT
        } else {
            LIMIT
        };
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let wait = match &self.counters {
                Some(_) => left.min(QUIET),
                None => left,
            };
            let Ok(next) = tokio::time::timeout(wait, events.next()).await else {
                if Instant::now() >= deadline {
                    bail!("the upgrade did not finish within {}s", limit.as_secs());
                }
                self.say("…");
                continue;
            };
            match next {
                Some(Ok(Seen::Resource(o))) => {
                    if let Some(ending) = self.on_resource(&o, target) {
                        return Ok(ending);
                    }
                }
                Some(Ok(Seen::Job(j))) => self.on_job(&j),
                Some(Ok(Seen::Event(e))) => self.on_event(&e),
                Some(Err(e)) => tracing::debug!(error = %e, "watch error"),
                None => bail!("the watch ended"),
            }
        }
    }
}

/// Every change of one kind of object in the namespace, as `seen`.
fn in_namespace<K>(
    client: &Client,
    seen: fn(K) -> Seen,
) -> futures::stream::BoxStream<'static, Result<Seen, watcher::Error>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    watcher::watcher(
        Api::<K>::namespaced(client.clone(), NAMESPACE),
        watcher::Config::default(),
    )
    .applied_objects()
    .map(move |o| o.map(seen))
    .boxed()
}

/// What the namespace already holds, by `key`.
async fn existing<K>(
    client: &Client,
    key: fn(&K) -> Option<String>,
) -> anyhow::Result<HashSet<String>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let listed = Api::<K>::namespaced(client.clone(), NAMESPACE)
        .list(&Default::default())
        .await
        .with_context(|| format!("listing {}s", K::kind(&())))?;
    Ok(listed.items.iter().filter_map(key).collect())
}

async fn set_release(
    service: &Service,
    api: &Api<DynamicObject>,
    release: Release,
) -> anyhow::Result<()> {
    api.patch(
        service.name(),
        &PatchParams::default(),
        &Patch::Merge(&service.release_patch(release)),
    )
    .await
    .with_context(|| format!("setting release and image to {release}"))?;
    Ok(())
}

/// Upgrades `from` → `to`; on failure, aborts back to `from`, or, past the point
/// of no return, lifts the `injected` failure and retries the failed phase.
/// Prints the timeline `ratchet timeline` reads from the cluster, and returns
/// the verdict.
pub async fn run(
    client: &Client,
    service: &Service,
    api: &Api<DynamicObject>,
    from: Release,
    to: Release,
    injected: Option<(&Scenarios, RuleId)>,
    counters: Option<Counters>,
) -> anyhow::Result<String> {
    let verdict = upgrade_and_recover(client, service, api, from, to, injected, counters).await?;
    let name = service.name();
    println!("Timeline (ratchet timeline {name}/{name} -n {NAMESPACE}):");
    print!(
        "{}",
        crate::timeline::table(client, name, NAMESPACE, name).await?
    );
    Ok(verdict)
}

async fn upgrade_and_recover(
    client: &Client,
    service: &Service,
    api: &Api<DynamicObject>,
    from: Release,
    to: Release,
    injected: Option<(&Scenarios, RuleId)>,
    counters: Option<Counters>,
) -> anyhow::Result<String> {
    let (kind, field) = (service.kind(), service.tag_field());
    println!("Upgrading {from} → {to}: patching spec.openStackRelease and {field} together.");
    let mut follower = Follower::new(service, counters.clone());
    // The install's events and Jobs are history: print only what the upgrade adds.
    follower.events_seen = existing::<Event>(client, |e| e.metadata.name.clone()).await?;
    follower.jobs_finished = existing::<Job>(client, |j| j.metadata.uid.clone()).await?;
    set_release(service, api, to).await?;
    let ending = follower.follow(client, api, to).await?;
    let took = follower.started.elapsed();
    let Ending::Failed {
        phase,
        reason,
        message,
    } = ending
    else {
        return Ok(format!(
            "VERDICT: upgraded {from} → {to} in {:.1}s; every phase passed and the {kind} is Ready at {to}.",
            took.as_secs_f64()
        ));
    };
    println!("The upgrade failed in {phase}: {reason}: {message}");
    let mut next = Follower::new(service, counters);
    next.events_seen = follower.events_seen.clone();
    if service.abortable(&phase) {
        println!("Aborting: reverting spec.openStackRelease and {field} to {from} in one patch.");
        next.forward = false;
        set_release(service, api, from).await?;
        return Ok(match next.follow(client, api, from).await? {
            Ending::Installed => format!(
                "VERDICT: upgrade {from} → {to} FAILED in {phase} ({reason}); aborted back to {from} in {:.1}s, Ready again.",
                next.started.elapsed().as_secs_f64()
            ),
            Ending::Failed { reason: again, .. } => format!(
                "VERDICT: upgrade {from} → {to} FAILED in {phase} ({reason}); the abort did not recover ({again})."
            ),
        });
    }
    // Past the point of no return the way out is forward: fix the cause, then
    // delete the failed Job so the phase runs it again.
    println!(
        "{phase} is past the point of no return: no abort. Fixing the cause and retrying the phase."
    );
    if let Some((scenarios, rule)) = injected {
        scenarios.remove(rule);
    }
    next.earlier_failure = Some(reason.clone());
    let jobs = Api::<Job>::namespaced(client.clone(), NAMESPACE);
    for job in service.jobs_of(&phase) {
        match jobs.delete(&job, &DeleteParams::background()).await {
            Ok(_) => println!("Deleted the failed Job {job}."),
            // The phase's Jobs after the failed one were never created.
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e).with_context(|| format!("deleting the failed Job {job}")),
        }
    }
    Ok(match next.follow(client, api, to).await? {
        Ending::Installed => format!(
            "VERDICT: upgrade {from} → {to} FAILED in {phase} ({reason}); retried after the fix and completed in {:.1}s more: the {kind} is Ready at {to}.",
            next.started.elapsed().as_secs_f64()
        ),
        Ending::Failed { reason: again, .. } => format!(
            "VERDICT: upgrade {from} → {to} FAILED in {phase} ({reason}); the retry failed too ({again})."
        ),
    })
}
