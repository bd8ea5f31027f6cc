//! `ratchet status`, `ratchet plan`, `ratchet abort`: for operators of real
//! clusters, against the current kubeconfig and context.

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use futures::future::BoxFuture;
use kube::api::{DynamicObject, ListParams, Patch, PatchParams};
use kube::{Api, Client};
use ratchet_operator::registry::ServiceFn;
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::plan::{Plan, Verdict, abort_patch, plan, render};

use crate::resource_status::{condition, status_text};
use ratchet_services::{Registry, Services};

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
    /// The resource: NAME (a Cinder) or KIND/NAME (its help names the services).
    name: String,
    /// The release to plan for.
    #[arg(long)]
    to: String,
    #[arg(short, long)]
    namespace: Option<String>,
}

#[derive(Args)]
pub struct AbortArgs {
    /// The resource: NAME (a Cinder) or KIND/NAME (its help names the services).
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

/// Every registered service's resources where the CLI looks: one namespace
/// (the context's by default) or all.
fn apis(client: &Client, namespace: Option<&str>, all: bool) -> Vec<Api<DynamicObject>> {
    Services::services()
        .into_iter()
        .map(|service| {
            let resource = service.api_resource();
            match (all, namespace) {
                (true, _) => Api::all_with(client.clone(), &resource),
                (false, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
                (false, None) => Api::default_namespaced_with(client.clone(), &resource),
            }
        })
        .collect()
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

/// Every resource of every service, in the registry's order, as JSON. A
/// service whose CRD is not installed has none.
async fn list_all(apis: &[Api<DynamicObject>]) -> anyhow::Result<Vec<serde_json::Value>> {
    let mut out: Vec<serde_json::Value> = Vec::new();
    for api in apis {
        match api.list(&ListParams::default()).await {
            Ok(list) => {
                for object in list.items {
                    out.push(serde_json::to_value(object)?);
                }
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

pub async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let apis = apis(
        &client().await?,
        args.namespace.as_deref(),
        args.all_namespaces,
    );
    if args.watch {
        return watch(apis).await;
    }
    let all = list_all(&apis).await?;
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
async fn watch(apis: Vec<Api<DynamicObject>>) -> anyhow::Result<()> {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    println!("{:<10} {}", "TIME", table_header());
    let mut last: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut streams = Vec::new();
    for api in apis {
        // Only services whose CRD is installed.
        if api.list(&ListParams::default().limit(1)).await.is_err() {
            continue;
        }
        streams.push(
            watcher::watcher(api, watcher::Config::default())
                .applied_objects()
                .map(|o| Ok::<_, anyhow::Error>(serde_json::to_value(o?)?))
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

/// A resource named on the command line, `KIND/NAME` (the kind a service's
/// name or plural: `cinder/NAME`, `ironics/NAME`), or `NAME`, a Cinder: the
/// service and the name.
pub(crate) fn target(text: &str) -> anyhow::Result<(&'static str, &str)> {
    let services = Services::services();
    let Some((kind, name)) = text.split_once('/') else {
        return Ok((
            services.first().map(|s| s.service).unwrap_or_default(),
            text,
        ));
    };
    match services
        .iter()
        .find(|s| kind == s.service || kind == s.plural)
    {
        Some(service) => Ok((service.service, name)),
        None => {
            let known: Vec<String> = services
                .iter()
                .map(|s| format!("{}/NAME", s.service))
                .collect();
            bail!("unknown kind {kind:?}: use {}", known.join(" or "))
        }
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
    struct PlanOne<'a>(&'a PlanArgs, &'a str);
    impl<'a> ServiceFn for PlanOne<'a> {
        type Output = BoxFuture<'a, anyhow::Result<Plan>>;
        fn call<S: OpenStackService>(self) -> Self::Output {
            let PlanOne(args, name) = self;
            Box::pin(async move {
                let (_, object) = read::<S>(args.namespace.as_deref(), name).await?;
                Ok(plan(&object, &args.to))
            })
        }
    }
    let (service, name) = target(&args.name)?;
    let p = Services::with_service(service, PlanOne(&args, name))
        .context("no such service")?
        .await?;
    print!("{}", render(&p));
    if let Verdict::Refused(_) = p.verdict {
        std::process::exit(3);
    }
    Ok(())
}

pub async fn abort(args: AbortArgs) -> anyhow::Result<()> {
    struct AbortOne<'a>(&'a AbortArgs, &'a str);
    impl<'a> ServiceFn for AbortOne<'a> {
        type Output = BoxFuture<'a, anyhow::Result<()>>;
        fn call<S: OpenStackService>(self) -> Self::Output {
            let AbortOne(args, name) = self;
            Box::pin(abort_one::<S>(args.namespace.as_deref(), name, args))
        }
    }
    let (service, name) = target(&args.name)?;
    Services::with_service(service, AbortOne(&args, name))
        .context("no such service")?
        .await
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
