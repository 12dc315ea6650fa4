//! `raglab study key`, `raglab study roster add|rotate|remove|list`, `raglab study
//! seal-items` and `raglab study rubric pin|show`: who is who in a study, its items,
//! and its own rubric.

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
    /// Seal, as the lead, every item that has no sealed row yet (items of a study
    /// founded before items were sealed): in a signed study only the lead's sealed
    /// items are shown and labelled. Lists what it sealed, for the lead to check.
    SealItems,
    /// The study's rubric, pinned in the workspace by the lead: submission and reveal
    /// follow it in every view, whatever rubric a reviewer holds.
    Rubric {
        #[command(subcommand)]
        cmd: RubricCmd,
    },
}

#[derive(Debug, Subcommand)]
pub enum RubricCmd {
    /// Pin FILE (default: your rubric, `--rubric` or `[annotation] rubric`, else the
    /// built-in one) as the study's rubric (the lead only, once the roster is
    /// founded). A new pin is in force from the current end of the label log; a
    /// rubric that differs from the pinned one needs another version.
    Pin {
        /// The rubric TOML to pin (default: your rubric).
        file: Option<std::path::PathBuf>,
    },
    /// Show the study's pinned rubric, how yours differs from it, and the pin rows
    /// that do not count.
    Show {
        /// Print the pinned rubric as a rubric file (TOML) instead.
        #[arg(long)]
        toml: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum RosterCmd {
    /// Add NAME with public key KEY (the lead only; the lead's own entry, with
    /// `--lead` and their own key, founds the roster).
    Add {
        /// The reviewer's name, as they pass it to `--reviewer`.
        name: String,
        /// Their public key, as `raglab study key` prints it on their machine.
        key: String,
        /// This entry is the study lead (the first entry, with your own key).
        #[arg(long)]
        lead: bool,
    },
    /// Give NAME a new key NEWKEY (the lead only): labels NAME signed with the old
    /// key before it keep counting; from it on only the new key counts.
    Rotate {
        /// The reviewer's name in the roster.
        name: String,
        /// Their new public key, as `raglab study key` prints it.
        key: String,
    },
    /// Remove NAME from the roster (the lead only): their labels written before it
    /// keep counting; from it on none of theirs does.
    Remove {
        /// The reviewer's name in the roster.
        name: String,
    },
    /// List the roster and the entries that do not count.
    List {
        /// Print the result as one JSON document (its fields: docs/reference/json.md).
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
            Ok(())
        }
        StudyCmd::Roster { cmd } => roster(ctx, cmd).await,
        StudyCmd::SealItems => seal_items(ctx).await,
        StudyCmd::Rubric {
            cmd: RubricCmd::Pin { file },
        } => pin(ctx, file.as_deref()).await,
        StudyCmd::Rubric {
            cmd: RubricCmd::Show { toml },
        } => show(ctx, toml).await,
    }
}

/// `raglab study roster add|rotate|remove|list`.
async fn roster(ctx: &Context, cmd: RosterCmd) -> Result<()> {
    match cmd {
        RosterCmd::Add { name, key, lead } => roster_add(ctx, &name, &key, lead).await?,
        RosterCmd::Rotate { name, key } => {
            let e = study::roster_rotate(ctx, &name, &key).await?;
            say!(
                "{} now signs with key {} (from label row {}; earlier labels keep counting)",
                clean(&e.name),
                e.public_key,
                e.label_rows.unwrap_or(0)
            );
        }
        RosterCmd::Remove { name } => {
            let e = study::roster_remove(ctx, &name).await?;
            say!(
                "removed {} from the roster (from label row {}; earlier labels keep counting)",
                clean(&e.name),
                e.label_rows.unwrap_or(0)
            );
        }
        RosterCmd::List { json } => return roster_list(ctx, json).await,
    }
    Ok(())
}

/// `raglab study roster add NAME KEY [--lead]`: what founding did is said on stderr.
async fn roster_add(ctx: &Context, name: &str, key: &str, lead: bool) -> Result<()> {
    let added = study::roster_add(ctx, name, key, lead).await?;
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
    if added.sealed_items > 0 {
        tell!(
            "sealed the {} items already in the workspace with your key: in a signed study only the lead's sealed items count",
            added.sealed_items
        );
    }
    if added.earlier_labels > 0 {
        tell!(
            "warning: the {} label rows written before the roster was founded carry no study id and do not count in the signed study; their reviewers label again",
            added.earlier_labels
        );
    }
    Ok(())
}

/// `raglab study roster list [--json]`.
async fn roster_list(ctx: &Context, json: bool) -> Result<()> {
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
    Ok(())
}

/// `raglab study seal-items`: each item sealed on stdout, for the lead to check.
async fn seal_items(ctx: &Context) -> Result<()> {
    let sealed = study::seal_items(ctx).await?;
    for i in &sealed {
        say!("sealed {}  {}", clean(&i.item_id), clean(&i.question));
    }
    match sealed.len() {
        0 => tell!("every item is sealed already"),
        1 => tell!("1 item sealed"),
        n => tell!("{n} items sealed"),
    }
    Ok(())
}

/// The criteria of `r`, for a line: `4 criteria: a, b, c, d`.
fn criteria_line(r: &crate::core::rubric::Rubric) -> String {
    let keys: Vec<&str> = r.criteria.iter().map(|c| c.key.as_str()).collect();
    format!("{} criteria: {}", keys.len(), keys.join(", "))
}

/// `raglab study rubric pin [FILE]`.
async fn pin(ctx: &Context, file: Option<&std::path::Path>) -> Result<()> {
    let rubric = match file {
        Some(f) => crate::service::base::load_rubric(Some(f))?,
        None => ctx.rubric(None)?,
    };
    let done = study::pin_rubric(ctx, &rubric).await?;
    let (name, version) = (clean(&rubric.name), clean(&rubric.version));
    if done.unchanged {
        say!(
            "the study's rubric is {name} v{version} already ({}): nothing written",
            criteria_line(&rubric)
        );
        return Ok(());
    }
    say!(
        "pinned rubric {name} v{version} ({}) as the study's",
        criteria_line(&rubric)
    );
    match done.follows {
        Some((n, v)) => tell!(
            "it follows {} v{}, from label row {}: submissions and reveals before it stay where they happened",
            clean(&n),
            clean(&v),
            done.label_rows
        ),
        None => tell!(
            "in force from the start of the label log: submission and reveal follow it in every view"
        ),
    }
    Ok(())
}

/// `raglab study rubric show [--toml]`.
async fn show(ctx: &Context, toml: bool) -> Result<()> {
    let view = study::rubric_show(ctx).await?;
    let Some(p) = &view.pinned else {
        if toml {
            anyhow::bail!("this study has no pinned rubric");
        }
        say!(
            "no rubric pinned: each viewer's rubric decides submission and reveal (the study lead pins the study's with `raglab study rubric pin [FILE]`)"
        );
        for r in &view.refused {
            say!("not counted: {r}");
        }
        return Ok(());
    };
    if toml {
        say_part!("{}", study::rubric_toml(&p.rubric)?);
        return Ok(());
    }
    let r = &p.rubric;
    say!(
        "study rubric {} v{} ({}), pinned {}, in force from label row {}",
        clean(&r.name),
        clean(&r.version),
        criteria_line(r),
        clean(&p.pinned_at),
        p.label_rows
    );
    for c in &r.criteria {
        say!(
            "  {:<22} {:<24} {}",
            c.key,
            r.labels_of(c).join(", "),
            clean(&c.name)
        );
    }
    match &view.yours {
        Some((file, diff)) if diff.is_empty() => {
            say!("your rubric {} is the study's", clean(file));
        }
        Some((file, diff)) => {
            say!(
                "your rubric {} differs, so study commands refuse it:",
                clean(file)
            );
            for d in diff {
                say!("  {}", clean(d));
            }
        }
        None => {}
    }
    for r in &view.refused {
        say!("not counted: {r}");
    }
    Ok(())
}
