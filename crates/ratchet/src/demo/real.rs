//! `ratchet demo --real`: the service's real processes (its images from the
//! process kubelet's catalogue, built from PyPI on first use), MariaDB and
//! RabbitMQ as real pods, and a client that uses the service's API for the
//! whole upgrade from a network namespace on the pod network. Its counters
//! print beside the phases; the figures and the verdict say how many requests
//! failed and what of what the client made was lost.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail, ensure};
use futures::{StreamExt, stream};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use kube::api::PostParams;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::testing::witness::settled;
use ratchet_services::keystone::v1alpha1::Keystone;
use ratchet_testenv::ClientNetns;
use ratchet_testenv::backing::{self, Provisioned};
use ratchet_testenv::load::{self, AnyLoad, Made, SharedTally, percentile};
use ratchet_testenv::prerequisites::{self, Machine, Purpose, VENV_IMAGE_BYTES, Verdict};
use ratchet_testenv::process_kubelet::images::{self, Catalogue, ImageKind};
use ratchet_testenv::wait::until;
use serde_json::Value;

use super::NAMESPACE;
use super::subject::{KEYSTONE, MEMCACHED, Service, password_secret};
use crate::timeline::{JobVerdict, Timeline, job_verdict};

/// The quiet window before the upgrade: the client's latencies in steady state.
pub const STEADY_WINDOW: Duration = Duration::from_secs(20);
/// How long the client may take, once stopped, to see what it made settle.
const SETTLE: Duration = Duration::from_secs(60);

/// Every image a real run of `service` at `releases` needs: its own,
/// MariaDB's and RabbitMQ's, and when it authenticates, Keystone's (at the
/// first release: Keystone stays there) and memcached's.
pub fn images_of(service: &Service, releases: &[String]) -> Vec<String> {
    let mut images: Vec<String> = releases
        .iter()
        .map(|r| format!("{}:{r}", images::repository(service.name())))
        .collect();
    images.extend([
        backing::MARIADB_IMAGE.to_string(),
        backing::RABBITMQ_IMAGE.to_string(),
    ]);
    if let (true, Some(first)) = (service.authenticated(), releases.first()) {
        images.push(format!("{}:{first}", images::repository(KEYSTONE)));
        images.push(backing::MEMCACHED_IMAGE.to_string());
    }
    images
}

/// Checks what a real run needs of this machine before anything starts:
/// root, the Debian packages real pods need (`testenv/debian-packages.txt`:
/// the sandbox, the pod network, python3.11 with venv support, MariaDB,
/// RabbitMQ), and room in the cache for the images still to build. As root
/// it installs missing packages; otherwise, or without room, it stops with
/// one line saying what to do.
pub async fn check_machine(images: Vec<String>) -> anyhow::Result<()> {
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let catalogue = Catalogue::load()?;
        let to_build = images
            .iter()
            .filter(|i| catalogue.entry(i).is_ok_and(|e| e.kind == ImageKind::Venv))
            .filter(|i| !catalogue.is_cached(i))
            .count();
        let needed = VENV_IMAGE_BYTES.saturating_mul(u64::try_from(to_build)?);
        let inspect = || {
            Machine::inspect(&[Purpose::Pods], &images::default_cache_dir())
                .map_err(anyhow::Error::msg)
        };
        match prerequisites::verdict(&inspect()?, needed, &as_root()) {
            Verdict::Ready => Ok(()),
            Verdict::Stop(line) => bail!("demo --real {line}"),
            Verdict::Install(packages) => {
                prerequisites::install(&packages, "ratchet demo --real")
                    .map_err(anyhow::Error::msg)?;
                let still = inspect()?.missing;
                ensure!(
                    still.is_empty(),
                    "demo --real: still missing after apt-get installed them: {}",
                    still.join(" ")
                );
                Ok(())
            }
        }
    })
    .await?
}

/// This command line again, as root: `sudo` keeping the environment, and
/// `PATH`, where cargo and Go usually are, which sudo would reset.
fn as_root() -> String {
    let words: Vec<String> = std::env::args_os()
        .map(|arg| shell_word(&arg.to_string_lossy()))
        .collect();
    format!("sudo -E env \"PATH=$PATH\" {}", words.join(" "))
}

/// `word` as a shell reads it back: quoted when it holds anything special.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Builds (or finds cached) every image a real run of `service` from `from`
/// to `to` needs, MariaDB's and RabbitMQ's too, with the builds' progress on
/// stderr: before any cluster starts, so no timeout runs while pip does.
pub async fn prepare_images(images: Vec<String>) -> anyhow::Result<()> {
    println!(
        "Preparing the real images ({}); a first run builds each from PyPI (1–2 minutes each, pip's progress below).",
        images.join(", ")
    );
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let catalogue = Catalogue::load()?;
        for image in &images {
            catalogue
                .resolve(image)
                .map_err(|e| anyhow::anyhow!("{}", e.0))?;
        }
        Ok(())
    })
    .await?
}

/// MariaDB, RabbitMQ, Secrets and claims as the resource's spec asks.
pub async fn provision(
    client: &Client,
    service: &Service,
    manifest: &Value,
) -> anyhow::Result<Provisioned> {
    let also: &[&str] = if service.authenticated() {
        &[KEYSTONE]
    } else {
        &[]
    };
    let provisioned =
        backing::provision(client, NAMESPACE, service.name(), &manifest["spec"], also)
            .await
            .context("starting the database and message bus the service needs")?;
    for (name, backing) in [
        ("MariaDB", &provisioned.database),
        ("RabbitMQ", &provisioned.bus),
    ] {
        if let Some(backing) = backing {
            println!(
                "{name} running as pod {NAMESPACE}/{}, found by the services at {} (ClusterIP {}).",
                backing.pod,
                backing.host(),
                backing.cluster_ip
            );
        }
    }
    Ok(provisioned)
}

/// The service user's password in a real run (the demo's own cluster only).
const SERVICE_PASSWORD: &str = "ratchet-demo-service";
/// How long the demo's Keystone may take to install (a cold db sync and
/// bootstrap on two cores).
const KEYSTONE_INSTALL: Duration = Duration::from_secs(600);

/// The Keystone an authenticating service runs beside, at `release`, on the
/// run's MariaDB: its Secrets (database URL; admin password
/// [`backing::SECRET_VALUE`], which the client's admin logs in with), the
/// service user's password Secret and a memcached for keystonemiddleware's
/// token cache. Waits until Keystone is Ready: the service's registration
/// then succeeds at once.
pub async fn keystone(
    client: &Client,
    service: &Service,
    release: &str,
    provisioned: &Provisioned,
) -> anyhow::Result<()> {
    let db = provisioned
        .database
        .as_ref()
        .context("the service names a database")?;
    let example = Keystone::real_example(KEYSTONE, release, &images::repository(KEYSTONE))
        .context("Keystone has a real example")?;
    let keystone: Keystone = serde_json::from_value(example.manifest)?;
    let (database, admin) = (&keystone.spec.database, &keystone.spec.admin_password);
    let password = password_secret(service.name());
    for (name, key, value) in [
        (
            database.secret_name.as_str(),
            database.key.as_str(),
            db.mysql_url(KEYSTONE),
        ),
        (
            admin.secret_name.as_str(),
            admin.key.as_str(),
            backing::SECRET_VALUE.into(),
        ),
        (password.as_str(), "password", SERVICE_PASSWORD.into()),
    ] {
        backing::apply_secret(client, NAMESPACE, name, key, &value).await?;
    }
    let cache = backing::memcached(client, NAMESPACE, MEMCACHED).await?;
    let api = Api::<Keystone>::namespaced(client.clone(), NAMESPACE);
    api.create(&PostParams::default(), &keystone).await?;
    println!(
        "Keystone {NAMESPACE}/{KEYSTONE} installing at {release} ({}): {} authenticates every request through it, tokens cached in memcached at {}.",
        example.shape,
        service.kind(),
        cache.memcached_server()
    );
    let started = Instant::now();
    until(
        &api,
        KEYSTONE,
        KEYSTONE_INSTALL,
        "installed and Ready",
        settled::<Keystone>(release),
    )
    .await
    .context("the demo's Keystone")?;
    println!(
        "Keystone is Ready after {:.1}s.",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The client using the service's API, and the namespace it runs in (which
/// must outlive it).
pub struct RunningClient {
    load: AnyLoad,
    /// When the client started: its steady-state window begins here.
    started: SystemTime,
    _netns: ClientNetns,
}

impl RunningClient {
    /// Starts the service's client against its API Service from `netns` (a
    /// network namespace on the pod network).
    pub async fn start(
        client: &Client,
        service: &Service,
        netns: ClientNetns,
    ) -> anyhow::Result<RunningClient> {
        let keystone = match service.authenticated() {
            true => Some(load::cluster_address(client, NAMESPACE, KEYSTONE, "api").await?),
            false => None,
        };
        let load = load::start_for(
            service.name(),
            client,
            &netns,
            NAMESPACE,
            service.name(),
            // What `provision` wrote into every Secret but the URLs.
            backing::SECRET_VALUE,
            keystone,
        )
        .await?
        .with_context(|| format!("no load client for {}", service.kind()))?;
        println!(
            "Load client started at {} on the pod network: it uses the {} API through its Service's ClusterIP for the whole upgrade.",
            netns.ip(),
            service.kind()
        );
        Ok(RunningClient {
            load,
            started: SystemTime::now(),
            _netns: netns,
        })
    }

    pub fn counters(&self) -> Counters {
        Counters(self.load.tally())
    }

    /// Stops the client and sums up: requests and failures, latencies in
    /// steady state (from the client's start to `upgrade.0`) and during the
    /// upgrade, and what it made.
    pub async fn finish(self, upgrade: (SystemTime, SystemTime)) -> anyhow::Result<LoadFigures> {
        let tally = self.load.tally();
        let made = self.load.stop(SETTLE).await?;
        let tally = tally
            .lock()
            .map_err(|_| anyhow::anyhow!("the load's tally is poisoned"))?
            .clone();
        let steady = tally.latencies_ms(self.started, upgrade.0);
        let during = tally.latencies_ms(upgrade.0, upgrade.1);
        Ok(LoadFigures {
            requests: tally.requests(),
            failures: tally.failures().iter().map(|f| f.to_string()).collect(),
            steady_ms: (percentile(steady.clone(), 0.5), percentile(steady, 0.99)),
            upgrade_ms: (percentile(during.clone(), 0.5), percentile(during, 0.99)),
            made,
            upgrade_s: None,
            work_s: None,
        })
    }
}

/// The client's live counters, for the lines the demo prints.
#[derive(Clone)]
pub struct Counters(SharedTally);

impl Counters {
    /// `1234 requests, 0 failed`.
    pub fn line(&self) -> String {
        let (requests, failed) = self
            .0
            .lock()
            .map(|t| (t.requests(), t.failures().len()))
            .unwrap_or_default();
        format!("{requests} requests, {failed} failed")
    }
}

/// What the client saw.
#[derive(Clone, Debug)]
pub struct LoadFigures {
    pub requests: usize,
    pub failures: Vec<String>,
    /// (p50, p99) in milliseconds.
    pub steady_ms: (f64, f64),
    pub upgrade_ms: (f64, f64),
    pub made: Made,
    /// How long the upgrade took (second roll included), and how much of
    /// that time a Job or a workload roll was running.
    pub upgrade_s: Option<f64>,
    pub work_s: Option<f64>,
}

impl LoadFigures {
    /// The upgrade's duration (`wall`, from `began`) and the part of it
    /// covered by its Jobs (from its timeline, which starts at the
    /// `UpgradeInitiated` event, within a pass of `began`) or its rolls (from
    /// a [`RollClock`]). Overlaps count once, so the rest is Ratchet's own.
    pub fn with_work(
        mut self,
        began: Instant,
        wall: Duration,
        timeline: Option<&Timeline>,
        rolls: &[Roll],
    ) -> LoadFigures {
        let wall = wall.as_secs_f64();
        self.upgrade_s = Some(wall);
        self.work_s = timeline.map(|t| {
            let jobs = t.jobs.iter().map(|job| (job.start, job.end));
            let rolls = rolls.iter().map(|roll| {
                let since = |at: Instant| at.saturating_duration_since(began).as_secs_f64();
                (since(roll.began), since(roll.ended))
            });
            covered(jobs.chain(rolls), wall)
        });
        self
    }

    /// One line of figures, as the benchmarks record them.
    pub fn line(&self) -> String {
        let timing = match (self.upgrade_s, self.work_s) {
            (Some(wall), Some(work)) => format!(
                " upgrade={wall:.1}s jobs+rolls={work:.1}s operator={:.1}s",
                wall - work
            ),
            _ => String::new(),
        };
        format!(
            "FIGURES requests={} failed={} steady p50={:.1}ms p99={:.1}ms upgrade p50={:.1}ms p99={:.1}ms lost={}{timing}",
            self.requests,
            self.failures.len(),
            self.steady_ms.0,
            self.steady_ms.1,
            self.upgrade_ms.0,
            self.upgrade_ms.1,
            self.made.lost.len(),
        )
    }

    /// The load's part of the verdict.
    pub fn verdict(&self) -> String {
        let lost = match self.made.lost.len() {
            0 => "nothing lost".to_string(),
            n => format!("{n} LOST: {}", self.made.lost.join("; ")),
        };
        format!(
            "Under load: {} requests, {} failed; {}; {lost}.",
            self.requests,
            self.failures.len(),
            self.made.summary
        )
    }
}

/// One span of an upgrade's own work: a workload's roll, from when its new
/// template was seen to when every replica was updated and ready again, or a
/// Job's run (`workload` is then `job/<name>`).
#[derive(Clone, Debug, PartialEq)]
pub struct Roll {
    pub workload: String,
    pub began: Instant,
    pub ended: Instant,
}

/// Seconds of `0..wall` inside at least one of `spans` (start, end).
fn covered(spans: impl Iterator<Item = (f64, f64)>, wall: f64) -> f64 {
    let mut spans: Vec<(f64, f64)> = spans
        .map(|(start, end)| (start.clamp(0.0, wall), end.clamp(0.0, wall)))
        .filter(|(start, end)| end > start)
        .collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut total, mut reached) = (0.0, 0.0_f64);
    for (start, end) in spans {
        total += (end - start.max(reached)).max(0.0);
        reached = reached.max(end);
    }
    total
}

/// Watches the namespace's Deployments and StatefulSets and times every roll
/// (the second roll's too), and its Jobs and times each from its first sight
/// running to its verdict: the part of an upgrade that is the workloads' and
/// Jobs' own; the rest of its wall time is Ratchet's. Jobs are timed here, not
/// read afterwards, because a drain Job of the second roll replaces the first
/// roll's of the same name.
pub struct RollClock {
    rolls: Arc<Mutex<Vec<Roll>>>,
    task: tokio::task::JoinHandle<()>,
}

impl RollClock {
    pub fn start(client: &Client) -> RollClock {
        let rolls: Arc<Mutex<Vec<Roll>>> = Arc::default();
        let deployments = watcher::watcher(
            Api::<Deployment>::namespaced(client.clone(), NAMESPACE),
            watcher::Config::default(),
        )
        .applied_objects()
        .map(|d| d.map(|d| rollout_of_deployment(&d)))
        .boxed();
        let sets = watcher::watcher(
            Api::<StatefulSet>::namespaced(client.clone(), NAMESPACE),
            watcher::Config::default(),
        )
        .applied_objects()
        .map(|s| s.map(|s| rollout_of_stateful_set(&s)))
        .boxed();
        let jobs = watcher::watcher(
            Api::<Job>::namespaced(client.clone(), NAMESPACE),
            watcher::Config::default(),
        )
        .applied_objects()
        .map(|j| j.map(|j| Seen::Job(run_of_job(&j))))
        .boxed();
        let into = rolls.clone();
        let task = tokio::spawn(async move {
            let workloads = stream::select(deployments, sets).map(|r| r.map(Seen::Workload));
            let mut seen = stream::select(workloads, jobs);
            let (mut timer, mut job_timer) = (RollTimer::default(), JobTimer::default());
            while let Some(next) = seen.next().await {
                let span = match next {
                    Ok(Seen::Workload(rollout)) => timer.observe(rollout, Instant::now()),
                    Ok(Seen::Job(run)) => job_timer.observe(run, Instant::now()),
                    Err(_) => None,
                };
                if let Some(span) = span
                    && let Ok(mut rolls) = into.lock()
                {
                    rolls.push(span);
                }
            }
        });
        RollClock { rolls, task }
    }

    /// Every roll finished so far.
    pub fn stop(self) -> Vec<Roll> {
        self.task.abort();
        self.rolls.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// A change the clock watches.
enum Seen {
    Workload(Rollout),
    Job(JobRun),
}

/// What a Job's status says of its run.
#[derive(Clone, Debug, PartialEq)]
struct JobRun {
    uid: String,
    name: String,
    finished: bool,
}

fn run_of_job(j: &Job) -> JobRun {
    JobRun {
        uid: j.metadata.uid.clone().unwrap_or_default(),
        name: j.name_any(),
        finished: job_verdict(j) != JobVerdict::Running,
    }
}

/// Times a Job from its first sight unfinished to its verdict; a Job first
/// seen finished ran before the clock started and is not counted.
#[derive(Default)]
struct JobTimer {
    running: HashMap<String, Instant>,
}

impl JobTimer {
    fn observe(&mut self, run: JobRun, now: Instant) -> Option<Roll> {
        if !run.finished {
            self.running.entry(run.uid).or_insert(now);
            return None;
        }
        self.running.remove(&run.uid).map(|began| Roll {
            workload: format!("job/{}", run.name),
            began,
            ended: now,
        })
    }
}

/// What a workload's status says of its rollout.
#[derive(Clone, Debug, PartialEq)]
struct Rollout {
    workload: String,
    generation: i64,
    /// Every replica of the current template updated and ready, and no other.
    complete: bool,
}

fn rollout_of_deployment(d: &Deployment) -> Rollout {
    let wanted = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let status = d.status.clone().unwrap_or_default();
    Rollout {
        workload: d.name_any(),
        generation: d.metadata.generation.unwrap_or_default(),
        complete: status.observed_generation == d.metadata.generation
            && status.updated_replicas == Some(wanted)
            && status.ready_replicas == Some(wanted)
            && status.replicas == Some(wanted),
    }
}

fn rollout_of_stateful_set(s: &StatefulSet) -> Rollout {
    let wanted = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let status = s.status.clone().unwrap_or_default();
    Rollout {
        workload: s.name_any(),
        generation: s.metadata.generation.unwrap_or_default(),
        complete: status.observed_generation == s.metadata.generation
            && status.updated_replicas == Some(wanted)
            && status.ready_replicas == Some(wanted)
            && status.current_revision == status.update_revision,
    }
}

/// Opens a roll when a workload's generation moves on, closes it when its
/// rollout is complete (pure, so its rules are tested without a cluster).
#[derive(Default)]
struct RollTimer {
    /// Per workload: the generation last seen and when its open roll began.
    workloads: HashMap<String, (i64, Option<Instant>)>,
}

impl RollTimer {
    fn observe(&mut self, rollout: Rollout, now: Instant) -> Option<Roll> {
        let entry = self
            .workloads
            .entry(rollout.workload.clone())
            .or_insert((rollout.generation, None));
        if rollout.generation > entry.0 {
            entry.0 = rollout.generation;
            entry.1.get_or_insert(now);
        }
        match entry.1 {
            Some(began) if rollout.complete => {
                entry.1 = None;
                Some(Roll {
                    workload: rollout.workload,
                    began,
                    ended: now,
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollout(generation: i64, complete: bool) -> Rollout {
        Rollout {
            workload: "cinder-scheduler".into(),
            generation,
            complete,
        }
    }

    #[test]
    fn a_job_is_timed_from_its_first_sight_running_to_its_verdict() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let run = |uid: &str, finished| JobRun {
            uid: uid.into(),
            name: "cinder-drain-cinder-volume-a".into(),
            finished,
        };
        let mut timer = JobTimer::default();
        assert_eq!(
            timer.observe(run("before", true), at(0)),
            None,
            "ran before the clock"
        );
        assert_eq!(timer.observe(run("first", false), at(10)), None);
        assert_eq!(timer.observe(run("first", false), at(12)), None);
        let first = timer.observe(run("first", true), at(15));
        assert_eq!(
            first.map(|r| (r.workload, r.began, r.ended)),
            Some((
                "job/cinder-drain-cinder-volume-a".to_string(),
                at(10),
                at(15)
            ))
        );
        // The same name again (the second roll's Job): a span of its own.
        assert_eq!(timer.observe(run("second", false), at(40)), None);
        let second = timer.observe(run("second", true), at(46));
        assert_eq!(second.map(|r| (r.began, r.ended)), Some((at(40), at(46))));
        assert_eq!(
            timer.observe(run("second", true), at(50)),
            None,
            "counted once"
        );
    }

    #[test]
    fn a_roll_runs_from_a_new_generation_to_a_complete_rollout() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut timer = RollTimer::default();
        // First sight: the install, not a roll.
        assert_eq!(timer.observe(rollout(1, true), at(0)), None);
        // A new template: the roll begins; status updates while it runs.
        assert_eq!(timer.observe(rollout(2, false), at(10)), None);
        assert_eq!(timer.observe(rollout(2, false), at(15)), None);
        // A newer template mid-roll (the second roll's) keeps the first start.
        assert_eq!(timer.observe(rollout(3, false), at(20)), None);
        let done = timer.observe(rollout(3, true), at(40));
        assert_eq!(
            done,
            Some(Roll {
                workload: "cinder-scheduler".into(),
                began: at(10),
                ended: at(40),
            })
        );
        // Complete again, nothing new: no second count.
        assert_eq!(timer.observe(rollout(3, true), at(41)), None);
    }

    #[test]
    fn overlapping_work_counts_once_and_only_inside_the_upgrade() {
        let spans = [
            (0.0, 3.0),
            (2.0, 5.0),
            (10.0, 12.0),
            (11.0, 11.5),
            (-4.0, 1.0),
        ];
        assert_eq!(covered(spans.into_iter(), 100.0), 7.0);
        // Work after the upgrade ended (a trailing sync) is cut at its end.
        assert_eq!(covered([(90.0, 110.0)].into_iter(), 100.0), 10.0);
        assert_eq!(covered(std::iter::empty(), 100.0), 0.0);
    }

    #[test]
    fn the_command_to_run_as_root_reads_back_as_typed() {
        assert_eq!(shell_word("--service"), "--service");
        assert_eq!(
            shell_word("/work/target/debug/ratchet"),
            "/work/target/debug/ratchet"
        );
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
