//! `raglab config init`: write the commented config file. It needs no workspace or
//! model and does not read the config it replaces, so it also mends a broken file.

use std::path::Path;

use anyhow::{Context as _, Result, bail};

use crate::config::{Config, Paths};

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCmd {
    /// Write CONFIG_DIR/config.toml with every setting commented out beside its
    /// default (the path is printed; `raglab paths` shows it too).
    Init(InitArgs),
}

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Replace an existing config file; the old one is kept as config.toml.bak.
    #[arg(long)]
    pub force: bool,
    /// Print the file on stdout instead of writing it.
    #[arg(long, conflicts_with = "force")]
    pub print: bool,
}

pub fn run(cmd: &ConfigCmd) -> Result<()> {
    let ConfigCmd::Init(args) = cmd;
    let paths = Paths::discover()?;
    let text = Config::template(&paths);
    if args.print {
        print!("{text}");
        return Ok(());
    }
    let file = paths.config_file();
    write_config(&file, &text, args.force)?;
    eprintln!(
        "wrote {}: every setting is commented out beside its default; uncomment to change one",
        file.display()
    );
    Ok(())
}

/// Write `text` to `file` whole (`write_whole`: a temporary file synced and renamed over
/// it), never replacing an existing file unless `force`, and then keeping the old one
/// beside it as `.bak`.
fn write_config(file: &Path, text: &str, force: bool) -> Result<()> {
    let dir = file.parent().context("the config file has no folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    if file.exists() {
        if !force {
            bail!(
                "{} exists; `raglab config init --force` replaces it (keeping it as config.toml.bak), `--print` shows the new one",
                file.display()
            );
        }
        let backup = file.with_extension("toml.bak");
        std::fs::copy(file, &backup)
            .with_context(|| format!("keeping the old config as {}", backup.display()))?;
    }
    crate::service::base::write_whole(file, text.as_bytes())
}

/// `raglab paths`: where raglab keeps each thing on this machine, from the environment
/// (`RAGLAB_CONFIG_DIR`, `RAGLAB_DATA_DIR`, `RAGLAB_MODELS_DIR`, `RAGLAB_WORKSPACE`),
/// the config and `--workspace`. It opens nothing and creates nothing, so a first look
/// leaves no empty workspace behind; a local path that does not exist yet says so and
/// which command makes it.
pub fn print_paths(workspace: Option<&Path>) -> Result<()> {
    let paths = Paths::discover()?;
    let config = Config::load(&paths)?;
    let workspace = workspace
        .map(Path::to_path_buf)
        .unwrap_or_else(|| config.workspace_dir(&paths));
    let remote = crate::service::base::is_object_store(&workspace.to_string_lossy());
    let lines = [
        (
            "config",
            paths.config_file(),
            "`raglab config init` writes it",
        ),
        (
            "signing key",
            crate::service::study::key_file(&paths),
            "`raglab study key` makes it",
        ),
        ("data", paths.data_dir.clone(), "made on first use"),
        ("models", paths.models_dir(), "`scripts/setup.sh` fills it"),
        ("workspace", workspace, "`raglab ingest` makes it"),
        ("log", paths.log_file(), "made on first use"),
    ];
    for (what, path, maker) in lines {
        let missing = (!remote || what != "workspace") && !path.exists();
        let note = if missing {
            format!("  (not there yet: {maker})")
        } else {
            String::new()
        };
        say!("{:<12} {}{note}", format!("{what}:"), path.display());
    }
    Ok(())
}
