//! `ratchet crds`: the CRDs generated from the Rust types.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use ratchet_services::{Registry, Services};

#[derive(Args)]
pub struct CrdsArgs {
    /// Write one file per CRD into this directory instead of printing.
    #[arg(long, conflicts_with = "apply")]
    write: Option<PathBuf>,
    /// Apply them to the cluster of the current kubeconfig (server-side) and
    /// wait until each is served, keeping the conversion endpoint and CA the
    /// operator registered, whichever kind: the way to upgrade them.
    #[arg(long)]
    apply: bool,
}

pub async fn run(args: CrdsArgs) -> anyhow::Result<()> {
    if args.apply {
        let client = kube::Client::try_default()
            .await
            .context("connecting with the current kubeconfig")?;
        ratchet_operator::install::install_crds::<Services>(
            &client,
            std::time::Duration::from_secs(60),
        )
        .await
        .context("applying the CRDs")?;
        for crd in Services::crds()? {
            println!("applied {}", crd.metadata.name.unwrap_or_default());
        }
        return Ok(());
    }
    for crd in Services::crds()? {
        let yaml = ratchet_api::crd_yaml(&crd).context("serialising a CRD")?;
        match &args.write {
            Some(dir) => {
                let path = dir.join(ratchet_operator::registry::crd_file(&crd));
                std::fs::write(&path, yaml)
                    .with_context(|| format!("writing {}", path.display()))?;
                println!("wrote {}", path.display());
            }
            None => print!("---\n{yaml}"),
        }
    }
    Ok(())
}
