//! `ratchet storage`: how Kubernetes stores Ratchet's own resources, the
//! stored-version migration, and the pre-flight check before applying the next
//! Ratchet's CRDs (seed 004: a version still in `status.storedVersions` must not
//! be removed from a CRD).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};
use ratchet_operator::storage::runner::ratchet_crds;
use ratchet_operator::storage::{self, CrdVersions, MigrationOptions};
use ratchet_testenv::etcd::{EtcdClient, EtcdTls};
use serde::Deserialize;

#[derive(Args)]
pub struct StorageArgs {
    #[command(subcommand)]
    command: StorageCommand,
}

#[derive(Subcommand)]
enum StorageCommand {
    /// Per Ratchet CRD: storedVersions, served and storage versions, and (with
    /// --etcd-url) how many objects etcd really holds in each version.
    Report(ReportArgs),
    /// Rewrite every object of Ratchet's CRDs in the storage version, then prune
    /// storedVersions (what the operator does at start-up).
    Migrate(MigrateArgs),
    /// Would applying these CRD manifests (the next Ratchet's) be safe?
    Preflight(PreflightArgs),
}

#[derive(Args)]
struct ReportArgs {
    /// etcd's JSON gateway (e.g. https://127.0.0.1:2379); without it only the
    /// API server's view is reported.
    #[arg(long)]
    etcd_url: Option<String>,
    /// For an etcd that serves TLS: the CA that signed its certificate (e.g.
    /// kubeadm's /etc/kubernetes/pki/etcd/ca.crt).
    #[arg(long, requires_all = ["etcd_url", "etcd_cert_file", "etcd_key_file"])]
    etcd_ca_file: Option<PathBuf>,
    /// A client certificate etcd trusts (e.g. the API server's,
    /// /etc/kubernetes/pki/apiserver-etcd-client.crt).
    #[arg(long, requires = "etcd_ca_file")]
    etcd_cert_file: Option<PathBuf>,
    /// Its key.
    #[arg(long, requires = "etcd_ca_file")]
    etcd_key_file: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct MigrateArgs {
    /// Only this CRD (default: every Ratchet CRD).
    #[arg(long)]
    crd: Vec<String>,
    /// Objects per list page.
    #[arg(long, default_value_t = 500)]
    page_size: u32,
    /// Rewrites in flight at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
}

#[derive(Args)]
struct PreflightArgs {
    /// A YAML file (several documents allowed) or a directory of them.
    #[arg(long)]
    crds: PathBuf,
}

pub async fn run(args: StorageArgs) -> anyhow::Result<()> {
    let client = Client::try_default()
        .await
        .context("connecting to Kubernetes (kubeconfig or in-cluster)")?;
    match args.command {
        StorageCommand::Report(a) => report(&client, a).await,
        StorageCommand::Migrate(a) => migrate(&client, a).await,
        StorageCommand::Preflight(a) => preflight(&client, a).await,
    }
}

/// One CRD's row of the report.
#[derive(serde::Serialize)]
struct Row {
    crd: String,
    storage: String,
    served: Vec<String>,
    stored_versions: Vec<String>,
    /// Objects per apiVersion as etcd holds them (absent without etcd access).
    #[serde(skip_serializing_if = "Option::is_none")]
    in_etcd: Option<BTreeMap<String, u64>>,
    verdict: String,
}

async fn report(client: &Client, args: ReportArgs) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let etcd = match (
        &args.etcd_url,
        &args.etcd_ca_file,
        &args.etcd_cert_file,
        &args.etcd_key_file,
    ) {
        (Some(url), Some(ca), Some(cert), Some(key)) => Some(EtcdClient::with_tls(
            url,
            &EtcdTls::from_files(ca, cert, key)?,
        )?),
        (Some(url), _, _, _) => Some(EtcdClient::new(url)?),
        (None, ..) => None,
    };
    let mut rows = Vec::new();
    for name in ratchet_crds() {
        let Some(crd) = crds.get_opt(&name).await? else {
            continue;
        };
        let versions = CrdVersions::of(&crd);
        let in_etcd = match &etcd {
            Some(etcd) => {
                let prefix = format!("/registry/{}/{}/", crd.spec.group, crd.spec.names.plural);
                let mut counts = BTreeMap::new();
                for object in etcd.list_prefix(&prefix).await? {
                    let version = object
                        .json_api_version()
                        .unwrap_or_else(|| "<not JSON>".into());
                    *counts.entry(version).or_insert(0u64) += 1;
                }
                Some(counts)
            }
            None => None,
        };
        let storage = versions.storage.clone().unwrap_or_default();
        let stale_in_etcd = in_etcd
            .as_ref()
            .is_some_and(|c| c.keys().any(|v| *v != versions.api_version(&storage)));
        let verdict = if stale_in_etcd {
            "objects stored in an older version: run `ratchet storage migrate`".to_string()
        } else if versions.needs_migration() {
            "storedVersions lists older versions: run `ratchet storage migrate`".to_string()
        } else {
            "clean".to_string()
        };
        rows.push(Row {
            crd: name,
            storage,
            served: versions.served,
            stored_versions: versions.stored,
            in_etcd,
            verdict,
        });
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    println!(
        "{:<36} {:<9} {:<20} {:<20} {:<28} VERDICT",
        "CRD", "STORAGE", "SERVED", "STORED VERSIONS", "IN ETCD"
    );
    for row in rows {
        let etcd = row
            .in_etcd
            .map(|c| {
                c.iter()
                    .map(|(v, n)| format!("{}={n}", v.rsplit('/').next().unwrap_or(v)))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_else(|| "-".into());
        println!(
            "{:<36} {:<9} {:<20} {:<20} {:<28} {}",
            row.crd,
            row.storage,
            row.served.join(","),
            row.stored_versions.join(","),
            if etcd.is_empty() { "0".into() } else { etcd },
            row.verdict
        );
    }
    Ok(())
}

async fn migrate(client: &Client, args: MigrateArgs) -> anyhow::Result<()> {
    let names = if args.crd.is_empty() {
        ratchet_crds()
    } else {
        args.crd
    };
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in names {
        let crd = storage::get_crd(&crds, &name).await?;
        let migration = storage::migrate_recorded(
            client,
            &crd,
            MigrationOptions {
                page_size: args.page_size,
                concurrency: args.concurrency,
                ..MigrationOptions::default()
            },
        )
        .await?;
        let outcome = if migration.pruned {
            format!(
                "storedVersions pruned from [{}] to [{}]",
                migration.stored_before.join(", "),
                migration.storage
            )
        } else {
            migration.note.unwrap_or_default()
        };
        println!(
            "{name}: {} objects rewritten in {} pages ({} managed-field cleanups); {outcome}",
            migration.rewritten, migration.pages, migration.managed_fields_cleaned
        );
    }
    Ok(())
}

/// CRDs in a file or directory of YAML documents.
fn read_crds(path: &PathBuf) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    let files = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("reading {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        files.sort();
        files
    } else {
        vec![path.clone()]
    };
    let mut crds = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        for document in serde_yaml_ng::Deserializer::from_str(&text) {
            let value = serde_json::Value::deserialize(document)
                .with_context(|| format!("parsing {}", file.display()))?;
            if value.get("kind").and_then(|k| k.as_str()) == Some("CustomResourceDefinition") {
                crds.push(
                    serde_json::from_value(value)
                        .with_context(|| format!("a CRD in {}", file.display()))?,
                );
            }
        }
    }
    Ok(crds)
}

async fn preflight(client: &Client, args: PreflightArgs) -> anyhow::Result<()> {
    let next = read_crds(&args.crds)?;
    if next.is_empty() {
        bail!("no CustomResourceDefinition in {}", args.crds.display());
    }
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut problems = Vec::new();
    for crd in &next {
        let name = crd.metadata.name.clone().unwrap_or_default();
        match api.get_opt(&name).await? {
            Some(live) => problems.extend(storage::preflight(&live, crd)),
            None => println!("{name}: not installed yet; applying it is safe"),
        }
    }
    if problems.is_empty() {
        println!("safe to apply: no version still listed in storedVersions is removed");
        Ok(())
    } else {
        for problem in &problems {
            eprintln!("{problem}");
        }
        bail!("{} problem(s): do not apply these CRDs yet", problems.len())
    }
}
