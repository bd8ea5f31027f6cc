//! A full Cinder upgrade with instant simulated pods: wall time, the operator's
//! reaction time to each trigger (a phase Job completing, a rollout completing),
//! and the API requests the operator made.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use futures::{StreamExt, stream};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_testenv::wait::until;
use ratchet_testenv::{Behaviour, PodSelector};

use crate::setup::{Bench, REPO, mean_reconcile_seconds, settled_at, slow_reconciles};
use crate::stats::summary;

#[derive(Args)]
pub struct UpgradeArgs {
    /// Upgrades to measure (each in its own namespace).
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// Upgrades run first and not measured: a freshly started API server pays
    /// first-use costs on its first requests of a kind (its first Job delete
    /// took 63 ms beside a status write of 79 ms, the slowest reaction of
    /// three runs in a row, each time in the first upgrade), which a cluster
    /// an operator joins has long paid.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Volume back ends of the Cinder (b1, b2, …).
    #[arg(long, default_value_t = 1)]
    back_ends: usize,
    /// `spec.upgrade.maxParallel`: back ends restarted at once (unset: the default, 1).
    #[arg(long)]
    max_parallel: Option<u32>,
    /// Milliseconds a started pod takes to be Ready (0: at once). A real worker
    /// needs a heartbeat: batching matters only when pods take time.
    #[arg(long, default_value_t = 0)]
    ready_delay_ms: u64,
}

/// The roll's workloads in order, when they roll strictly one after another.
fn roll_order(back_ends: &[String]) -> Vec<String> {
    std::iter::once("cinder-scheduler".to_string())
        .chain(back_ends.iter().map(|b| format!("cinder-volume-{b}")))
        .chain(["cinder-backup".to_string(), "cinder".to_string()])
        .collect()
}

/// What the benchmark saw, when.
#[derive(Debug)]
enum Seen {
    JobComplete(String),
    RolloutComplete(String),
    TemplateChanged(String, String),
    Phase(String, String),
}

fn phase_name(c: &Cinder) -> Option<(String, String)> {
    let s = c.status.as_ref()?;
    let phase = serde_json::to_value(s.upgrade_phase)
        .ok()?
        .as_str()?
        .to_string();
    Some((phase, s.installed_release.clone()))
}

/// A workload's name, image and whether it is completely rolled out, for either
/// kind (Cinder's API is a Deployment, its other services StatefulSets).
fn workload_state(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    template: Option<&k8s_openapi::api::core::v1::PodTemplateSpec>,
    want: i32,
    counts: [Option<i32>; 3],
    observed_generation: Option<i64>,
) -> (String, String, bool) {
    let image = template
        .and_then(|t| t.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    let done = observed_generation == meta.generation && counts.iter().all(|c| *c == Some(want));
    (meta.name.clone().unwrap_or_default(), image, done)
}

fn deployment_state(d: &Deployment) -> (String, String, bool) {
    let s = d.status.clone().unwrap_or_default();
    workload_state(
        &d.metadata,
        d.spec.as_ref().map(|s| &s.template),
        d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
        [s.updated_replicas, s.available_replicas, s.replicas],
        s.observed_generation,
    )
}

fn stateful_set_state(set: &StatefulSet) -> (String, String, bool) {
    let s = set.status.clone().unwrap_or_default();
    let (name, image, counted) = workload_state(
        &set.metadata,
        set.spec.as_ref().map(|s| &s.template),
        set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
        [s.updated_replicas, s.available_replicas, Some(s.replicas)],
        s.observed_generation,
    );
    (
        name,
        image,
        counted && s.current_revision == s.update_revision,
    )
}

/// Watches Jobs, Deployments and the Cinder in `ns`, timestamping what matters.
async fn record(
    client: Client,
    ns: String,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> Vec<(Instant, Seen)> {
    let jobs = watcher::watcher(
        Api::<Job>::namespaced(client.clone(), &ns),
        watcher::Config::default(),
    )
    .applied_objects()
    .filter_map(|j| async move {
        let j = j.ok()?;
        let done = j
            .status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            // The Job controller's success verdict comes first; Complete follows
            // once the pod is gone. The operator may act on either.
            .any(|c| {
                (c.type_ == "Complete" || c.type_ == "SuccessCriteriaMet") && c.status == "True"
            });
        done.then(|| Seen::JobComplete(j.metadata.name.clone().unwrap_or_default()))
    })
    .boxed();
    let seen = |(name, image, done): (String, String, bool)| {
        let mut out = vec![Seen::TemplateChanged(name.clone(), image.clone())];
        if done {
            out.push(Seen::RolloutComplete(format!("{name}@{image}")));
        }
        stream::iter(out)
    };
    let deployments = watcher::watcher(
        Api::<Deployment>::namespaced(client.clone(), &ns),
        watcher::Config::default(),
    )
    .applied_objects()
    .filter_map(|d| async move { d.ok() })
    .flat_map(move |d| seen(deployment_state(&d)))
    .boxed();
    let sets = watcher::watcher(
        Api::<StatefulSet>::namespaced(client.clone(), &ns),
        watcher::Config::default(),
    )
    .applied_objects()
    .filter_map(|s| async move { s.ok() })
    .flat_map(move |s| seen(stateful_set_state(&s)))
    .boxed();
    let cinders = watcher::watcher(
        Api::<Cinder>::namespaced(client, &ns),
        watcher::Config::default(),
    )
    .applied_objects()
    .filter_map(|c| async move { phase_name(&c.ok()?).map(|(p, i)| Seen::Phase(p, i)) })
    .boxed();
    let mut all = stream::select_all([jobs, deployments, sets, cinders]).take_until(stop);
    let mut seen = Vec::new();
    while let Some(event) = all.next().await {
        seen.push((Instant::now(), event));
    }
    seen
}

/// Recognises the event that answers a trigger.
type Reaction<'a> = &'a dyn Fn(&Seen) -> bool;

/// One trigger and the operator's reaction to it.
struct Reacted {
    what: String,
    triggered: Instant,
    took: Duration,
}

/// Reaction times: from each trigger to the reaction the operator owes it (the
/// first time that reaction is seen at all; a reaction seen before the trigger,
/// through the other watch, counts as zero).
fn reactions(seen: &[(Instant, Seen)], target: &str, roll: &[String]) -> Vec<Reacted> {
    let first = |from: Instant, pred: Reaction| {
        seen.iter()
            .find(|(t, s)| *t >= from && pred(s))
            .map(|(t, _)| *t)
    };
    let mut out = Vec::new();
    let target_image = format!("{REPO}:{target}");
    let job_reactions: [(&str, Reaction); 3] = [
        (
            "cinder-db-expand",
            &|s| matches!(s, Seen::Phase(p, _) if p == "Migrating" || p == "RollingUpdate"),
        ),
        (
            "cinder-db-migrate",
            &|s| matches!(s, Seen::Phase(p, _) if p == "RollingUpdate"),
        ),
        (
            "cinder-db-contract",
            &|s| matches!(s, Seen::Phase(p, i) if p.is_empty() && i == target),
        ),
    ];
    for (job, reacted) in job_reactions {
        if let Some(t) = first(
            seen[0].0,
            &|s| matches!(s, Seen::JobComplete(n) if n == job),
        ) && let Some(r) = first(seen[0].0, reacted)
        {
            out.push(Reacted {
                what: format!("{job} complete"),
                triggered: t,
                took: r.saturating_duration_since(t),
            });
        }
    }
    for (i, name) in roll.iter().enumerate() {
        let done = format!("{name}@{target_image}");
        let Some(t) = first(
            seen[0].0,
            &|s| matches!(s, Seen::RolloutComplete(n) if *n == done),
        ) else {
            continue;
        };
        let reaction = match roll.get(i + 1) {
            Some(next) => first(
                seen[0].0,
                &|s| matches!(s, Seen::TemplateChanged(n, img) if n == next && *img == target_image),
            ),
            None => first(
                seen[0].0,
                &|s| matches!(s, Seen::Phase(p, _) if p == "Contracting"),
            ),
        };
        if let Some(r) = reaction {
            out.push(Reacted {
                what: format!("{name} rolled out"),
                triggered: t,
                took: r.saturating_duration_since(t),
            });
        }
    }
    out
}

pub async fn run(args: UpgradeArgs) -> anyhow::Result<()> {
    let bench = Bench::start().await?;
    let mut walls = Vec::new();
    let mut requests = Vec::new();
    let mut classes = std::collections::BTreeMap::<String, u64>::new();
    let mut all_reactions: Vec<Duration> = Vec::new();
    // The slowest, with the namespace and the wall-clock time of the trigger:
    // where to look in the operator's log (RUST_LOG=ratchet_operator=debug).
    let mut worst: Vec<(String, Duration)> = Vec::new();
    let clock = (Instant::now(), std::time::SystemTime::now());
    let wall = |at: Instant| {
        let since = clock.1 + at.saturating_duration_since(clock.0);
        k8s_openapi::jiff::Timestamp::try_from(since)
            .map(|t| t.to_string())
            .unwrap_or_default()
    };
    let back_ends: Vec<String> = (1..=args.back_ends.max(1))
        .map(|i| format!("b{i}"))
        .collect();
    let names: Vec<&str> = back_ends.iter().map(String::as_str).collect();
    // Rollout → next workload is a reaction only when the roll is strictly sequential.
    let roll = match args.max_parallel {
        Some(bound) if bound > 1 && back_ends.len() > 1 => Vec::new(),
        _ => roll_order(&back_ends),
    };
    // Sized to the fleet: a hundred back ends roll twice.
    let timeout = Duration::from_secs(300 + 10 * back_ends.len() as u64);
    for run in 0..args.warmup + args.runs {
        let ns = format!("upgrade-{run}");
        let (api, mut cinder) = bench.namespace(&ns, "2026.1", &names).await?;
        if let Some(bound) = args.max_parallel {
            cinder.spec.upgrade = Some(ratchet_api::common::UpgradePolicy {
                max_parallel: Some(bound),
                ..Default::default()
            });
        }
        if args.ready_delay_ms > 0 {
            bench.kubelet.scenarios().add(
                PodSelector::namespace(&ns),
                Behaviour::default().with_ready_delay(Duration::from_millis(args.ready_delay_ms)),
            );
        }
        api.create(&PostParams::default(), &cinder).await?;
        until(&api, "cinder", timeout, "installed", settled_at("2026.1")).await?;

        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let recorder = tokio::spawn(record(bench.admin.clone(), ns.clone(), stop_rx));
        // Give the recorder's watches a moment to list before the trigger.
        until(
            &api,
            "cinder",
            Duration::from_secs(10),
            "recorder warm",
            |_| true,
        )
        .await?;
        bench.counter.take();
        let started = Instant::now();
        let patch = serde_json::json!({ "spec": { "openStackRelease": "2026.2", "image": { "reference": { "tag": "2026.2" } } } });
        api.patch("cinder", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        until(&api, "cinder", timeout, "upgraded", settled_at("2026.2"))
            .await
            .context("upgrade")?;
        let took = started.elapsed();
        let counted = bench.counter.take_by_class();
        let _ = stop_tx.send(());
        let seen = recorder.await?;
        if run < args.warmup {
            continue;
        }
        walls.push(took);
        requests.push(counted.values().sum::<u64>());
        for (class, n) in counted {
            *classes.entry(class).or_default() += n;
        }
        for reacted in reactions(&seen, "2026.2", &roll) {
            all_reactions.push(reacted.took);
            let at = wall(reacted.triggered);
            worst.push((
                format!("{} in {ns}, triggered at {at}", reacted.what),
                reacted.took,
            ));
        }
    }
    if let Some(mean) = mean_reconcile_seconds(&bench.operator) {
        println!("operator reconcile pass: mean {:.1} ms", mean * 1000.0);
    }
    if let Some((slow, total)) = slow_reconciles(&bench.operator, "0.128") {
        println!("operator reconcile passes over 128 ms: {slow} of {total}");
    }
    // A failed pass retries after a backoff of at least a second: it shows up
    // as a slow reaction, so say which passes failed and why.
    let metrics = bench.operator.metrics().encode();
    println!(
        "operator failed passes: {}",
        crate::setup::failed_passes(&metrics)
    );
    bench.operator.stop().await;
    let pods = match args.ready_delay_ms {
        0 => "instant pods".to_string(),
        ms => format!("pods Ready {ms} ms after start"),
    };
    println!(
        "full upgrade 2026.1 → 2026.2 ({} back ends, maxParallel {}, {pods}), incl. second roll: {}",
        back_ends.len(),
        args.max_parallel.unwrap_or(1),
        summary(&walls)
    );
    println!(
        "operator reaction, trigger seen → reaction seen (Job complete → next phase; rollout complete → next workload): {}",
        summary(&all_reactions)
    );
    worst.sort_by_key(|(_, d)| std::cmp::Reverse(*d));
    for (what, took) in worst.iter().take(3) {
        println!("  slowest: {what}: {:.1} ms", took.as_secs_f64() * 1000.0);
    }
    let mean = requests.iter().sum::<u64>() as f64 / requests.len().max(1) as f64;
    println!(
        "operator API requests per upgrade: mean {mean:.1}, min {}, max {}",
        requests.iter().min().copied().unwrap_or_default(),
        requests.iter().max().copied().unwrap_or_default()
    );
    let mut by_count: Vec<(String, u64)> = classes.into_iter().collect();
    by_count.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let runs = requests.len().max(1) as f64;
    let per_upgrade: Vec<String> = by_count
        .iter()
        .map(|(class, n)| match *n as f64 / runs {
            // A watch re-opened once in all the runs is worth seeing, not as 0.0.
            rare if rare < 0.1 => format!("{class} {rare:.2}"),
            mean => format!("{class} {mean:.1}"),
        })
        .collect();
    println!("  per upgrade by request: {}", per_upgrade.join(", "));
    Ok(())
}
