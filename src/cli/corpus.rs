//! `raglab corpus stats|list|show`.

use anyhow::Result;
use clap::Subcommand;

use super::json_schema;
use crate::core::chunk::Chunk;
use crate::core::stats::corpus_stats;
use crate::core::text::{sanitize_for_terminal as clean, snippet};
use crate::service::{Context, corpus};

#[derive(Debug, Subcommand)]
pub enum CorpusCmd {
    /// Counts: documents, chunks, words, topics, chunk-length histogram.
    Stats {
        /// Print the result as one JSON document (its fields: docs/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// List chunks (optionally of one document).
    List {
        /// Only chunks of this document id.
        #[arg(long)]
        doc: Option<String>,
        /// Print the result as one JSON document (its fields: docs/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Show one chunk with its metadata and full text.
    Show {
        /// The chunk id, as `corpus list` and `search` print it.
        chunk_id: String,
        /// Print the result as one JSON document (its fields: docs/reference/json.md).
        #[arg(long)]
        json: bool,
    },
}

/// A chunk's token count and the tokenizer that took it.
fn token_line(c: &crate::core::chunk::Chunk) -> String {
    match (c.token_count, &c.token_model) {
        (Some(n), Some(m)) => format!("{n} ({} tokenizer)", clean(m)),
        (Some(n), None) => n.to_string(),
        _ => "not counted yet (`raglab index` counts them with the embedding model)".into(),
    }
}

pub async fn run(ctx: &Context, cmd: CorpusCmd) -> Result<()> {
    let chunks = corpus::chunks(ctx).await?;
    match cmd {
        CorpusCmd::Stats { json } => stats(&chunks, json),
        CorpusCmd::List { doc, json } => list(&chunks, doc.as_deref(), json),
        CorpusCmd::Show { chunk_id, json } => show(ctx, &chunks, &chunk_id, json).await,
    }
}

/// `corpus stats`: counts, topics and the chunk-length histogram.
fn stats(chunks: &[Chunk], json: bool) -> Result<()> {
    let s = corpus_stats(chunks);
    if json {
        return json_schema::print(json_schema::CORPUS_STATS, &s);
    }
    say!("documents  {}", s.documents);
    say!("chunks     {}", s.chunks);
    say!("words      {}", s.words);
    say!(
        "words/chunk min {} median {} max {}",
        s.min_words,
        s.median_words,
        s.max_words
    );
    say!("topics     {}", s.topics.len());
    for (t, n) in &s.topics {
        say!("  {:<28} {n} documents", clean(t));
    }
    say!("chunk length (words)");
    let max = s
        .length_histogram
        .iter()
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(1)
        .max(1);
    for (label, n) in &s.length_histogram {
        say!("  {label:>8} {n:>6} {}", "#".repeat(n * 40 / max));
    }
    Ok(())
}

/// `corpus list`: one line per chunk of a document (all without `doc`).
fn list(chunks: &[Chunk], doc: Option<&str>, json: bool) -> Result<()> {
    let sel = corpus::of_document(chunks, doc)?;
    if json {
        let rows: Vec<_> = sel
            .iter()
            .map(|c| {
                serde_json::json!({
                    "id": c.id, "doc_id": c.doc_id, "title": c.title, "topic": c.topic,
                    "header_path": c.header_path, "word_count": c.word_count,
                    "token_count": c.token_count, "token_model": c.token_model,
                    "byte_start": c.byte_start, "byte_end": c.byte_end,
                })
            })
            .collect();
        return json_schema::print_list(json_schema::CORPUS_LIST, &rows);
    }
    for c in sel {
        say!(
            "{}\t{}\t{}",
            clean(&c.id),
            c.word_count,
            clean(&c.path_label())
        );
    }
    Ok(())
}

/// `corpus show`: one chunk whole, with its summary when it has one.
async fn show(ctx: &Context, chunks: &[Chunk], chunk_id: &str, json: bool) -> Result<()> {
    let c = corpus::find(chunks, chunk_id)?;
    if json {
        return json_schema::print(json_schema::CHUNK, c);
    }
    say!("id        {}", clean(&c.id));
    say!("document  {} ({})", clean(&c.doc_id), clean(&c.title));
    say!("topic     {}", clean(c.topic.as_deref().unwrap_or("-")));
    say!("path      {}", clean(&c.path_label()));
    say!(
        "words     {}   bytes {}..{}",
        c.word_count,
        c.byte_start,
        c.byte_end
    );
    say!("tokens    {}", token_line(c));
    say!("preview   {}", clean(&snippet(&c.text, 80)));
    say!();
    say!("{}", clean(&c.text));
    if let Some(s) = corpus::summary_of(ctx, c).await? {
        say!();
        say!("summary ({}, {})", clean(&s.model_file), s.created_at);
        say!("{}", clean(&s.summary));
    }
    Ok(())
}
