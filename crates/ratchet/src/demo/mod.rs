//! `ratchet demo`: Ratchet on its own local control plane, built and started on
//! this machine with nothing but Go and Rust. It installs a Cinder (or an
//! Ironic), upgrades it one release forward with live progress (optionally with
//! an injected failure, which it then aborts, or recovers from when the failed
//! phase is past the point of no return), and ends with a timeline and a verdict.

pub mod real;
mod subject;

use std::time::{Duration, Instant, SystemTime};

use crate::local::{Local, LocalOptions};
use crate::resource_status::{condition, status_text};
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use ratchet_release::Release;
use ratchet_services::Services;
use ratchet_testenv::binding::{KUBELET_LABEL, PROCESS};
use ratchet_testenv::{Behaviour, ClientNetns, PodSelector, RuleId, Scenarios};
use subject::{Service, observed_current};

mod upgrade;

const NAMESPACE: &str = "demo";

/// A failure to inject into the upgrade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inject {
    /// The schema Job fails every attempt.
    FailSchema,
    /// The upgrade check exits with an unexpected code.
    FailCheck,
    /// The upgrade check reports warnings (exit 1), which do not block: the
    /// upgrade goes on, with an `UpgradeCheckWarnings` event.
    WarnCheck,
    /// The data migrations fail every attempt (past the point of no return
    /// for some services, which then recover forward).
    FailDataMigrations,
    /// New pods of one workload never become ready: the roll stalls.
    StuckRollout,
}

impl Inject {
    /// The flag's value, an earlier name it still accepts, and what it does.
    fn describe(self) -> (&'static str, Option<&'static str>, &'static str) {
        match self {
            Inject::FailSchema => (
                "fail-schema",
                Some("fail-expand"),
                "the schema Job fails every attempt",
            ),
            Inject::FailCheck => (
                "fail-check",
                Some("fail-migrate"),
                "the upgrade check exits with an unexpected code",
            ),
            Inject::WarnCheck => (
                "warn-check",
                None,
                "the upgrade check reports warnings, which do not block",
            ),
            Inject::FailDataMigrations => (
                "fail-data-migrations",
                Some("fail-contract"),
                "the data migrations fail every attempt",
            ),
            Inject::StuckRollout => (
                "stuck-rollout",
                None,
                "new pods of one workload never become ready",
            ),
        }
    }
}

// By hand rather than derived: each value's help names the Job or workload it
// hits in every registered service, which only the registry knows.
impl ValueEnum for Inject {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            Inject::FailSchema,
            Inject::FailCheck,
            Inject::WarnCheck,
            Inject::FailDataMigrations,
            Inject::StuckRollout,
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let (name, alias, what) = self.describe();
        let hit: Vec<String> = subject::names()
            .into_iter()
            // Any release: a service's Jobs and workloads do not change with it.
            .filter_map(|service| Service::new(service, "2026.1", 1, false).ok())
            .map(|service| service.injected_into(*self))
            .filter(|workload| !workload.is_empty())
            .collect();
        Some(
            clap::builder::PossibleValue::new(name)
                .aliases(alias)
                .help(format!("{what} ({})", hit.join(", "))),
        )
    }
}

#[derive(Args)]
pub struct DemoArgs {
    /// The OpenStack service to install and upgrade.
    #[arg(long, default_value = "cinder", value_parser = clap::builder::PossibleValuesParser::new(subject::names()))]
    service: String,
    /// OpenStack release to install.
    #[arg(long, default_value = "2026.1")]
    release: String,
    /// Release to upgrade to (default: the next one). `none` skips the upgrade.
    #[arg(long)]
    to: Option<String>,
    /// Inject a failure into the upgrade; the demo then aborts it.
    #[arg(long, value_enum)]
    inject: Option<Inject>,
    /// Number of volume back ends (Cinder).
    #[arg(long, default_value_t = 1)]
    backends: usize,
    /// Delay before a simulated pod becomes Ready, in milliseconds.
    #[arg(long, default_value_t = 300)]
    ready_delay_ms: u64,
    /// Run the service for real: its processes from PyPI as real pods (the
    /// process kubelet; needs root), against MariaDB and RabbitMQ pods, with a
    /// client using its API throughout; the verdict counts failed requests
    /// and lost objects.
    #[arg(long, conflicts_with_all = ["inject", "backends"])]
    real: bool,
    /// Keep the cluster's directory (certificates, logs, etcd data) after exit.
    #[arg(long)]
    keep_dir: bool,
    /// Exit at the end instead of serving until Ctrl-C.
    #[arg(long, alias = "exit-when-ready")]
    exit_when_done: bool,
}

impl DemoArgs {
    /// `ratchet demo --real --service <service> --exit-when-done`: what the
    /// real-upgrade benchmark runs.
    pub fn real(service: &str) -> DemoArgs {
        DemoArgs {
            service: service.to_string(),
            release: "2026.1".into(),
            to: None,
            inject: None,
            backends: 1,
            ready_delay_ms: 300,
            keep_dir: false,
            exit_when_done: true,
            real: true,
        }
    }
}

/// Runs the demo; with `--real` and an upgrade, the client's figures.
pub async fn run(args: DemoArgs) -> anyhow::Result<Option<real::LoadFigures>> {
    // Refused before anything starts: a flag with nothing to act on.
    let service = Service::new(&args.service, &args.release, args.backends, args.real)?;
    if let Some(inject) = args.inject
        && service.injected_into(inject).is_empty()
    {
        bail!(
            "--inject {}: {} has nothing it applies to (no upgrade check)",
            inject.describe().0,
            service.kind()
        );
    }
    let from: Release = args.release.parse()?;
    let to = match args.to.as_deref() {
        Some("none") => None,
        Some(text) => Some(text.parse::<Release>()?),
        None => from.next(),
    };
    if args.real {
        let releases: Vec<String> = [Some(from), to]
            .iter()
            .flatten()
            .map(Release::to_string)
            .collect();
        // What the machine lacks is said (or installed) before anything
        // starts, rather than found by a build or a pod half way.
        real::check_machine(real::images_of(&service, &releases)).await?;
        real::prepare_images(real::images_of(&service, &releases)).await?;
    }
    let local = Local::start(LocalOptions {
        keep_dir: args.keep_dir,
        ready_delay: Duration::from_millis(args.ready_delay_ms),
        operator: true,
        processes: args.real,
        instance: "ratchet-demo",
    })
    .await?;
    let client = local.cluster.client()?;
    let scenarios = local.kubelet.scenarios();

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let labels = match args.real {
        true => serde_json::json!({ KUBELET_LABEL: PROCESS }),
        false => serde_json::json!({}),
    };
    let ns: Namespace = serde_json::from_value(
        serde_json::json!({ "metadata": { "name": NAMESPACE, "labels": labels } }),
    )?;
    namespaces
        .patch(
            NAMESPACE,
            &PatchParams::apply("ratchet-demo"),
            &Patch::Apply(&ns),
        )
        .await?;
    let mut manifest = service.manifest();
    if args.real {
        let provisioned = real::provision(&client, &service, &manifest).await?;
        if service.authenticated() {
            real::keystone(&client, &service, &args.release, &provisioned).await?;
        }
    } else {
        ratchet_operator::install::ensure_example_secrets::<Services>(&client, NAMESPACE).await?;
        simulate_check(scenarios, &service, 0);
    }
    if args.inject == Some(Inject::StuckRollout) {
        // A short progress deadline so the stall is reported within the demo.
        manifest["spec"]["rolloutDeadlineSeconds"] = serde_json::json!(10);
    }
    let object: DynamicObject = serde_json::from_value(manifest)?;
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &service.resource());
    let started = Instant::now();
    api.create(&PostParams::default(), &object)
        .await
        .with_context(|| format!("creating the demo {}", service.kind()))?;
    println!(
        "Created {} {NAMESPACE}/{} at {} with {}.",
        service.kind(),
        service.name(),
        args.release,
        service.shape()
    );
    // Real processes start in tens of seconds each on two cores.
    let install_limit = Duration::from_secs(if args.real { 900 } else { 300 });
    follow_until_ready(&service, &api, started, install_limit).await?;

    let running_client = match &local.process {
        Some(process) if to.is_some() => {
            let netns = ClientNetns::attach(&process.kubelet.network())?;
            let running = real::RunningClient::start(&client, &service, netns).await?;
            println!(
                "Steady state for {}s before the upgrade, to compare the client's latencies with.",
                real::STEADY_WINDOW.as_secs()
            );
            tokio::time::sleep(real::STEADY_WINDOW).await;
            println!("  load: {}", running.counters().line());
            Some(running)
        }
        _ => None,
    };
    let mut figures = None;
    let verdict = match to {
        Some(to) => {
            let injected = args
                .inject
                .and_then(|inject| inject_failure(scenarios, &service, inject, &to));
            let injected = injected.map(|rule| (scenarios, rule));
            let counters = running_client.as_ref().map(real::RunningClient::counters);
            let rolls = running_client
                .as_ref()
                .map(|_| real::RollClock::start(&client));
            let (upgrade_from, began) = (SystemTime::now(), Instant::now());
            let verdict =
                upgrade::run(&client, &service, &api, from, to, injected, counters).await?;
            let wall = began.elapsed();
            match running_client {
                Some(running) => {
                    let rolls = rolls.map(real::RollClock::stop).unwrap_or_default();
                    let timeline =
                        crate::timeline::read(&client, service.name(), NAMESPACE, service.name())
                            .await
                            .ok();
                    let load = running
                        .finish((upgrade_from, SystemTime::now()))
                        .await?
                        .with_work(began, wall, timeline.as_ref(), &rolls);
                    println!("{}", load.line());
                    let verdict = format!("{verdict} {}", load.verdict());
                    figures = Some(load);
                    verdict
                }
                None => verdict,
            }
        }
        None => format!("VERDICT: installed {from}; no upgrade requested."),
    };
    println!("{verdict}");
    local.print_access(
        Some(NAMESPACE),
        &format!(
            "{},deployments,statefulsets,daemonsets,jobs,pods",
            service.resource().plural
        ),
    );
    if !args.exit_when_done {
        println!("Serving until Ctrl-C.");
        crate::operator::shutdown_signal().await;
        println!("Stopping.");
    }
    local.stop().await;
    Ok(figures)
}

/// Prints every change of the resource's conditions until it is Ready.
async fn follow_until_ready(
    service: &Service,
    api: &Api<DynamicObject>,
    started: Instant,
    deadline: Duration,
) -> anyhow::Result<()> {
    let config = watcher::Config::default().fields(&format!("metadata.name={}", service.name()));
    let mut stream = watcher::watcher(api.clone(), config)
        .applied_objects()
        .boxed();
    let mut last = String::new();
    loop {
        let next = tokio::time::timeout(deadline.saturating_sub(started.elapsed()), stream.next())
            .await
            .with_context(|| format!("the {} did not become Ready in time", service.kind()))?;
        let Some(object) = next.transpose()? else {
            bail!("the watch ended");
        };
        let line = [
            "DatabaseReady",
            "DeploymentsReady",
            "HighlyAvailable",
            "Ready",
        ]
        .into_iter()
        .filter_map(|kind| {
            condition(&object.data, kind)
                .map(|(status, reason, _)| format!("{kind}={status} ({reason})"))
        })
        .collect::<Vec<_>>()
        .join("  ");
        if line.is_empty() {
            continue;
        }
        if line != last {
            println!("  [{:>5.1}s] {line}", started.elapsed().as_secs_f64());
            last = line;
        }
        let ready = condition(&object.data, "Ready").is_some_and(|(status, _, _)| status == "True");
        if ready && observed_current(&object) {
            println!(
                "{} is Ready at release {} after {:.1}s.",
                service.kind(),
                status_text(&object.data, "installedRelease"),
                started.elapsed().as_secs_f64()
            );
            return Ok(());
        }
    }
}

/// Makes the simulated upgrade check write what the real check wrapper writes
/// for exit code `rc`, so the check's report reads as in a real cluster.
fn simulate_check(scenarios: &Scenarios, service: &Service, rc: i32) -> Option<RuleId> {
    let (job, template) = service.check()?;
    let (exit, message) = template.check_result(rc)?;
    Some(scenarios.add(
        PodSelector::workload(NAMESPACE, &job),
        Behaviour::always_exit(exit, message),
    ))
}

/// Sets the simulated kubelet up to make the chosen part of the upgrade fail.
fn inject_failure(
    scenarios: &Scenarios,
    service: &Service,
    inject: Inject,
    to: &Release,
) -> Option<RuleId> {
    let workload = service.injected_into(inject);
    let (selector, behaviour) = match inject {
        Inject::FailSchema => (
            PodSelector::workload(NAMESPACE, &workload),
            Behaviour::always_exit(1, "OperationalError: simulated failure"),
        ),
        Inject::FailCheck => return simulate_check(scenarios, service, 255),
        Inject::WarnCheck => return simulate_check(scenarios, service, 1),
        Inject::FailDataMigrations => (
            PodSelector::workload(NAMESPACE, &workload),
            Behaviour::always_exit(2, "online data migrations errored"),
        ),
        Inject::StuckRollout => (
            PodSelector::workload(NAMESPACE, &workload).with_image_containing(&format!(":{to}")),
            Behaviour::hang(),
        ),
    };
    Some(scenarios.add(selector, behaviour))
}
