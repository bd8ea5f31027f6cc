//! `ratchet status`, `ratchet plan`, `ratchet abort`: for operators of real
//! clusters, against the current kubeconfig and context.

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};
use ratchet_api::cinder::v1beta1::Cinder;
use ratchet_api::ironic::v1alpha1::Ironic;
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::plan::{Verdict, abort_patch, plan, render};

use crate::resource_status::{condition, status_text};

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
    /// The resource: NAME (a Cinder) or KIND/NAME (cinder/NAME, ironic/NAME).
    name: String,
    /// The release to plan for.
    #[arg(long)]
    to: String,
    #[arg(short, long)]
    namespace: Option<String>,
}

#[derive(Args)]
pub struct AbortArgs {
    /// The resource: NAME (a Cinder) or KIND/NAME (cinder/NAME, ironic/NAME).
    name: String,
    #[arg(short, long)]
    namespace: Option<String>,
    /// Abort even in a phase that needs care first (Cinder's Contracting:
    /// validate the database first).
    #[arg(long)]
    force: bool,
    /// For a digest-pinned image: the installed release's digest.
    #[arg(long)]
    image_digest: Option<String>,
    /// Print the patch without applying it.
    #[arg(long)]
    dry_run: bool,
}

async fn client() -> anyhow::Result<Client> {
    Client::try_default()
        .await
        .context("connecting to Kubernetes")
}

async fn cinders(namespace: Option<&str>, all: bool) -> anyhow::Result<Api<Cinder>> {
    let client = client().await?;
    Ok(match (all, namespace) {
        (true, _) => Api::all(client),
        (false, Some(ns)) => Api::namespaced(client, ns),
        (false, None) => Api::default_namespaced(client),
    })
}

fn table_header() -> String {
    format!(
        "{:<7} {:<20} {:<24} {:<9} {:<9} {:<16} {:<22} READY / DATABASE",
        "KIND", "NAMESPACE", "NAME", "RELEASE", "TARGET", "PHASE", "ROLLING"
    )
}

/// One row for any service resource: they all store the same status fields.
fn table_row(object: &serde_json::Value) -> String {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let cond = |kind: &str| {
        condition(object, kind)
            .map(|(status, reason, _)| format!("{status} ({reason})"))
            .unwrap_or_else(|| "-".into())
    };
    let status = |field: &str| status_text(object, field);
    format!(
        "{:<7} {:<20} {:<24} {:<9} {:<9} {:<16} {:<22} {} / {}",
        text("/kind"),
        text("/metadata/namespace"),
        text("/metadata/name"),
        status("installedRelease"),
        status("targetRelease"),
        status("upgradePhase"),
        status("rollingWorkload"),
        cond("Ready"),
        cond("DatabaseReady"),
    )
}

/// Every Cinder, then every Ironic, as JSON. A service whose CRD is not
/// installed has none.
async fn list_all(
    cinders: &Api<Cinder>,
    ironics: &Api<Ironic>,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let mut out: Vec<serde_json::Value> = Vec::new();
    for c in cinders.list(&ListParams::default()).await?.items {
        out.push(serde_json::to_value(c)?);
    }
    match ironics.list(&ListParams::default()).await {
        Ok(list) => {
            for i in list.items {
                out.push(serde_json::to_value(i)?);
            }
        }
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(e.into()),
    }
    Ok(out)
}

pub async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let cinders = cinders(args.namespace.as_deref(), args.all_namespaces).await?;
    let ironics: Api<Ironic> = Api::all(cinders.clone().into_client());
    let ironics = match (args.all_namespaces, args.namespace.as_deref()) {
        (true, _) => ironics,
        (false, Some(ns)) => Api::namespaced(cinders.clone().into_client(), ns),
        (false, None) => Api::default_namespaced(cinders.clone().into_client()),
    };
    if args.watch {
        return watch(cinders, ironics).await;
    }
    let all = list_all(&cinders, &ironics).await?;
    match args.output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&all)?),
        Output::Yaml => print!("{}", serde_yaml_ng::to_string(&all)?),
        Output::Table => {
            println!("{}", table_header());
            for object in &all {
                println!("{}", table_row(object));
            }
        }
    }
    Ok(())
}

/// Follows every change: a line whenever a resource's row changes, until Ctrl-C.
async fn watch(cinders: Api<Cinder>, ironics: Api<Ironic>) -> anyhow::Result<()> {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    println!("{:<10} {}", "TIME", table_header());
    let mut last: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let as_json = |r: Result<serde_json::Value, serde_json::Error>| r.map_err(anyhow::Error::from);
    let cinder_rows = watcher::watcher(cinders, watcher::Config::default())
        .applied_objects()
        .map(move |c| as_json(serde_json::to_value(c?)))
        .boxed();
    // Ironics only where the CRD is installed.
    let mut streams = vec![cinder_rows];
    if ironics.list(&ListParams::default().limit(1)).await.is_ok() {
        streams.push(
            watcher::watcher(ironics, watcher::Config::default())
                .applied_objects()
                .map(move |i| as_json(serde_json::to_value(i?)))
                .boxed(),
        );
    }
    let mut rows = futures::stream::select_all(streams);
    let started = std::time::Instant::now();
    while let Some(object) = rows.next().await {
        let object = object?;
        let row = table_row(&object);
        let key = format!(
            "{}/{}/{}",
            object["kind"].as_str().unwrap_or_default(),
            object["metadata"]["namespace"].as_str().unwrap_or_default(),
            object["metadata"]["name"].as_str().unwrap_or_default()
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

/// A resource named on the command line: `NAME` is a Cinder.
enum Target<'a> {
    Cinder(&'a str),
    Ironic(&'a str),
}

fn target(text: &str) -> anyhow::Result<Target<'_>> {
    match text.split_once('/') {
        None => Ok(Target::Cinder(text)),
        Some(("cinder" | "cinders", name)) => Ok(Target::Cinder(name)),
        Some(("ironic" | "ironics", name)) => Ok(Target::Ironic(name)),
        Some((kind, _)) => bail!("unknown kind {kind:?}: use cinder/NAME or ironic/NAME"),
    }
}

async fn read<S: OpenStackService>(
    namespace: Option<&str>,
    name: &str,
) -> anyhow::Result<(Api<S>, S)> {
    let client = client().await?;
    let api: Api<S> = match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::default_namespaced(client),
    };
    let object = api
        .get(name)
        .await
        .with_context(|| format!("reading {} {name}", S::SERVICE))?;
    Ok((api, object))
}

pub async fn plan_cmd(args: PlanArgs) -> anyhow::Result<()> {
    let ns = args.namespace.as_deref();
    let p = match target(&args.name)? {
        Target::Cinder(name) => plan(&read::<Cinder>(ns, name).await?.1, &args.to),
        Target::Ironic(name) => plan(&read::<Ironic>(ns, name).await?.1, &args.to),
    };
    print!("{}", render(&p));
    if let Verdict::Refused(_) = p.verdict {
        std::process::exit(3);
    }
    Ok(())
}

pub async fn abort(args: AbortArgs) -> anyhow::Result<()> {
    let ns = args.namespace.as_deref();
    match target(&args.name)? {
        Target::Cinder(name) => abort_one::<Cinder>(ns, name, &args).await,
        Target::Ironic(name) => abort_one::<Ironic>(ns, name, &args).await,
    }
}

async fn abort_one<S: OpenStackService>(
    namespace: Option<&str>,
    name: &str,
    args: &AbortArgs,
) -> anyhow::Result<()> {
    let (api, object) = read::<S>(namespace, name).await?;
    let (patch, notes) = match abort_patch(&object, args.force, args.image_digest.as_deref()) {
        Ok(p) => p,
        Err(refusal) => bail!("not aborting {name}: {refusal}"),
    };
    for note in &notes {
        println!("note: {note}");
    }
    println!("patch: {patch}");
    if args.dry_run {
        return Ok(());
    }
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    println!(
        "abort requested: Ratchet deletes the phase Jobs, clears the upgrade and re-syncs at the installed release."
    );
    Ok(())
}
