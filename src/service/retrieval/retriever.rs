//! The retrieval service: keeps the sparse index and the dense vectors of a workspace in
//! step with its chunks, and computes every rank list of a query once.

use std::collections::HashMap;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use crate::core::chunk::Chunk;
use crate::core::compare::WholePlaces;
use crate::core::fusion::{FusedHit, Fusion, RRF_C, Scored};
use crate::core::retrieval::{Method, QueryLists, RunConfig, Sparse};
use crate::core::shard::Shard;
use crate::core::variant::{REDUCE_ABOVE_TOKENS, Variant, retrieval_chunks};
use crate::infer::embed::{EmbedConfig, Embedder};
use crate::service::base::{Context, ModelChoice, Progress};
use crate::store::chunks::ChunkStore;
use crate::store::sparse::{SparseIndex, SyncSummary, text_hash};
use crate::store::vectors::{VectorSet, VectorStore, merge, stale};
use crate::store::workspace::Workspace;

use super::on_demand::{lists_on_demand, places_on_demand};

/// Depth of each retriever's list: deep enough that reciprocal rank is computed over
/// (nearly) the whole ranking, as trec_eval's is.
pub const DEFAULT_DEPTH: usize = 100;

/// Where the time of one query went, in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct QueryTimings {
    pub embed_ms: f64,
    pub dense_ms: f64,
    pub bm25_ms: f64,
    pub tfidf_ms: f64,
    pub fusion_ms: f64,
}

impl QueryTimings {
    /// Each stage's time in both (two steps of one query).
    pub fn plus(&self, other: &Self) -> Self {
        Self {
            embed_ms: self.embed_ms + other.embed_ms,
            dense_ms: self.dense_ms + other.dense_ms,
            bm25_ms: self.bm25_ms + other.bm25_ms,
            tfidf_ms: self.tfidf_ms + other.tfidf_ms,
            fusion_ms: self.fusion_ms + other.fusion_ms,
        }
    }
}

/// Chunks embedded between two checkpoints of `raglab index` by default.
pub const CHECKPOINT_CHUNKS: usize = 2_048;

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct IndexSummary {
    pub chunks: usize,
    pub sparse: SyncSummary,
    pub embedded: usize,
    pub embed_seconds: f64,
    pub chunks_per_second: f64,
}

/// The retrieval state of one corpus variant (C_F full chunks, C_S summaries, C_R
/// summaries of the chunks over the embedder's window only). `chunks` are always the full
/// chunks (what browsing and prompts show); the indexes hold the variant's text of each
/// chunk under the same id, so a ranking of C_S still hands generation the full chunk.
pub struct Retriever {
    pub chunks: Vec<Chunk>,
    pub by_id: HashMap<String, usize>,
    pub sparse: SparseIndex,
    pub vectors: VectorSet,
    pub embedder: Option<Embedder>,
    pub model_name: Option<String>,
    /// Which corpus the indexes hold.
    pub variant: Variant,
    /// Chunks indexed under their summary in this variant.
    pub summarised: usize,
    /// The chunks as the variant indexes them (`None` for C_F: `chunks` themselves).
    indexed: Option<Vec<Chunk>>,
}

/// Where a variant's sparse index lives (`index/bm25`, `index/bm25-S`, ...).
fn sparse_dir(variant: Variant) -> String {
    format!("{}{}", crate::store::sparse::INDEX_DIR, variant.suffix())
}

/// The vector dataset key of a model's embeddings of a variant (the model name for C_F).
fn vectors_key(model: &str, variant: Variant) -> String {
    format!("{model}{}", variant.suffix())
}

impl Retriever {
    /// Open the workspace's retrieval state over the full chunks (C_F). With an
    /// embedder, dense retrieval uses its model's vectors (which must have been built
    /// by [`Retriever::build`]).
    pub async fn open(ws: &Workspace, embed: Option<&EmbedConfig>) -> Result<Self> {
        Self::open_variant(ws, embed, Variant::Full).await
    }

    /// [`Retriever::open`] over a corpus variant: C_S and C_R need the summaries of
    /// the chunks they replace (`raglab summarise`), C_R the chunks' token counts
    /// (`raglab index`).
    pub async fn open_variant(
        ws: &Workspace,
        embed: Option<&EmbedConfig>,
        variant: Variant,
    ) -> Result<Self> {
        // No chunks is the first thing to say (before any model is loaded).
        ChunkStore::new(ws).open().await?;
        let embedder = embed.map(Embedder::spawn).transpose()?;
        Self::open_with(ws, embedder, variant).await
    }

    /// [`Retriever::open_variant`] with an embedder already loaded.
    pub async fn open_with(
        ws: &Workspace,
        embedder: Option<Embedder>,
        variant: Variant,
    ) -> Result<Self> {
        let store = ChunkStore::new(ws);
        store.open().await?;
        let chunks = store.load_all().await?;
        let mut sparse = SparseIndex::open(&ws.path(&sparse_dir(variant)))?;
        let (vectors, model_name) = match &embedder {
            Some(e) => {
                let name = e.info.name.clone();
                let v = VectorStore::new(ws, &vectors_key(&name, variant))
                    .load()
                    .await?;
                (v, Some(name))
            }
            None => (VectorSet::default(), None),
        };
        let (indexed, summarised) = match variant {
            Variant::Full => (None, 0),
            _ => {
                if let (Variant::Reduced, Some(name)) = (variant, &model_name)
                    && let Some(c) = chunks
                        .iter()
                        .find(|c| c.token_model.as_deref().is_some_and(|m| m != name.as_str()))
                {
                    bail!(
                        "chunk `{}` was counted with {}'s tokenizer, not {name}'s: run `raglab index` with this model to recount",
                        c.id,
                        c.token_model.as_deref().unwrap_or("?")
                    );
                }
                let summaries = crate::service::corpus::summary_texts(ws, &chunks).await?;
                let (v, n) = retrieval_chunks(variant, &chunks, &summaries, REDUCE_ABOVE_TOKENS)?;
                (Some(v), n)
            }
        };
        if ws.is_remote() {
            // The BM25 index is derived data kept on this machine: brought up to the
            // chunks on the object store (touching only what changed) before use.
            sparse.sync(indexed.as_deref().unwrap_or(&chunks))?;
        }
        let by_id = chunks
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id.clone(), i))
            .collect();
        Ok(Self {
            chunks,
            by_id,
            sparse,
            vectors,
            embedder,
            model_name,
            variant,
            summarised,
            indexed,
        })
    }

    /// The chunks as this variant indexes them.
    pub fn index_chunks(&self) -> &[Chunk] {
        self.indexed.as_deref().unwrap_or(&self.chunks)
    }

    /// The vector dataset key of this retriever's model and variant.
    fn vectors_key(&self) -> Option<String> {
        self.model_name
            .as_deref()
            .map(|m| vectors_key(m, self.variant))
    }

    /// This retriever without its embedder and vectors: BM25 and TF-IDF only.
    pub fn without_dense(mut self) -> Self {
        self.embedder = None;
        self.vectors = VectorSet::default();
        self.model_name = None;
        self
    }

    /// Whether the indexes hold exactly the current chunks.
    pub fn is_fresh(&self) -> bool {
        let sparse_ok = self.sparse.num_docs() as usize == self.chunks.len();
        sparse_ok
            && (self.embedder.is_none() || {
                let want: Vec<(String, String)> = self
                    .index_chunks()
                    .iter()
                    .map(|c| (c.id.clone(), text_hash(c)))
                    .collect();
                self.vectors.len() == want.len() && stale(&self.vectors, &want).is_empty()
            })
    }

    /// An error telling the user to run `raglab index` when the indexes do not hold
    /// exactly the current chunks.
    pub fn ensure_fresh(&self) -> Result<()> {
        if self.is_fresh() {
            Ok(())
        } else {
            let flag = match self.variant {
                Variant::Full => String::new(),
                v => format!(" --variant {v}"),
            };
            bail!(
                "the indexes of corpus {} are out of date with the chunks: run `raglab index{flag}` first",
                self.variant.paper_name()
            )
        }
    }

    /// Bring the sparse index and (with an embedder) the vectors up to date, embedding
    /// only chunks that are new or changed. With a shard, only that shard's chunks are
    /// embedded and appended beside the other shards' (the sparse index, derived and
    /// local, is left to the whole `index`).
    ///
    /// Every `checkpoint_every` chunks (0: [`CHECKPOINT_CHUNKS`]) the fresh vectors are
    /// appended to the dataset, so an interrupted run resumes where it stopped (the
    /// load keeps an id's last row). A whole `index` then writes the final set once
    /// and removes the older versions and the files only they used, so what stays on
    /// disk is the final dataset: appends cost linear IO where rewriting the set at
    /// each checkpoint cost quadratic IO and kept every rewrite.
    pub async fn build(
        &mut self,
        ws: &Workspace,
        shard: Option<Shard>,
        checkpoint_every: usize,
        progress: Progress<'_>,
    ) -> Result<IndexSummary> {
        // Field by field: the index is written while the chunks are read.
        let indexed = self.indexed.as_deref().unwrap_or(&self.chunks);
        let sparse = match shard {
            Some(_) => SyncSummary::default(),
            None => {
                let summary = self.sparse.sync(indexed)?;
                self.sparse.prepare()?;
                summary
            }
        };
        let mut summary = IndexSummary {
            chunks: self.chunks.len(),
            sparse,
            ..Default::default()
        };
        let (Some(embedder), Some(name)) = (self.embedder.clone(), self.vectors_key()) else {
            return Ok(summary);
        };
        let store = VectorStore::new(ws, &name);
        let wanted: Vec<(String, String)> = self
            .index_chunks()
            .iter()
            .map(|c| (c.id.clone(), text_hash(c)))
            .collect();
        let todo: Vec<&(String, String)> = stale(&self.vectors, &wanted)
            .into_iter()
            .filter(|(id, _)| crate::core::shard::keep(shard, id))
            .collect();
        let every = if checkpoint_every == 0 {
            CHECKPOINT_CHUNKS
        } else {
            checkpoint_every
        };
        let started = Instant::now();
        let fresh = self
            .embed_with_checkpoints(&embedder, &store, &todo, every, shard.is_some(), progress)
            .await?;
        summary.embedded = fresh.len();
        summary.embed_seconds = started.elapsed().as_secs_f64();
        if summary.embedded > 0 {
            summary.chunks_per_second = summary.embedded as f64 / summary.embed_seconds;
        }
        if shard.is_some() {
            return Ok(summary);
        }
        // Rows the dataset holds beyond the set (checkpoints of an interrupted run,
        // stale rows) also call for the final write.
        let stored = store.row_count().await?;
        if !fresh.is_empty() || self.vectors.len() != wanted.len() || stored != wanted.len() {
            let merged = merge(&self.vectors, &wanted, fresh, embedder.info.dim);
            store.save(&merged).await?;
            self.vectors = merged;
        }
        if stored > 0 || !self.vectors.is_empty() {
            store.cleanup_old_versions().await?;
        }
        Ok(summary)
    }

    /// Embed `todo` in batches, appending the fresh rows every `every` chunks (and,
    /// for a shard, the rest at the end); returns every fresh vector by chunk id.
    async fn embed_with_checkpoints(
        &self,
        embedder: &Embedder,
        store: &VectorStore<'_>,
        todo: &[&(String, String)],
        every: usize,
        append_rest: bool,
        progress: Progress<'_>,
    ) -> Result<HashMap<String, Vec<f32>>> {
        const BATCH: usize = 16;
        let dim = embedder.info.dim;
        let mut fresh: HashMap<String, Vec<f32>> = HashMap::new();
        // Fresh rows not yet appended, in embedding order.
        let mut pending = VectorSet::new(dim, Vec::new(), Vec::new(), Vec::new());
        for (n, group) in todo.chunks(BATCH).enumerate() {
            let texts: Vec<String> = group
                .iter()
                .map(|(id, _)| self.index_chunks()[self.by_id[id]].indexed_text())
                .collect();
            let vecs = embedder
                .embed_documents(&texts)
                .context("embedding chunks")?;
            for ((id, hash), v) in group.iter().zip(vecs) {
                pending.ids.push(id.clone());
                pending.hashes.push(hash.clone());
                pending.data.extend_from_slice(&v);
                fresh.insert(id.clone(), v);
            }
            progress((n * BATCH + group.len()).min(todo.len()), todo.len());
            // Checkpoint: an interrupted run keeps what it embedded (rows still to be
            // re-embedded are stale and left out until they are).
            if pending.len() >= every {
                store.append(&pending).await?;
                pending = VectorSet::new(dim, Vec::new(), Vec::new(), Vec::new());
            }
        }
        if append_rest && !pending.is_empty() {
            store.append(&pending).await?;
        }
        Ok(fresh)
    }

    pub fn chunk(&self, id: &str) -> Option<&Chunk> {
        self.by_id.get(id).map(|&i| &self.chunks[i])
    }

    /// The first `k` chunks of a ranking as prompt context (rank from 1, header path,
    /// full text); ids no longer in the corpus are skipped.
    pub fn context_chunks<S: AsRef<str>>(
        &self,
        ranked: &[S],
        k: usize,
    ) -> Vec<crate::core::prompt::ContextChunk> {
        ranked
            .iter()
            .take(k)
            .enumerate()
            .filter_map(|(i, id)| {
                let c = self.chunk(id.as_ref())?;
                Some(crate::core::prompt::ContextChunk {
                    id: c.id.clone(),
                    rank: i + 1,
                    path: c.path_label(),
                    text: c.text.clone(),
                })
            })
            .collect()
    }

    /// The chunks a context policy chose, as prompt context: rank is the chunk's
    /// rank in the ranking, 0 for a target placed without retrieval finding it; ids no
    /// longer in the corpus are skipped.
    pub fn placed_chunks(
        &self,
        placed: &[crate::core::context_policy::Placed],
    ) -> Vec<crate::core::prompt::ContextChunk> {
        placed
            .iter()
            .filter_map(|p| {
                let c = self.chunk(&p.id)?;
                Some(crate::core::prompt::ContextChunk {
                    id: c.id.clone(),
                    rank: p.rank.unwrap_or(0),
                    path: c.path_label(),
                    text: c.text.clone(),
                })
            })
            .collect()
    }

    pub fn has_dense(&self) -> bool {
        self.embedder.is_some() && !self.vectors.is_empty()
    }

    /// Like [`Retriever::query`], with the dense list from the in-memory IVF
    /// ([`VectorSet::ann_search`], clustered on the first `--ann` query) instead of the
    /// exact scan: the exact top `depth` of the `nprobes` lists nearest the query.
    ///
    /// The clustering, done once by the first `--ann` query of a process, is not in
    /// the query's `dense_ms`: a one-off build would otherwise pass for a slow search.
    pub fn query_ann(
        &self,
        query: &str,
        depth: usize,
        nprobes: usize,
    ) -> Result<(QueryLists, QueryTimings)> {
        let Some(e) = self.embedder.as_ref().filter(|_| !self.vectors.is_empty()) else {
            bail!("ANN search needs an embedding model and the corpus's vectors (raglab index)");
        };
        let s = Instant::now();
        let q = e.embed_query(query)?;
        let embed_ms = s.elapsed().as_secs_f64() * 1e3;
        let (lists, mut t) = self.query_embedded(query, Some(&q), depth, Some(nprobes))?;
        t.embed_ms = embed_ms;
        Ok((lists, t))
    }

    /// Every rank list of `query`, `depth` deep, with timings. Dense lists are empty
    /// without an embedder.
    pub fn query(&self, query: &str, depth: usize) -> Result<(QueryLists, QueryTimings)> {
        self.query_with_dense(query, depth, None)
    }

    /// The query embeddings of `texts` in one request to the embedding worker, or
    /// `None` without an embedder or vectors (no dense lists then).
    pub fn embed_queries(&self, texts: &[String]) -> Result<Option<Vec<Vec<f32>>>> {
        match &self.embedder {
            Some(e) if !self.vectors.is_empty() => Ok(Some(e.embed_queries(texts)?)),
            _ => Ok(None),
        }
    }

    /// [`Retriever::query`] with the query's embedding already computed (`None`: no
    /// dense list), e.g. by [`Retriever::embed_queries`] for a block of queries; the
    /// dense list from the exact scan, or with `ann_nprobes` from the in-memory IVF
    /// (clustered before the timer starts).
    pub fn query_embedded(
        &self,
        query: &str,
        vector: Option<&[f32]>,
        depth: usize,
        ann_nprobes: Option<usize>,
    ) -> Result<(QueryLists, QueryTimings)> {
        if ann_nprobes.is_some() && vector.is_some() {
            self.vectors.prepare_ann();
        }
        let s = Instant::now();
        let dense = vector.map_or_else(Vec::new, |q| match ann_nprobes {
            Some(nprobes) => self.vectors.ann_search(q, depth, nprobes).0,
            None => self.vectors.search(q, depth),
        });
        let dense_ms = s.elapsed().as_secs_f64() * 1e3;
        let (lists, mut t) = self.query_with_dense(query, depth, Some(dense))?;
        t.dense_ms = dense_ms;
        Ok((lists, t))
    }

    /// The query's embedding when this retriever has a dense side (with the time it
    /// took, ms), for the two steps of ranking on demand.
    pub fn embed_for_places(&self, query: &str) -> Result<(Option<Vec<f32>>, f64)> {
        if query.trim().is_empty() {
            bail!("empty query");
        }
        Ok(match &self.embedder {
            Some(e) if !self.vectors.is_empty() => {
                let s = Instant::now();
                let q = e.embed_query(query)?;
                (Some(q), s.elapsed().as_secs_f64() * 1e3)
            }
            _ => (None, 0.0),
        })
    }

    /// Ranking on demand's first step: the lists of `query` cut at `depth`, with the
    /// places they give their own chunks and `extra` (a question's targets); what the
    /// Query pane draws first. See [`lists_on_demand`].
    pub fn lists_on_demand(
        &self,
        query: &str,
        vector: Option<&[f32]>,
        depth: usize,
        extra: &[String],
    ) -> Result<(QueryLists, WholePlaces, QueryTimings)> {
        lists_on_demand(&self.sparse, &self.vectors, query, vector, depth, extra)
    }

    /// Ranking on demand's second step: the whole-corpus places (rank and score in
    /// the dense, BM25 and TF-IDF rankings of every chunk) of each chunk of `lists`
    /// and of `extra`, without ranking the whole corpus. See [`places_on_demand`].
    pub fn places_on_demand(
        &self,
        query: &str,
        vector: Option<&[f32]>,
        lists: &QueryLists,
        extra: &[String],
    ) -> Result<(WholePlaces, QueryTimings)> {
        places_on_demand(&self.sparse, &self.vectors, query, vector, lists, extra)
    }

    fn query_with_dense(
        &self,
        query: &str,
        depth: usize,
        given_dense: Option<Vec<crate::core::fusion::Scored>>,
    ) -> Result<(QueryLists, QueryTimings)> {
        if query.trim().is_empty() {
            bail!("empty query");
        }
        let mut t = QueryTimings::default();
        let ms = |s: Instant| s.elapsed().as_secs_f64() * 1e3;
        let dense = match (&self.embedder, given_dense) {
            (_, Some(d)) => d,
            (Some(e), None) if !self.vectors.is_empty() => {
                let s = Instant::now();
                let q = e.embed_query(query)?;
                t.embed_ms = ms(s);
                let s = Instant::now();
                let hits = self.vectors.search(&q, depth);
                t.dense_ms = ms(s);
                hits
            }
            _ => Vec::new(),
        };
        let s = Instant::now();
        let bm25 = self.sparse.bm25(query, depth)?;
        t.bm25_ms = ms(s);
        let s = Instant::now();
        let tfidf = self.sparse.tfidf(query, depth)?;
        t.tfidf_ms = ms(s);
        let s = Instant::now();
        let lists = QueryLists::new(bm25, tfidf, dense);
        t.fusion_ms = ms(s);
        Ok((lists, t))
    }
}

/// What `raglab index` builds: the sparse index, and the embeddings unless
/// `sparse_only`; with `ann`, the vectors are also clustered as `--ann` searches
/// cluster them (in memory, on first use; nothing is written), to report the lists
/// and the time.
#[derive(Debug, Clone, Default)]
pub struct IndexRequest {
    pub embed: ModelChoice,
    pub sparse_only: bool,
    pub ann: bool,
    /// The corpus variant to index (C_F by default).
    pub variant: Variant,
    /// Embed only this shard's chunks (`index --shard i/n`).
    pub shard: Option<Shard>,
    /// Chunks embedded between two checkpoints (0: [`CHECKPOINT_CHUNKS`]).
    pub checkpoint_every: usize,
}

/// The index summary and, with `ann`, the ANN partitions and build time.
#[derive(Debug, Clone, Serialize)]
pub struct IndexReport {
    #[serde(flatten)]
    pub summary: IndexSummary,
    pub ann_partitions: Option<usize>,
    pub ann_seconds: Option<f64>,
    pub variant: Variant,
    /// Chunks indexed under their summary (C_S: all; C_R: those over 512 tokens).
    pub summarised: usize,
    /// Chunks whose token count was (re)taken with the embedding model, and the model.
    pub tokens_counted: usize,
    pub token_model: Option<String>,
}

/// Bring the workspace's indexes up to date with its chunks (incremental).
pub async fn build_index(
    ctx: &Context,
    req: &IndexRequest,
    progress: Progress<'_>,
) -> Result<IndexReport> {
    let cfg = (!req.sparse_only)
        .then(|| ctx.embed_config(&req.embed))
        .transpose()?;
    let embedder = cfg.as_ref().map(Embedder::spawn).transpose()?;
    // Token counts first: C_R is defined by them.
    let tokens_counted = match &embedder {
        Some(e) => crate::service::corpus::update_token_counts(&ctx.workspace, e).await?,
        None => 0,
    };
    let mut r = Retriever::open_with(&ctx.workspace, embedder, req.variant).await?;
    let summary = r
        .build(&ctx.workspace, req.shard, req.checkpoint_every, progress)
        .await?;
    let mut report = IndexReport {
        summary,
        ann_partitions: None,
        ann_seconds: None,
        variant: req.variant,
        summarised: r.summarised,
        tokens_counted,
        token_model: r.model_name.clone(),
    };
    if req.ann && !r.vectors.is_empty() {
        let t = Instant::now();
        report.ann_partitions = Some(r.vectors.prepare_ann().lists());
        report.ann_seconds = Some(t.elapsed().as_secs_f64());
    }
    Ok(report)
}

/// Open the retriever for `method` (with the embedder only when it needs dense
/// lists) and check that its indexes hold the current chunks.
pub async fn open_for(ctx: &Context, method: Method, embed: &ModelChoice) -> Result<Retriever> {
    open_variant_for(ctx, method, embed, Variant::Full).await
}

/// [`open_for`] over a corpus variant.
pub async fn open_variant_for(
    ctx: &Context,
    method: Method,
    embed: &ModelChoice,
    variant: Variant,
) -> Result<Retriever> {
    open_ranking(ctx, method.needs_dense(), embed, variant).await
}

/// The one place a use case opens the retriever its ranking needs: the embedding
/// model only when `dense` (something reads the dense side: the method, or
/// abstention's best cosine), so a BM25 or TF-IDF run on a sparse-only workspace, or
/// with the models elsewhere, loads none; then a check that the indexes hold the
/// current chunks.
pub async fn open_ranking(
    ctx: &Context,
    dense: bool,
    embed: &ModelChoice,
    variant: Variant,
) -> Result<Retriever> {
    let cfg = dense.then(|| ctx.embed_config(embed)).transpose()?;
    let r = Retriever::open_variant(&ctx.workspace, cfg.as_ref(), variant).await?;
    r.ensure_fresh()?;
    Ok(r)
}

/// The retrieval state an analyst browses with: dense too when the embedding model
/// loads and its vectors are current; otherwise BM25 and TF-IDF only, with the reason
/// dense is off and how to turn it on (the Query pane shows it).
pub async fn open_for_browsing(
    ctx: &Context,
    embed: &ModelChoice,
) -> Result<(Retriever, Option<String>)> {
    let off = |dense_err: anyhow::Error| {
        format!(
            "dense off (BM25 and TF-IDF work): `scripts/setup.sh` fetches the embedding model, `raglab index` embeds the chunks. Cause: {dense_err:#}"
        )
    };
    let opened = match ctx.embed_config(embed) {
        Ok(cfg) => Retriever::open_variant(&ctx.workspace, Some(&cfg), Variant::Full).await,
        Err(e) => Err(e),
    };
    match opened {
        Ok(r) => match r.ensure_fresh() {
            Ok(()) => Ok((r, None)),
            // Vectors missing or stale: the chunks and sparse index already read are
            // kept (a million chunks are not read twice).
            Err(dense_err) => {
                let r = r.without_dense();
                r.ensure_fresh()?;
                Ok((r, Some(off(dense_err))))
            }
        },
        Err(dense_err) => {
            let r = open_for(ctx, Method::Bm25, embed).await?;
            Ok((r, Some(off(dense_err))))
        }
    }
}

/// One search as a front asks for it.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub question: String,
    pub method: Method,
    /// The sparse list hybrid and linear fuse with dense.
    pub sparse: Sparse,
    pub alpha: f64,
    pub k: usize,
    pub embed: ModelChoice,
    /// Dense list from the ANN index, probing this many partitions.
    pub ann_nprobes: Option<usize>,
    /// The corpus variant retrieval runs on.
    pub variant: Variant,
    /// A rerank stage after the method's ranking.
    pub rerank: Option<super::rerank::RerankSetup>,
    /// Threads of a local rerank model.
    pub rerank_threads: Option<i32>,
}

/// One ranked chunk with its place in every list.
#[derive(Debug, Clone, Serialize)]
pub struct SearchRow {
    pub rank: usize,
    pub chunk_id: String,
    pub dense_rank: Option<usize>,
    pub dense_score: Option<f64>,
    /// Rank and score in the BM25 list.
    pub sparse_rank: Option<usize>,
    pub sparse_score: Option<f64>,
    pub tfidf_rank: Option<usize>,
    pub tfidf_score: Option<f64>,
    /// The fused score (hybrid's with the request's sparse side, for the single-list
    /// methods).
    pub fused_score: Option<f64>,
    /// Rank in the method's ranking (before a rerank stage; equal to `rank` without
    /// one).
    pub first_rank: usize,
    /// The rerank stage's score, when the search has one.
    pub rerank_score: Option<f64>,
    pub header_path: Option<String>,
    pub snippet: Option<String>,
}

/// The top k of a search, with timings and whether generation would abstain.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    pub question: String,
    pub method: String,
    pub sparse: Sparse,
    pub alpha: f64,
    pub fusion: &'static str,
    pub embedding_model: Option<String>,
    pub timings_ms: QueryTimings,
    pub results: Vec<SearchRow>,
    pub best_cosine: Option<f64>,
    pub abstain_below: Option<f64>,
    pub would_abstain: Option<bool>,
    pub variant: Variant,
    /// The rerank stage, described (`top 10 reranked, 5 kept by MODEL (TEMPLATE)`).
    pub rerank: Option<String>,
    /// Wall time of the rerank stage (0 when its scores were cached).
    pub rerank_ms: f64,
    /// Pairs the stage found in its cache.
    pub rerank_cached: usize,
}

/// Where a search shows a chunk: its rank, its rank before the rerank stage and the
/// stage's score (None without a stage).
struct Place {
    rank: usize,
    first_rank: usize,
    rerank_score: Option<f64>,
}

/// Chunk `id`'s row of a search at `place`: its rank and score in each list, its
/// fused score, header path and snippet.
fn search_row(
    r: &Retriever,
    lists: &QueryLists,
    fused: &[FusedHit],
    id: &str,
    place: Place,
) -> SearchRow {
    let rank_in = |list: &[Scored]| {
        list.iter()
            .position(|s| s.id == id)
            .map(|i| (i + 1, list[i].score))
    };
    let c = r.chunk(id);
    let (d, s, t) = (
        rank_in(&lists.dense),
        rank_in(&lists.bm25),
        rank_in(&lists.tfidf),
    );
    SearchRow {
        rank: place.rank,
        chunk_id: id.to_string(),
        dense_rank: d.map(|x| x.0),
        dense_score: d.map(|x| x.1),
        sparse_rank: s.map(|x| x.0),
        sparse_score: s.map(|x| x.1),
        tfidf_rank: t.map(|x| x.0),
        tfidf_score: t.map(|x| x.1),
        fused_score: fused.iter().find(|h| h.id == id).map(|h| h.fused),
        first_rank: place.first_rank,
        rerank_score: place.rerank_score,
        header_path: c.map(Chunk::path_label),
        snippet: c.map(|c| crate::core::text::snippet(&c.text, 100)),
    }
}

/// Retrieve the top `k` chunks of a question with every rank and score.
pub async fn search(ctx: &Context, req: &SearchRequest) -> Result<SearchResult> {
    let r = open_variant_for(ctx, req.method, &req.embed, req.variant).await?;
    let depth = DEFAULT_DEPTH
        .max(req.k)
        .max(req.rerank.as_ref().map_or(0, |s| s.cut.depth));
    let (lists, timings) = match req.ann_nprobes {
        Some(nprobes) => r.query_ann(&req.question, depth, nprobes)?,
        None => r.query(&req.question, depth)?,
    };
    // Single-list methods still show the hybrid fused score beside their ranks.
    let fusion = req.method.fusion(req.alpha).unwrap_or(Fusion::Rrf {
        alpha: req.alpha,
        c: RRF_C,
    });
    let fused = lists.candidates_with(req.sparse).fuse(fusion);
    let first = lists.ranking_for(RunConfig::new(req.method, req.sparse, req.alpha));
    // With a rerank stage: its kept chunks, in its order; else the first k.
    let (order, rerank_info): (Vec<(usize, Option<f64>)>, _) = match &req.rerank {
        Some(setup) => {
            let choice = ModelChoice {
                model: None,
                threads: req.rerank_threads,
            };
            let mut rr = super::rerank::Reranker::open(ctx, setup.clone(), &choice).await?;
            let kept = rr.rerank(ctx, &r, &req.question, &first).await?;
            let order = kept
                .iter()
                .map(|k| (k.first_rank - 1, Some(k.score)))
                .collect();
            (order, Some((rr.describe(), rr.stats.clone())))
        }
        None => (
            (0..first.len().min(req.k)).map(|i| (i, None)).collect(),
            None,
        ),
    };
    let results = order
        .iter()
        .enumerate()
        .map(|(i, &(j, rerank_score))| {
            let place = Place {
                rank: i + 1,
                first_rank: j + 1,
                rerank_score,
            };
            search_row(&r, &lists, &fused, first[j], place)
        })
        .collect();
    let best_cosine = lists.dense.first().map(|s| s.score);
    let threshold = ctx.config.retrieval.abstain_below;
    Ok(SearchResult {
        question: req.question.clone(),
        method: req.method.to_string(),
        sparse: req.sparse,
        alpha: req.alpha,
        fusion: "R(d; a) = a/(60 + r_dense(d)) + (1 - a)/(60 + r_sparse(d))",
        embedding_model: r.model_name.clone(),
        timings_ms: timings,
        results,
        best_cosine,
        abstain_below: threshold,
        would_abstain: best_cosine
            .zip(threshold)
            .map(|(c, t)| crate::core::abstention::abstains(c, t)),
        variant: req.variant,
        rerank_ms: rerank_info.as_ref().map_or(0.0, |(_, s)| s.scoring_ms),
        rerank_cached: rerank_info.as_ref().map_or(0, |(_, s)| s.cached),
        rerank: rerank_info.map(|(d, _)| d),
    })
}
