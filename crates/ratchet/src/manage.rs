//! `ratchet status`, `ratchet plan`, `ratchet abort`: for operators of real
//! clusters, against the current kubeconfig and context.

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};
use ratchet_api::cinder::v1alpha1::Cinder;
use ratchet_operator::cinder::plan::{Verdict, abort_patch, plan, render};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Output {
    Table,
    Json,
    Yaml,
}

#[derive(Args)]
pub struct StatusArgs {
    /// Namespace (default: the context's).
    #[arg(short, long)]
    namespace: Option<String>,
    /// All namespaces.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    #[arg(short, long, value_enum, default_value = "table")]
    output: Output,
    /// Follow changes (a line per change) until Ctrl-C.
    #[arg(short, long)]
    watch: bool,
}

#[derive(Args)]
pub struct PlanArgs {
    /// The Cinder.
    name: String,
    /// The release to plan for.
    #[arg(long)]
    to: String,
    #[arg(short, long)]
    namespace: Option<String>,
}

#[derive(Args)]
pub struct AbortArgs {
    /// The Cinder.
    name: String,
    #[arg(short, long)]
    namespace: Option<String>,
    /// Abort even in Contracting (validate the database first).
    #[arg(long)]
    force: bool,
    /// For a digest-pinned image: the installed release's digest.
    #[arg(long)]
    image_digest: Option<String>,
    /// Print the patch without applying it.
    #[arg(long)]
    dry_run: bool,
}

async fn cinders(namespace: Option<&str>, all: bool) -> anyhow::Result<Api<Cinder>> {
    let client = Client::try_default()
        .await
        .context("connecting to Kubernetes")?;
    Ok(match (all, namespace) {
        (true, _) => Api::all(client),
        (false, Some(ns)) => Api::namespaced(client, ns),
        (false, None) => Api::default_namespaced(client),
    })
}

fn table_header() -> String {
    format!(
        "{:<20} {:<24} {:<9} {:<9} {:<14} {:<22} READY / DATABASE",
        "NAMESPACE", "NAME", "RELEASE", "TARGET", "PHASE", "ROLLING"
    )
}

fn table_row(c: &Cinder) -> String {
    let s = c.status.clone().unwrap_or_default();
    let cond = |kind: &str| {
        s.conditions
            .iter()
            .find(|x| x.type_ == kind)
            .map(|x| format!("{} ({})", x.status, x.reason))
            .unwrap_or_else(|| "-".into())
    };
    let phase = serde_json::to_value(s.upgrade_phase)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    format!(
        "{:<20} {:<24} {:<9} {:<9} {:<14} {:<22} {} / {}",
        c.metadata.namespace.clone().unwrap_or_default(),
        c.metadata.name.clone().unwrap_or_default(),
        s.installed_release,
        s.target_release,
        phase,
        s.rolling_workload,
        cond("Ready"),
        cond("DatabaseReady"),
    )
}

pub async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let api = cinders(args.namespace.as_deref(), args.all_namespaces).await?;
    if args.watch {
        return watch(api).await;
    }
    let list = api.list(&ListParams::default()).await?;
    match args.output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&list.items)?),
        Output::Yaml => print!("{}", serde_yaml_ng::to_string(&list.items)?),
        Output::Table => {
            println!("{}", table_header());
            for c in &list.items {
                println!("{}", table_row(c));
            }
        }
    }
    Ok(())
}

/// Follows every change: a line whenever a Cinder's row changes, until Ctrl-C.
async fn watch(api: Api<Cinder>) -> anyhow::Result<()> {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    println!("{:<10} {}", "TIME", table_header());
    let mut last: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .applied_objects()
        .boxed();
    let started = std::time::Instant::now();
    while let Some(c) = stream.next().await {
        let c = c?;
        let row = table_row(&c);
        let key = format!(
            "{}/{}",
            c.metadata.namespace.clone().unwrap_or_default(),
            c.metadata.name.clone().unwrap_or_default()
        );
        if last.get(&key) != Some(&row) {
            println!(
                "{:<10} {row}",
                format!("{:.1}s", started.elapsed().as_secs_f64())
            );
            last.insert(key, row);
        }
    }
    Ok(())
}

pub async fn plan_cmd(args: PlanArgs) -> anyhow::Result<()> {
    let api = cinders(args.namespace.as_deref(), false).await?;
    let cinder = api
        .get(&args.name)
        .await
        .with_context(|| format!("reading Cinder {}", args.name))?;
    let p = plan(&cinder, &args.to);
    print!("{}", render(&p));
    if let Verdict::Refused(_) = p.verdict {
        std::process::exit(3);
    }
    Ok(())
}

pub async fn abort(args: AbortArgs) -> anyhow::Result<()> {
    let api = cinders(args.namespace.as_deref(), false).await?;
    let cinder = api
        .get(&args.name)
        .await
        .with_context(|| format!("reading Cinder {}", args.name))?;
    let (patch, notes) = match abort_patch(&cinder, args.force, args.image_digest.as_deref()) {
        Ok(p) => p,
        Err(refusal) => bail!("not aborting {}: {refusal}", args.name),
    };
    for note in &notes {
        println!("note: {note}");
    }
    println!("patch: {patch}");
    if args.dry_run {
        return Ok(());
    }
    api.patch(&args.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    println!(
        "abort requested: Ratchet deletes the phase Jobs, clears the upgrade and re-syncs at the installed release."
    );
    Ok(())
}
