//! `ratchet crds`: the CRDs generated from the Rust types.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

#[derive(Args)]
pub struct CrdsArgs {
    /// Write one file per CRD into this directory instead of printing.
    #[arg(long)]
    write: Option<PathBuf>,
}

pub fn run(args: CrdsArgs) -> anyhow::Result<()> {
    for crd in ratchet_operator::registry::crds()? {
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
