//! `raglab annotate create`, `raglab labels import|export|history|stress`, `raglab agree`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand};

use super::{Context, print_json};
use crate::core::agreement::{AgreementReport, Bootstrap, Estimate};
use crate::core::rng::Rng;
use crate::service::annotation::{
    Item, Label, PAPER_REFERENCE, agreement_table, current, items_table, judge_labels,
    labels_table, pick_reviewers, save_labels,
};
use crate::service::generation::{AnswerRecord, answers, judgements};
use crate::service::rubric::load_rubric;

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
    Import {
        file: PathBuf,
        #[arg(long)]
        rubric: Option<PathBuf>,
    },
    /// Export every label version (the whole history).
    Export {
        #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
        format: ExportFormat,
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
    },
}

#[derive(Debug, Args)]
pub struct AgreeArgs {
    #[arg(long, default_value_t = 2000)]
    pub bootstrap: usize,
    #[arg(long, default_value_t = 20_240_601)]
    pub seed: u64,
    /// The two reviewers to compare (default: the two with most labels).
    #[arg(long, value_delimiter = ',')]
    pub reviewers: Option<Vec<String>>,
    #[arg(long)]
    pub rubric: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

pub async fn create(ctx: &Context, cmd: AnnotateCmd) -> Result<()> {
    let AnnotateCmd::Create(args) = cmd;
    let existing: Vec<Item> = items_table(&ctx.workspace).read_all().await?;
    let mut items: Vec<Item> = if let Some(run) = &args.from_run {
        let all: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
        let chunks = crate::store::chunks::ChunkStore::new(&ctx.workspace)
            .load_all()
            .await?;
        let set = args.set.clone().unwrap_or_else(|| run.clone());
        let v: Vec<Item> = all
            .into_iter()
            .filter(|a| &a.run == run)
            .map(|a| Item {
                item_id: a.answer_id.clone(),
                set: set.clone(),
                target_chunk: a
                    .target_ids
                    .iter()
                    .filter_map(|t| chunks.iter().find(|c| &c.id == t))
                    .map(|c| c.text.clone())
                    .collect::<Vec<_>>()
                    .join("\n\n"),
                question: a.question,
                reference_answer: a.reference_answer.unwrap_or_default(),
                answer: a.answer,
                answer_id: Some(a.answer_id),
            })
            .collect();
        if v.is_empty() {
            bail!("no answers in run `{run}` (see `raglab report answers`)");
        }
        v
    } else if let Some(f) = &args.from_file {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?;
        let set = args.set.clone().unwrap_or_else(|| {
            f.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        let mut v = Vec::new();
        for (i, l) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let mut value: serde_json::Value = serde_json::from_str(l)
                .with_context(|| format!("{}:{}: invalid JSON", f.display(), i + 1))?;
            value["set"] = serde_json::Value::String(set.clone());
            let item: Item = serde_json::from_value(value)
                .with_context(|| format!("{}:{}: not an item", f.display(), i + 1))?;
            v.push(item);
        }
        v
    } else {
        bail!("give --from-run RUN or --from-file FILE");
    };
    if let Some(n) = args.sample {
        let idx = Rng::new(args.seed).sample_indices(items.len(), n);
        items = idx.into_iter().map(|i| items[i].clone()).collect();
    }
    items.retain(|i| !existing.iter().any(|e| e.item_id == i.item_id));
    if items.is_empty() {
        println!("no new items (all already present)");
        return Ok(());
    }
    items_table(&ctx.workspace).append(&items).await?;
    println!("created {} items", items.len());
    Ok(())
}

#[derive(serde::Deserialize)]
struct ImportRow {
    item_id: String,
    reviewer: String,
    criterion: String,
    label: Option<String>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    rubric_version: Option<String>,
}

pub async fn labels(ctx: &Context, cmd: LabelsCmd) -> Result<()> {
    match cmd {
        LabelsCmd::Import { file, rubric } => {
            let rubric = load_rubric(rubric.as_deref())?;
            let items: Vec<Item> = items_table(&ctx.workspace).read_all().await?;
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let mut rows = Vec::new();
            for (i, l) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let r: ImportRow = serde_json::from_str(l)
                    .with_context(|| format!("{}:{}: not a label row", file.display(), i + 1))?;
                let version = r
                    .rubric_version
                    .clone()
                    .unwrap_or_else(|| rubric.version.clone());
                rows.push(Label::new(
                    &r.item_id,
                    &r.reviewer,
                    &r.criterion,
                    r.label.as_deref(),
                    r.note.as_deref(),
                    &version,
                ));
            }
            let version = save_labels(&ctx.workspace, &rubric, &items, &rows)
                .await
                .with_context(|| format!("nothing imported from {}", file.display()))?;
            println!(
                "imported {} labels (labels dataset version {version})",
                rows.len()
            );
        }
        LabelsCmd::Export { format, out } => {
            let table = labels_table(&ctx.workspace);
            let dest = out.as_ref().map_or_else(
                || "standard output".to_string(),
                |p| p.display().to_string(),
            );
            let bytes: Vec<u8> = match format {
                ExportFormat::Jsonl => table
                    .read_all::<Label>()
                    .await?
                    .iter()
                    .map(|l| serde_json::to_string(l).unwrap_or_default() + "\n")
                    .collect::<String>()
                    .into_bytes(),
                ExportFormat::Csv => labels_csv(&table.read_all::<Label>().await?).into_bytes(),
                ExportFormat::Parquet => {
                    if out.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                        bail!("parquet is binary: give --out FILE or redirect standard output");
                    }
                    let mut buf = Vec::new();
                    table.export_parquet(&mut buf, &dest).await?;
                    buf
                }
            };
            match out {
                Some(p) => write_whole(&p, &bytes)?,
                None => {
                    use std::io::Write as _;
                    let mut stdout = std::io::stdout().lock();
                    stdout.write_all(&bytes)?;
                    stdout.flush()?;
                }
            }
        }
        LabelsCmd::History { item_id } => {
            let all: Vec<Label> = labels_table(&ctx.workspace).read_all().await?;
            let mut rows: Vec<&Label> = all.iter().filter(|l| l.item_id == item_id).collect();
            rows.sort_by_key(|l| l.seq);
            for l in rows {
                println!(
                    "{} {:<12} {:<20} {:<6} {}",
                    l.timestamp,
                    l.reviewer,
                    l.criterion,
                    l.label.as_deref().unwrap_or("(undone)"),
                    l.note.as_deref().unwrap_or("")
                );
            }
        }
        LabelsCmd::Stress { reviewer, count } => {
            let rubric = load_rubric(None)?;
            let items: Vec<Item> = items_table(&ctx.workspace).read_all().await?;
            if items.is_empty() {
                bail!("no items: run `raglab annotate create` first");
            }
            let mut rng = Rng::new(std::process::id().into());
            for n in 0..count {
                let item = &items[n % items.len()];
                let c = &rubric.criteria[rng.below(rubric.criteria.len())];
                let label = &rubric.labels_of(c)[rng.below(rubric.labels_of(c).len())];
                let l = Label::new(
                    &item.item_id,
                    &reviewer,
                    &c.key,
                    Some(label),
                    None,
                    &rubric.version,
                );
                let started = std::time::Instant::now();
                save_labels(&ctx.workspace, &rubric, &items, std::slice::from_ref(&l)).await?;
                println!(
                    "saved {} {:.1}ms",
                    l.label_id,
                    started.elapsed().as_secs_f64() * 1e3
                );
            }
        }
    }
    Ok(())
}

/// Every label version as CSV (all fields quoted, RFC 4180 escaping).
fn labels_csv(all: &[Label]) -> String {
    let esc = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let mut s = String::from(
        "label_id,item_id,reviewer,criterion,label,note,timestamp,seq,rubric_version\n",
    );
    for l in all {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{}",
            esc(&l.label_id),
            esc(&l.item_id),
            esc(&l.reviewer),
            esc(&l.criterion),
            esc(l.label.as_deref().unwrap_or("")),
            esc(l.note.as_deref().unwrap_or("")),
            esc(&l.timestamp),
            l.seq,
            esc(&l.rubric_version)
        );
    }
    s
}

/// Write `bytes` to a sibling temporary file and rename it over `path`, so an
/// interrupted export never leaves a truncated file where a good one was.
fn write_whole(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))
}

fn fmt_est(e: &Estimate) -> String {
    match (e.value, e.lo, e.hi) {
        (Some(v), Some(lo), Some(hi)) => format!("{v:.2} [{lo:.2}, {hi:.2}]"),
        (Some(v), _, _) => format!("{v:.2}"),
        _ => "undefined".into(),
    }
}

pub async fn agree(ctx: &Context, args: AgreeArgs) -> Result<()> {
    let rubric = load_rubric(args.rubric.as_deref())?;
    let items: Vec<Item> = items_table(&ctx.workspace).read_all().await?;
    let mut all: Vec<Label> = labels_table(&ctx.workspace).read_all().await?;
    all.extend(judge_labels(
        &items,
        &judgements(&ctx.workspace).read_all().await?,
    ));
    let cur = current(&all);
    let given = match args.reviewers.as_deref() {
        None => None,
        Some([a, b]) => Some((a.clone(), b.clone())),
        Some(other) => bail!(
            "--reviewers takes two names, e.g. --reviewers alice,bob (got {})",
            other.len()
        ),
    };
    let (r1, r2) = pick_reviewers(&cur, given)?;
    let boot = Bootstrap {
        resamples: args.bootstrap,
        seed: args.seed,
    };
    let started = std::time::Instant::now();
    let table = agreement_table(&rubric, &cur, (&r1, &r2), boot);
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        return print_json(&serde_json::json!({
            "reviewers": [r1, r2], "bootstrap": boot, "rows": table, "seconds": seconds, "paper_reference": PAPER_REFERENCE,
        }));
    }
    print!("{}", render_table(&table, &r1, &r2, boot));
    println!("({seconds:.2}s)");
    Ok(())
}

pub fn render_table(
    table: &[crate::service::annotation::AgreementRow],
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
