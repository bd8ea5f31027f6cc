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
use ratchet_services::Services;
use ratchet_testenv::etcd::{EtcdClient, EtcdTls, StoredObject};
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
    /// The API server's `--etcd-prefix`: where its keys live in etcd.
    #[arg(long, default_value = "/registry", requires = "etcd_url")]
    etcd_prefix: String,
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
    for name in ratchet_crds::<Services>() {
        let Some(crd) = crds.get_opt(&name).await? else {
            continue;
        };
        let versions = CrdVersions::of(&crd);
        let in_etcd = match &etcd {
            Some(etcd) => {
                let prefix = format!(
                    "{}/{}/{}/",
                    args.etcd_prefix.trim_end_matches('/'),
                    crd.spec.group,
                    crd.spec.names.plural
                );
                let mut counts = BTreeMap::new();
                for object in etcd.list_prefix(&prefix).await? {
                    *counts.entry(stored_as(&object)).or_insert(0u64) += 1;
                }
                Some(counts)
            }
            None => None,
        };
        let storage = versions.storage.clone().unwrap_or_default();
        let verdict = verdict(&versions, in_etcd.as_ref());
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

/// What an etcd value says about the version it was stored in.
const ENCRYPTED: &str = "<encrypted>";
const UNREADABLE: &str = "<unreadable>";

fn stored_as(object: &StoredObject) -> String {
    if let Some(version) = object.json_api_version() {
        version
    } else if object.value.starts_with(b"k8s:enc:") {
        // Encryption at rest: only the API server can read the version.
        ENCRYPTED.into()
    } else {
        UNREADABLE.into()
    }
}

/// One CRD's verdict from the API server's view and, when read, etcd's.
fn verdict(versions: &CrdVersions, in_etcd: Option<&BTreeMap<String, u64>>) -> String {
    let storage = versions
        .storage
        .as_deref()
        .map(|s| versions.api_version(s))
        .unwrap_or_default();
    let none = BTreeMap::new();
    let counts = in_etcd.unwrap_or(&none);
    let unknown: u64 = [ENCRYPTED, UNREADABLE]
        .iter()
        .filter_map(|k| counts.get(*k))
        .sum();
    if counts
        .keys()
        .any(|v| *v != storage && v != ENCRYPTED && v != UNREADABLE)
    {
        "objects stored in an older version: run `ratchet storage migrate`".into()
    } else if versions.needs_migration() {
        "storedVersions lists older versions: run `ratchet storage migrate`".into()
    } else if unknown > 0 {
        format!(
            "clean as far as the API server knows; {unknown} objects in etcd cannot be read here (encrypted at rest or not JSON), so their version is not confirmed"
        )
    } else {
        "clean".into()
    }
}

async fn migrate(client: &Client, args: MigrateArgs) -> anyhow::Result<()> {
    let names = if args.crd.is_empty() {
        ratchet_crds::<Services>()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(stored: &[&str]) -> CrdVersions {
        CrdVersions {
            name: "cinders.cinder.openstack.c5c3.io".into(),
            group: "cinder.openstack.c5c3.io".into(),
            generation: 1,
            storage: Some("v1beta1".into()),
            served: vec!["v1alpha1".into(), "v1beta1".into()],
            stored: stored.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn counts(entries: &[(&str, u64)]) -> BTreeMap<String, u64> {
        entries.iter().map(|(k, n)| (k.to_string(), *n)).collect()
    }

    #[test]
    fn etcd_values_name_their_version_or_say_why_not() {
        let object = |value: &[u8]| StoredObject {
            key: "/registry/x".into(),
            value: value.to_vec(),
        };
        assert_eq!(
            stored_as(&object(br#"{"apiVersion":"g/v1beta1"}"#)),
            "g/v1beta1"
        );
        assert_eq!(
            stored_as(&object(b"k8s:enc:aescbc:v1:key1:\x00\x01")),
            ENCRYPTED
        );
        assert_eq!(stored_as(&object(b"k8s\x00protobuf")), UNREADABLE);
    }

    #[test]
    fn the_verdict_trusts_only_what_it_can_read() {
        let beta = "cinder.openstack.c5c3.io/v1beta1";
        let alpha = "cinder.openstack.c5c3.io/v1alpha1";
        assert_eq!(verdict(&versions(&["v1beta1"]), None), "clean");
        assert_eq!(
            verdict(&versions(&["v1beta1"]), Some(&counts(&[(beta, 3)]))),
            "clean"
        );
        assert!(
            verdict(
                &versions(&["v1beta1"]),
                Some(&counts(&[(beta, 3), (alpha, 1)]))
            )
            .starts_with("objects stored in an older version")
        );
        assert!(
            verdict(
                &versions(&["v1alpha1", "v1beta1"]),
                Some(&counts(&[(beta, 3)]))
            )
            .starts_with("storedVersions lists older versions")
        );
        let encrypted = verdict(
            &versions(&["v1beta1"]),
            Some(&counts(&[(beta, 1), (ENCRYPTED, 2)])),
        );
        assert!(
            encrypted.starts_with("clean as far as the API server knows; 2 objects"),
            "{encrypted}"
        );
    }
}
