//! `raglab study key` and `raglab study roster add|list`: who is who in a study.

use anyhow::Result;
use clap::Subcommand;

use super::json_schema;
use crate::core::signing::short;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::Context;
use crate::service::study;

#[derive(Debug, Subcommand)]
pub enum StudyCmd {
    /// Print your public signing key (made on first use, kept 0600 in the config
    /// folder): the study lead adds it to the roster under your name.
    Key,
    /// The study roster: each reviewer's and the lead's public key.
    Roster {
        #[command(subcommand)]
        cmd: RosterCmd,
    },
}

#[derive(Debug, Subcommand)]
pub enum RosterCmd {
    /// Add NAME with public key KEY (the lead only; the lead's own entry, with
    /// `--lead` and their own key, founds the roster).
    Add {
        name: String,
        key: String,
        /// This entry is the study lead (the first entry, with your own key).
        #[arg(long)]
        lead: bool,
    },
    /// List the roster and the entries that do not count.
    List {
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(ctx: &Context, cmd: StudyCmd) -> Result<()> {
    match cmd {
        StudyCmd::Key => {
            let key = study::my_key(ctx)?;
            say!("{}", key.public_hex());
            tell!("(kept in {})", key.path().display());
        }
        StudyCmd::Roster {
            cmd: RosterCmd::Add { name, key, lead },
        } => {
            let added = study::roster_add(ctx, &name, &key, lead).await?;
            let e = &added.entry;
            say!(
                "added {} ({}) with key {}",
                clean(&e.name),
                e.role,
                e.public_key
            );
            if lead {
                tell!(
                    "study id {} (every row of the study is signed with it)",
                    short(e.signature.as_deref().unwrap_or_default())
                );
            }
            if added.earlier_labels > 0 {
                tell!(
                    "warning: the {} label rows written before the roster was founded carry no study id and do not count in the signed study; their reviewers label again",
                    added.earlier_labels
                );
            }
        }
        StudyCmd::Roster {
            cmd: RosterCmd::List { json },
        } => {
            let view = study::roster_list(ctx).await?;
            if json {
                return json_schema::print(json_schema::ROSTER, &view);
            }
            if !view.signed {
                say!(
                    "{} (the lead founds a roster with `raglab study roster add NAME KEY --lead`)",
                    study::UNSIGNED
                );
            }
            match &view.study_id {
                Some(id) => say!("study id {}", short(id)),
                None if view.signed => say!("{}", study::UNBOUND),
                None => {}
            }
            for (name, role, key) in &view.entries {
                let you = if *key == view.me { "  (you)" } else { "" };
                say!("{:<24} {:<8} {key}{you}", clean(name), role);
            }
            for r in &view.refused {
                say!("not counted: {r}");
            }
        }
    }
    Ok(())
}
