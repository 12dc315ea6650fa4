//! `raglab annotate create|assign|gold`, `raglab labels import|export|history|stress`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

pub use super::agree::{AgreeArgs, agree, agree_json, render_table};
use crate::core::rng::Rng;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::Context;
use crate::service::study::{self, ItemSource, Label, Viewer};

/// File formats of `raglab labels export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormatArg {
    Csv,
    Jsonl,
    Parquet,
}

#[derive(Debug, Subcommand)]
pub enum AnnotateCmd {
    /// Create annotation items from a generation run or a JSONL file of items.
    Create(CreateArgs),
    /// Assign items (all, or one set) to their reviewers: every named reviewer, or
    /// with `--per-item K` K of them per item (balanced: loads differ by at most
    /// one; seeded). Each reviewer's queue holds only their items; an item is
    /// revealed once all its reviewers have submitted it.
    Assign {
        /// The reviewers, e.g. `--reviewers alice,bob` (a pair) or
        /// `--reviewers alice,bob,carol --per-item 2`.
        #[arg(long, value_delimiter = ',', required = true)]
        reviewers: Vec<String>,
        /// Reviewers per item, 2 to the number named (default: all of them).
        #[arg(long)]
        per_item: Option<usize>,
        /// Seed of the design (which reviewers get which item).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Only the items of this set.
        #[arg(long)]
        set: Option<String>,
    },
    /// Mark gold items (the lead only): JSONL rows `{item_id, criterion, label}`
    /// set each item's expected label per criterion (`"label": null` withdraws
    /// one). Run before `annotate assign`, which gives gold items to every reviewer.
    Gold {
        /// The gold labels JSONL.
        file: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Generation run whose answers become items.
    #[arg(long, conflicts_with = "from_file")]
    pub from_run: Option<String>,
    /// Two runs whose answers to the same question become pair items (a pairwise
    /// study: reviewers label each criterion first, second or tie; the order of each
    /// pair is drawn with --seed and the run names are hidden).
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["from_run", "from_file"])]
    pub pairs: Option<Vec<String>>,
    /// JSONL items `{item_id, question, reference_answer, target_chunk, answer}`.
    #[arg(long)]
    pub from_file: Option<PathBuf>,
    /// Item set name (default: the run name or the file stem).
    #[arg(long)]
    pub set: Option<String>,
    /// Take a random sample of N answers.
    #[arg(long)]
    pub sample: Option<usize>,
    /// Seed of `--sample` (the same seed, the same answers).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// In a signed study, also take the answers these signers stored (names on the
    /// roster, or public keys as `raglab study key` prints them on the machine that
    /// generated): by default only answers signed by the lead's key are taken.
    #[arg(long, value_delimiter = ',', conflicts_with = "from_file")]
    pub answers_by: Vec<String>,
    /// In a signed study, also take answers that carry no signature (stored by a
    /// raglab before answers were signed): the lead vouches for them.
    #[arg(long, conflicts_with = "from_file")]
    pub unsigned_answers: bool,
}

#[derive(Debug, Subcommand)]
pub enum LabelsCmd {
    /// Import labels from JSONL `{item_id, reviewer, criterion, label, note?, rubric_version?}`.
    Import {
        /// The labels JSONL (one label per line).
        file: PathBuf,
    },
    /// Export every label version (the whole history), or with `--final` the
    /// adjudicated set (agreed labels and the lead's final labels).
    Export {
        /// File format of the export.
        #[arg(long, value_enum, default_value_t = ExportFormatArg::Jsonl)]
        format: ExportFormatArg,
        /// The adjudicated set of the reviewer pair instead of the history (jsonl or csv).
        #[arg(long = "final")]
        final_set: bool,
        /// The pair of `--final` (default: the two with most labels).
        #[arg(long, value_delimiter = ',')]
        reviewers: Option<Vec<String>>,
        /// Destination file (written whole, then renamed into place); standard
        /// output when absent (parquet only when it is not a terminal).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Show the version history of one item's labels.
    History {
        /// The item id, as `labels export` and the Annotate pane show it.
        item_id: String,
    },
    /// Label items in a loop, printing `saved LABEL_ID` after each commit (durability
    /// and concurrency tests, and the save-latency benchmark).
    #[command(hide = true)]
    Stress {
        #[arg(long)]
        reviewer: String,
        #[arg(long, default_value_t = 100)]
        count: usize,
        /// Skip syncing each commit to disk (only to measure what syncing costs).
        #[arg(long)]
        no_fsync: bool,
    },
}

/// Parse `--reviewers a,b`.
fn reviewer_pair(given: Option<&[String]>) -> Result<Option<(String, String)>> {
    match given {
        None => Ok(None),
        Some([a, b]) => Ok(Some((a.clone(), b.clone()))),
        Some(other) => bail!(
            "--reviewers takes two names, e.g. --reviewers alice,bob (got {})",
            other.len()
        ),
    }
}

pub async fn create(ctx: &Context, cmd: AnnotateCmd) -> Result<()> {
    let args = match cmd {
        AnnotateCmd::Create(args) => args,
        AnnotateCmd::Assign {
            reviewers,
            per_item,
            seed,
            set,
        } => {
            let done = study::assign(ctx, &reviewers, per_item, seed, set.as_deref()).await?;
            let loads: Vec<String> = done
                .loads
                .iter()
                .map(|(r, n)| format!("{} {n}", clean(r)))
                .collect();
            let gold = match done.gold {
                0 => String::new(),
                g => format!(" ({g} gold, to every reviewer)"),
            };
            say!(
                "assigned {} items{gold}, {} reviewers each (seed {seed}): {}",
                done.items,
                done.per_item,
                loads.join(", ")
            );
            return Ok(());
        }
        AnnotateCmd::Gold { file } => {
            let rubric = crate::service::study::study_rubric(ctx).await?;
            let n = study::mark_gold(ctx, &rubric, &file).await?;
            say!("set {n} gold labels");
            return Ok(());
        }
    };
    let accept = study::AnswerSigners {
        by: args.answers_by,
        unsigned: args.unsigned_answers,
    };
    if let Some(runs) = &args.pairs {
        let [a, b] = runs.as_slice() else {
            bail!("--pairs takes two runs: --pairs RUN_A,RUN_B");
        };
        let sample = args.sample.map(|n| (n, args.seed));
        let done =
            study::create_pair_items(ctx, (a, b), args.set, sample, args.seed, &accept).await?;
        tell_what_was_left(&done);
        match done.created {
            0 => say!("no new pair items (all already present)"),
            n => say!(
                "created {n} pair items of {} and {} (order drawn with seed {}); reviewers label each criterion first, second or tie",
                clean(a),
                clean(b),
                args.seed
            ),
        }
        return Ok(());
    }
    let source = match (args.from_run, args.from_file) {
        (Some(run), _) => ItemSource::Run(run, accept),
        (None, Some(f)) => ItemSource::File(f),
        (None, None) => bail!("give --from-run RUN, --from-file FILE or --pairs RUN_A,RUN_B"),
    };
    let sample = args.sample.map(|n| (n, args.seed));
    let done = study::create_items(ctx, &source, args.set, sample).await?;
    tell_what_was_left(&done);
    if let Some(w) = done
        .missing_targets
        .warning("their items show no target chunk")
    {
        tell!("{w}");
    }
    match done.created {
        0 => say!("no new items (all already present)"),
        1 => say!("created 1 item"),
        n => say!("created {n} items"),
    }
    Ok(())
}

/// Say on standard error (the lead reads it before labelling starts) the item rows
/// already stored that do not count and, in a signed study, whose answers items were
/// made from and each answer left out.
fn tell_what_was_left(done: &study::CreatedItems) {
    tell_each(
        "item rows not counted",
        done.refused_items.iter().map(|r| &r.why),
    );
    let taken = &done.answers;
    if let Some(by) = &taken.signed_by {
        tell!("items are made from the answers signed by {}", clean(by));
        tell_each("left out answers", taken.left_out.iter().map(|r| &r.why));
    }
}

/// `TITLE: N` and the first 20 lines, each on its own line.
fn tell_each<'a>(title: &str, lines: impl ExactSizeIterator<Item = &'a String>) {
    const SHOWN: usize = 20;
    let n = lines.len();
    if n == 0 {
        return;
    }
    tell!("{title}: {n}");
    for line in lines.take(SHOWN) {
        tell!("  {}", clean(line));
    }
    if n > SHOWN {
        tell!("  and {} more", n - SHOWN);
    }
}

/// `raglab labels ...` for `viewer`: exports and histories hold only what blinding
/// lets the viewer see (a reviewer: their own labels and the items revealed to them;
/// the lead: everything; no identity: nothing).
pub async fn labels(ctx: &Context, cmd: LabelsCmd, viewer: &Viewer) -> Result<()> {
    match cmd {
        LabelsCmd::Import { file } => {
            let rubric = crate::service::study::study_rubric(ctx).await?;
            let (n, version) = study::import_labels(ctx, &rubric, &file).await?;
            say!("imported {n} labels (labels dataset version {version})");
        }
        LabelsCmd::Export {
            format,
            out,
            final_set: true,
            reviewers,
        } => export_final(ctx, format, out, reviewers, viewer).await?,
        LabelsCmd::Export { format, out, .. } => export(ctx, format, out, viewer).await?,
        LabelsCmd::History { item_id } => history(ctx, &item_id, viewer).await?,
        LabelsCmd::Stress {
            reviewer,
            count,
            no_fsync,
        } => stress(ctx, &reviewer, count, no_fsync).await?,
    }
    Ok(())
}

/// `raglab labels stress` (hidden): commit `count` random labels of `reviewer` one by
/// one and print each call-to-committed time, then the quantiles (the label-commit
/// figures). `no_fsync` measures the same commits without syncing.
async fn stress(ctx: &Context, reviewer: &str, count: usize, no_fsync: bool) -> Result<()> {
    let ctx = &Context {
        workspace: ctx.workspace.clone().with_durability(!no_fsync),
        ..ctx.clone()
    };
    let rubric = crate::service::study::study_rubric(ctx).await?;
    let items = study::load_study(ctx).await?.items;
    if items.is_empty() {
        bail!("no items: run `raglab annotate create` first");
    }
    let mut rng = Rng::new(std::process::id().into());
    let mut times = Vec::with_capacity(count);
    for n in 0..count {
        let item = &items[n % items.len()];
        let c = &rubric.criteria[rng.below(rubric.criteria.len())];
        let label = &rubric.labels_of(c)[rng.below(rubric.labels_of(c).len())];
        let l = Label::new(
            &item.item_id,
            reviewer,
            &c.key,
            Some(label),
            None,
            &rubric.version,
        );
        let ms = study::save_label(ctx, &rubric, &items, &l).await?;
        say!("saved {} {ms:.1}ms", l.label_id);
        times.push(ms);
    }
    let q = |p| crate::core::stats::quantile(&times, p).unwrap_or(f64::NAN);
    tell!(
        "{count} labels saved ({}): call-to-committed p50 {:.1} ms, p95 {:.1} ms",
        if ctx.workspace.is_remote() {
            "on the object store"
        } else if no_fsync {
            "not synced"
        } else {
            "synced"
        },
        q(0.5),
        q(0.95)
    );
    Ok(())
}

/// `raglab labels export --final` for `viewer`.
async fn export_final(
    ctx: &Context,
    format: ExportFormatArg,
    out: Option<PathBuf>,
    reviewers: Option<Vec<String>>,
    viewer: &Viewer,
) -> Result<()> {
    let rubric = crate::service::study::study_rubric(ctx).await?;
    let pair = reviewer_pair(reviewers.as_deref())?;
    let (finals, unresolved, refused) = study::export_final(ctx, &rubric, pair, viewer).await?;
    tell_refused(&refused);
    let bytes = match format {
        ExportFormatArg::Jsonl => finals
            .iter()
            .map(|f| serde_json::to_string(f).map(|s| s + "\n"))
            .collect::<Result<String, _>>()?,
        ExportFormatArg::Csv => study::final_csv(&finals),
        ExportFormatArg::Parquet => bail!("--final writes jsonl or csv"),
    };
    match out {
        Some(p) => crate::service::base::write_whole(&p, bytes.as_bytes())?,
        None => write_export(bytes.as_bytes(), format == ExportFormatArg::Jsonl)?,
    }
    if unresolved > 0 {
        tell!("{}", unresolved_note(unresolved, viewer));
    }
    Ok(())
}

/// An export on standard output. Piped or redirected, the bytes are written as they
/// are, so `> file` holds exactly what `--out file` writes. On a terminal, ids, notes
/// and rationales are untrusted text: a control character is written as an escape,
/// not acted on (a note holding OSC 52 would write the clipboard), JSON escapes
/// (`jsonl`) keeping each line's value exact.
fn write_export(bytes: &[u8], jsonl: bool) -> Result<()> {
    use std::io::Write as _;
    let on_terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let text = || String::from_utf8_lossy(bytes);
    let shown = match (on_terminal, jsonl) {
        (true, true) => crate::core::text::json_for_terminal(&text()).into_bytes(),
        (true, false) => crate::core::text::visible_controls(&text()).into_bytes(),
        (false, _) => bytes.to_vec(),
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&shown)?;
    stdout.flush()?;
    Ok(())
}

/// `raglab labels history ITEM` for `viewer`.
async fn history(ctx: &Context, item_id: &str, viewer: &Viewer) -> Result<()> {
    let rubric = crate::service::study::study_rubric(ctx).await?;
    let h = study::label_history(ctx, &rubric, item_id, viewer).await?;
    say_part!("{}", history_text(&h.rows));
    if let Some(note) = withheld_note(h.withheld, viewer) {
        tell!("{note}");
    }
    tell_refused(&h.refused);
    if !h.signed {
        tell!("{}", study::UNSIGNED);
    }
    Ok(())
}

/// `raglab labels export` (the history, not `--final`) for `viewer`.
async fn export(
    ctx: &Context,
    format: ExportFormatArg,
    out: Option<PathBuf>,
    viewer: &Viewer,
) -> Result<()> {
    let dest = out.as_ref().map_or_else(
        || "standard output".to_string(),
        |p| p.display().to_string(),
    );
    if format == ExportFormatArg::Parquet
        && out.is_none()
        && std::io::IsTerminal::is_terminal(&std::io::stdout())
    {
        bail!("parquet is binary: give --out FILE or redirect standard output");
    }
    let format = match format {
        ExportFormatArg::Csv => study::ExportFormat::Csv,
        ExportFormatArg::Jsonl => study::ExportFormat::Jsonl,
        ExportFormatArg::Parquet => study::ExportFormat::Parquet,
    };
    let rubric = crate::service::study::study_rubric(ctx).await?;
    let export = study::export_labels(ctx, &rubric, format, &dest, viewer).await?;
    match out {
        Some(p) => crate::service::base::write_whole(&p, &export.bytes)?,
        // Parquet never reaches a terminal (refused above).
        None => write_export(&export.bytes, format == study::ExportFormat::Jsonl)?,
    }
    if let Some(note) = withheld_note(export.withheld, viewer) {
        tell!("{note}");
    }
    tell_refused(&export.refused);
    if !export.signed {
        tell!("{}", study::UNSIGNED);
    }
    Ok(())
}

/// Name every stored row that does not count (on standard error).
fn tell_refused(refused: &[study::Refusal]) {
    if !refused.is_empty() {
        tell!(
            "{} stored rows not counted (unsigned or forged):",
            refused.len()
        );
        for r in refused {
            tell!("  {r}");
        }
    }
}

/// `labels history`'s text: one line per label version.
pub fn history_text(rows: &[Label]) -> String {
    let mut s = String::new();
    for l in rows {
        let _ = writeln!(
            s,
            "{} {:<12} {:<20} {:<6} {}",
            clean(&l.timestamp),
            clean(&l.reviewer),
            clean(&l.criterion),
            clean(l.label.as_deref().unwrap_or("(undone)")),
            clean(l.note.as_deref().unwrap_or(""))
        );
    }
    s
}

/// What a viewer is told about label versions left out of what they asked for; the
/// reason only, never a way around it, and never how many: a count of an item's
/// hidden versions would tell a reviewer how often their partner labelled it before
/// the reveal.
pub fn withheld_note(withheld: usize, viewer: &Viewer) -> Option<String> {
    match (withheld, viewer) {
        (0, _) => None,
        (_, Viewer::Nobody) => Some(study::NO_IDENTITY.to_string()),
        (_, _) => Some(
            "some label versions are not shown: blind until both reviewers of their item have submitted it and you have too"
                .to_string(),
        ),
    }
}

/// The note on unresolved disagreements of `--final`.
fn unresolved_note(unresolved: usize, viewer: &Viewer) -> String {
    match viewer {
        Viewer::Lead => format!(
            "{unresolved} disagreements are unresolved (label null, source `unresolved`): adjudicate them in the Agreement pane"
        ),
        _ => format!(
            "{unresolved} disagreements are unresolved (label null, source `unresolved`): the study lead adjudicates them"
        ),
    }
}
