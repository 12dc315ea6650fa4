//! `raglab annotate create`, `raglab labels import|export|history|stress`, `raglab agree`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

use super::json_schema;
use crate::core::agreement::{AgreementReport, Bootstrap};
use crate::core::rng::Rng;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::Context;
use crate::service::study::{self, ItemSource, LabelVersion, RaterPair, Viewer};
use crate::service::study::{Label, PAPER_REFERENCE};

/// File formats of `raglab labels export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Csv,
    Jsonl,
    Parquet,
}

#[derive(Debug, Subcommand)]
pub enum AnnotateCmd {
    /// Create annotation items from a generation run or a JSONL file of items.
    Create(CreateArgs),
    /// Assign items (all, or one set) to a pair of reviewers: each item is revealed
    /// to them once both have submitted it.
    Assign {
        /// The two reviewers, e.g. `--reviewers alice,bob`.
        #[arg(long, value_delimiter = ',', required = true)]
        reviewers: Vec<String>,
        /// Only the items of this set.
        #[arg(long)]
        set: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Generation run whose answers become items.
    #[arg(long, conflicts_with = "from_file")]
    pub from_run: Option<String>,
    /// JSONL items `{item_id, question, reference_answer, target_chunk, answer}`.
    #[arg(long)]
    pub from_file: Option<PathBuf>,
    /// Item set name (default: the run name or the file stem).
    #[arg(long)]
    pub set: Option<String>,
    /// Take a random sample of N answers.
    #[arg(long)]
    pub sample: Option<usize>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Debug, Subcommand)]
pub enum LabelsCmd {
    /// Import labels from JSONL `{item_id, reviewer, criterion, label, note?, rubric_version?}`.
    Import { file: PathBuf },
    /// Export every label version (the whole history), or with `--final` the
    /// adjudicated set (agreed labels and the lead's final labels).
    Export {
        #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
        format: ExportFormat,
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
    History { item_id: String },
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

#[derive(Debug, Args)]
pub struct AgreeArgs {
    #[arg(long, default_value_t = 2000)]
    pub bootstrap: usize,
    #[arg(long, default_value_t = 20_240_601)]
    pub seed: u64,
    /// The reviewers: the first two are compared with each other and the judge
    /// (default: the two with most labels); with more than two (or two and an
    /// ordered rubric) Fleiss' kappa, Krippendorff's alpha and the pairwise kappas
    /// of all of them follow (default: every reviewer with labels).
    #[arg(long, value_delimiter = ',')]
    pub reviewers: Option<Vec<String>>,
    #[arg(long)]
    pub json: bool,
    /// Use each reviewer's newest label, changes after reveal included (default: the
    /// last label given before the item was revealed: what the reviewer decided blind).
    #[arg(long)]
    pub after_reveal: bool,
    /// Compare the judgements of this judge model file only (default: all).
    #[arg(long)]
    pub judge_model: Option<String>,
    /// Also write the table as CSV to this file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Also write the table as markdown to this file.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
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
        AnnotateCmd::Assign { reviewers, set } => {
            let Some((a, b)) = reviewer_pair(Some(&reviewers))? else {
                bail!("--reviewers takes two names");
            };
            let n = study::assign(ctx, (&a, &b), set.as_deref()).await?;
            say!("assigned {n} items to {} and {}", clean(&a), clean(&b));
            return Ok(());
        }
    };
    let source = match (args.from_run, args.from_file) {
        (Some(run), _) => ItemSource::Run(run),
        (None, Some(f)) => ItemSource::File(f),
        (None, None) => bail!("give --from-run RUN or --from-file FILE"),
    };
    let sample = args.sample.map(|n| (n, args.seed));
    let done = study::create_items(ctx, &source, args.set, sample).await?;
    if let Some(w) = done
        .missing_targets
        .warning("their items show no target chunk")
    {
        tell!("{w}");
    }
    match done.created {
        0 => say!("no new items (all already present)"),
        n => say!("created {n} items"),
    }
    Ok(())
}

/// `raglab labels ...` for `viewer`: exports and histories hold only what blinding
/// lets the viewer see (a reviewer: their own labels and the items revealed to them;
/// the lead: everything; no identity: nothing).
pub async fn labels(ctx: &Context, cmd: LabelsCmd, viewer: &Viewer) -> Result<()> {
    match cmd {
        LabelsCmd::Import { file } => {
            let rubric = ctx.rubric(None)?;
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
    let rubric = ctx.rubric(None)?;
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
    format: ExportFormat,
    out: Option<PathBuf>,
    reviewers: Option<Vec<String>>,
    viewer: &Viewer,
) -> Result<()> {
    let rubric = ctx.rubric(None)?;
    let pair = reviewer_pair(reviewers.as_deref())?;
    let (finals, unresolved, refused) = study::export_final(ctx, &rubric, pair, viewer).await?;
    tell_refused(&refused);
    let bytes = match format {
        ExportFormat::Jsonl => finals
            .iter()
            .map(|f| serde_json::to_string(f).map(|s| s + "\n"))
            .collect::<Result<String, _>>()?,
        ExportFormat::Csv => study::final_csv(&finals),
        ExportFormat::Parquet => bail!("--final writes jsonl or csv"),
    };
    match out {
        Some(p) => crate::service::base::write_whole(&p, bytes.as_bytes())?,
        None => say_part!("{bytes}"),
    }
    if unresolved > 0 {
        tell!("{}", unresolved_note(unresolved, viewer));
    }
    Ok(())
}

/// `raglab labels history ITEM` for `viewer`.
async fn history(ctx: &Context, item_id: &str, viewer: &Viewer) -> Result<()> {
    let rubric = ctx.rubric(None)?;
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
    format: ExportFormat,
    out: Option<PathBuf>,
    viewer: &Viewer,
) -> Result<()> {
    let dest = out.as_ref().map_or_else(
        || "standard output".to_string(),
        |p| p.display().to_string(),
    );
    if format == ExportFormat::Parquet
        && out.is_none()
        && std::io::IsTerminal::is_terminal(&std::io::stdout())
    {
        bail!("parquet is binary: give --out FILE or redirect standard output");
    }
    let format = match format {
        ExportFormat::Csv => study::ExportFormat::Csv,
        ExportFormat::Jsonl => study::ExportFormat::Jsonl,
        ExportFormat::Parquet => study::ExportFormat::Parquet,
    };
    let rubric = ctx.rubric(None)?;
    let export = study::export_labels(ctx, &rubric, format, &dest, viewer).await?;
    match out {
        Some(p) => crate::service::base::write_whole(&p, &export.bytes)?,
        None => {
            use std::io::Write as _;
            let on_terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
            let shown = match (on_terminal, format) {
                // Notes are untrusted text: on a terminal, a control character is
                // written as an escape, not acted on (a note holding OSC 52 would
                // write the clipboard). JSON escapes keep each line's value exact.
                (true, study::ExportFormat::Jsonl) => {
                    crate::core::text::json_for_terminal(&String::from_utf8_lossy(&export.bytes))
                        .into_bytes()
                }
                (true, study::ExportFormat::Csv) => {
                    crate::core::text::visible_controls(&String::from_utf8_lossy(&export.bytes))
                        .into_bytes()
                }
                _ => export.bytes,
            };
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(&shown)?;
            stdout.flush()?;
        }
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
/// reason only, never a way around it.
pub fn withheld_note(withheld: usize, viewer: &Viewer) -> Option<String> {
    match (withheld, viewer) {
        (0, _) => None,
        (_, Viewer::Nobody) => Some(study::NO_IDENTITY.to_string()),
        (n, _) => Some(format!(
            "{n} label versions not shown: blind until both reviewers of their item have submitted it and you have too"
        )),
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

use study::fmt_est;

/// `raglab agree` for `viewer`: a reviewer (`--reviewer NAME`) sees statistics over
/// the items revealed to them only; the lead (`--role lead`) everything; without an
/// identity nothing.
pub async fn agree(ctx: &Context, args: AgreeArgs, viewer: &Viewer) -> Result<()> {
    let rubric = ctx.rubric(None)?;
    let boot = Bootstrap {
        resamples: args.bootstrap,
        seed: args.seed,
    };
    let (reviewers, raters) = super::raters::reviewer_names(args.reviewers.as_deref())?;
    let req = study::AgreementRequest {
        reviewers,
        raters,
        boot,
        pair: RaterPair::Reviewers,
        viewer: viewer.clone(),
        version: if args.after_reveal {
            LabelVersion::Latest
        } else {
            LabelVersion::BeforeReveal
        },
        judge_model: args.judge_model.clone(),
    };
    let a = study::agreement_with(ctx, &rubric, req).await?;
    if let Some(p) = &args.csv {
        crate::service::base::write_whole(p, study::to_csv(&a).as_bytes())?;
    }
    if let Some(p) = &args.markdown {
        crate::service::base::write_whole(p, study::to_markdown(&a).as_bytes())?;
    }
    let (r1, r2) = &a.reviewers;
    if args.json {
        return json_schema::print(json_schema::AGREEMENT, &agree_json(&a));
    }
    say_part!("{}", render_table(&a.rows, &clean(r1), &clean(r2), boot));
    say!(
        "Judge within human noise (paired bootstrap Δκ = κ(judge, human) − κ({}, {}); within noise when the CI contains 0):",
        clean(r1),
        clean(r2)
    );
    for (name, n) in &a.noise {
        say!(
            "{:<20} | vs {}: {} {} | vs {}: {} {} | {} items",
            clean(name),
            clean(r1),
            study::fmt_est(&n.vs_first),
            study::noise_verdict(&n.vs_first),
            clean(r2),
            study::fmt_est(&n.vs_second),
            study::noise_verdict(&n.vs_second),
            n.items
        );
    }
    if a.judge_vs_final.iter().any(|(_, r)| r.is_some()) {
        for (name, r) in &a.judge_vs_final {
            if let Some(r) = r {
                say!(
                    "judge vs final {:<20} kappa {} macro-F1 {}",
                    clean(name),
                    study::fmt_est(&r.kappa),
                    study::fmt_est(&r.macro_f1)
                );
            }
        }
    }
    if let Some(r) = &a.raters {
        say_part!("{}", super::raters::render(r));
    }
    say_versions(&a);
    say_trust(&a);
    say!("({:.2}s)", a.seconds);
    Ok(())
}

/// Which label versions counted, and how many changed after reveal.
fn say_versions(a: &study::Agreement) {
    say!(
        "labels: {} · {} labels changed after reveal ({} versions given after reveal){}",
        match a.version {
            LabelVersion::BeforeReveal =>
                "last given before reveal (--after-reveal for the newest)",
            LabelVersion::Latest => "newest, changes after reveal included",
        },
        a.changed_after_reveal,
        a.labels_after_reveal,
        if a.hidden_items > 0 {
            format!(" · {} items not revealed to you left out", a.hidden_items)
        } else {
            String::new()
        }
    );
}

/// Whether the study is signed, and every stored row that does not count.
fn say_trust(a: &study::Agreement) {
    if a.signed {
        say!("signed study: every counted label is signed by its reviewer's key");
    } else {
        say!("{}", study::UNSIGNED);
    }
    if !a.refused.is_empty() {
        say!(
            "{} stored rows not counted (unsigned or forged):",
            a.refused.len()
        );
        for r in &a.refused {
            say!("  {r}");
        }
    }
}

/// `raglab agree --json`'s document.
pub fn agree_json(a: &study::Agreement) -> serde_json::Value {
    serde_json::json!({
        "reviewers": [a.reviewers.0, a.reviewers.1], "bootstrap": a.bootstrap, "rows": a.rows,
        "seconds": a.seconds, "paper_reference": PAPER_REFERENCE, "judge_within_noise": a.noise,
        "judge_vs_final": a.judge_vs_final, "labels": a.version,
        "changed_after_reveal": a.changed_after_reveal,
        "labels_after_reveal": a.labels_after_reveal, "judge_model": a.judge_model,
        "judge_models": a.judge_models, "hidden_items": a.hidden_items,
        "signed": a.signed, "refused": a.refused, "raters": a.raters,
    })
}

pub fn render_table(
    table: &[crate::service::study::AgreementRow],
    r1: &str,
    r2: &str,
    boot: Bootstrap,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Cohen's kappa and macro-F1 with 95% percentile bootstrap CIs (B = {}, seed {})",
        boot.resamples, boot.seed
    );
    let _ = writeln!(
        s,
        "{:<20} | {:^44} | {:^44} | {:^44}",
        "",
        format!("{r1} vs {r2}"),
        format!("judge vs {r1}"),
        format!("judge vs {r2}")
    );
    let _ = writeln!(
        s,
        "{:<20} | {:<21} {:<22} | {:<21} {:<22} | {:<21} {:<22}",
        "criterion", "kappa", "macro-F1", "kappa", "macro-F1", "kappa", "macro-F1"
    );
    for row in table {
        let cells: Vec<String> = row
            .pairs
            .iter()
            .map(|(_, r)| match r {
                Some(AgreementReport {
                    kappa, macro_f1, ..
                }) => format!("{:<21} {:<22}", fmt_est(kappa), fmt_est(macro_f1)),
                None => format!("{:<21} {:<22}", "no data", ""),
            })
            .collect();
        let _ = writeln!(s, "{:<20} | {}", row.criterion, cells.join(" | "));
    }
    let _ = writeln!(s, "{PAPER_REFERENCE}");
    s
}
