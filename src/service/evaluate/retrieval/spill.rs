//! The evaluation's ranked lists on disk between its passes, and the outputs written
//! as the blocks pass (run files, the per-query file).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use crate::core::chunk::Chunk;
use crate::core::fusion::Scored;
use crate::core::per_query::PerQueryTable;
use crate::core::retrieval::{QueryLists, RunConfig};
use crate::service::evaluate::per_query::{
    Format, csv, format_of, jsonl, parquet_cells, parquet_columns,
};
use crate::store::parquet_table::ParquetTable;

/// Chunk ids as numbers: a corpus chunk by its position, any other id (lists
/// merged from shards) numbered after them as it is met.
pub struct Ids<'a> {
    chunks: &'a [Chunk],
    by_id: &'a HashMap<String, usize>,
    extra: Vec<String>,
    extra_of: HashMap<String, usize>,
}

impl<'a> Ids<'a> {
    pub fn new(chunks: &'a [Chunk], by_id: &'a HashMap<String, usize>) -> Self {
        Self {
            chunks,
            by_id,
            extra: Vec::new(),
            extra_of: HashMap::new(),
        }
    }

    fn code(&mut self, id: &str) -> u32 {
        let n = match (self.by_id.get(id), self.extra_of.get(id)) {
            (Some(&i), _) => i,
            (None, Some(&k)) => self.chunks.len() + k,
            (None, None) => {
                self.extra_of.insert(id.to_string(), self.extra.len());
                self.extra.push(id.to_string());
                self.chunks.len() + self.extra.len() - 1
            }
        };
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    fn name(&self, code: u32) -> Option<&str> {
        let i = code as usize;
        match self.chunks.get(i) {
            Some(c) => Some(c.id.as_str()),
            None => self.extra.get(i - self.chunks.len()).map(String::as_str),
        }
    }
}

/// Every query's rank lists, in ranking order, in a file of the workspace's
/// `eval/` folder (removed when dropped): per query its id, then BM25, TF-IDF
/// and dense lists as a length and (chunk number, score bits) pairs, so a list
/// read back is the list written, scores bit for bit.
pub struct Spill {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    queries: usize,
    /// Rerank scores per query, attached to the lists read back.
    rerank: HashMap<String, Vec<Scored>>,
}

impl Spill {
    pub fn create(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let (file, path) = crate::service::base::create_temporary(
            dir,
            &format!("ranked-{}-{nanos}.bin", std::process::id()),
        )?;
        Ok(Self {
            path,
            out: Some(BufWriter::new(file)),
            queries: 0,
            rerank: HashMap::new(),
        })
    }

    pub fn push(&mut self, qid: &str, ids: &mut Ids<'_>, lists: &QueryLists) -> Result<()> {
        let Some(out) = self.out.as_mut() else {
            bail!("{}: written after it was read", self.path.display());
        };
        let mut buf = Vec::with_capacity(4 + qid.len() + 12 * 320);
        let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
        buf.extend_from_slice(&len(qid.len()));
        buf.extend_from_slice(qid.as_bytes());
        for list in [&lists.bm25, &lists.tfidf, &lists.dense] {
            buf.extend_from_slice(&len(list.len()));
            for s in list {
                buf.extend_from_slice(&ids.code(&s.id).to_le_bytes());
                buf.extend_from_slice(&s.score.to_bits().to_le_bytes());
            }
        }
        out.write_all(&buf)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        self.queries += 1;
        Ok(())
    }

    /// Attach these rerank scores to the lists of their queries when read back.
    pub fn set_rerank(&mut self, scores: HashMap<String, Vec<Scored>>) {
        self.rerank = scores;
    }

    /// Every query's lists read back in order, `block` queries at a time.
    pub fn for_each_block(
        &mut self,
        ids: &Ids<'_>,
        block: usize,
        mut f: impl FnMut(&[(String, QueryLists)]) -> Result<()>,
    ) -> Result<()> {
        if let Some(mut out) = self.out.take() {
            out.flush()
                .with_context(|| format!("cannot write {}", self.path.display()))?;
        }
        let file = File::open(&self.path)
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        let mut input = BufReader::new(file);
        let mut lists = Vec::with_capacity(block);
        for _ in 0..self.queries {
            let (qid, mut l) = read_one(&mut input, ids)
                .with_context(|| format!("cannot read {}", self.path.display()))?;
            if let Some(scores) = self.rerank.get(&qid) {
                l.rerank.clone_from(scores);
            }
            lists.push((qid, l));
            if lists.len() == block {
                f(lists.as_slice())?;
                lists.clear();
            }
        }
        if !lists.is_empty() {
            f(lists.as_slice())?;
        }
        Ok(())
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        self.out.take();
        let _ = std::fs::remove_file(&self.path);
    }
}

fn read_u32(input: &mut impl Read) -> Result<u32> {
    let mut b = [0u8; 4];
    input.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_one(input: &mut impl Read, ids: &Ids<'_>) -> Result<(String, QueryLists)> {
    let mut qid = vec![0u8; read_u32(input)? as usize];
    input.read_exact(&mut qid)?;
    let qid = String::from_utf8(qid)?;
    let mut lists: [Vec<Scored>; 3] = Default::default();
    for list in &mut lists {
        let n = read_u32(input)? as usize;
        list.reserve(n);
        for _ in 0..n {
            let code = read_u32(input)?;
            let mut bits = [0u8; 8];
            input.read_exact(&mut bits)?;
            let Some(id) = ids.name(code) else {
                bail!("chunk number {code} unknown");
            };
            list.push(Scored {
                id: id.to_string(),
                score: f64::from_bits(u64::from_le_bytes(bits)),
            });
        }
    }
    let [bm25, tfidf, dense] = lists;
    Ok((qid, QueryLists::new(bm25, tfidf, dense)))
}

/// One TREC run file per configuration, written block by block.
pub struct RunFiles {
    /// Per configuration: its file and, for the first configuration of each
    /// file, the writer (a configuration repeated writes its file once).
    files: Vec<(PathBuf, String, RunConfig, Option<Pending>)>,
}

impl RunFiles {
    /// Files named by the whole configuration
    /// (`hybrid-tfidf-a0.75-all-MiniLM-L6-v2.trec`) in `dir`.
    pub fn create(dir: &Path, configs: &[RunConfig], model: Option<&str>) -> Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mut files: Vec<(PathBuf, String, RunConfig, Option<Pending>)> = Vec::new();
        for c in configs {
            let name = c.file_stem(model);
            let path = dir.join(format!("{name}.trec"));
            let writer = if files.iter().any(|f| f.0 == path) {
                None
            } else {
                let (f, tmp) =
                    crate::service::base::create_temporary(dir, &format!("{name}.trec"))?;
                Some(Pending {
                    out: BufWriter::new(f),
                    tmp,
                })
            };
            files.push((path, name, *c, writer));
        }
        Ok(Self { files })
    }

    pub fn write(&mut self, block: &[(String, QueryLists)]) -> Result<()> {
        for (path, name, cfg, out) in &mut self.files {
            let Some(Pending { out, .. }) = out.as_mut() else {
                continue;
            };
            for (qid, l) in block {
                for (i, (doc, score)) in l.scored(*cfg).iter().enumerate() {
                    writeln!(out, "{qid} Q0 {doc} {} {score:.10} raglab-{name}", i + 1)
                        .with_context(|| format!("cannot write {}", path.display()))?;
                }
            }
        }
        Ok(())
    }

    /// Put every file in place whole; their paths, one per configuration.
    pub fn finish(self) -> Result<Vec<PathBuf>> {
        self.files
            .into_iter()
            .map(|(path, _, _, out)| {
                if let Some(Pending { out, tmp }) = out {
                    let file = out
                        .into_inner()
                        .map_err(|e| e.into_error())
                        .with_context(|| format!("cannot write {}", path.display()))?;
                    crate::service::base::publish(file, &tmp, &path)?;
                }
                Ok(path)
            })
            .collect()
    }
}

/// A run file being written: its temporary file, renamed over the run file when
/// the run is finished (a killed evaluation leaves the old run file, never half of
/// a new one).
struct Pending {
    out: BufWriter<File>,
    tmp: PathBuf,
}

/// The per-query file, written block by block to a temporary file of its own and
/// renamed over the file at the end (whole or not at all).
pub struct PerQueryFile {
    path: PathBuf,
    tmp: PathBuf,
    out: Sink,
}

/// Text (CSV, JSONL) through a buffer, or Parquet row groups (boxed: the Parquet
/// writer is ten times the size of a buffered file).
enum Sink {
    Csv(BufWriter<File>),
    Jsonl(BufWriter<File>),
    Parquet(Box<ParquetTable>),
}

impl PerQueryFile {
    /// Start the file; `empty` (no rows) gives the CSV header.
    pub fn create(path: &Path, empty: &PerQueryTable) -> Result<Self> {
        let format = format_of(path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (file, tmp) = crate::service::base::create_temporary(dir, &name)?;
        let out = match format {
            Format::Csv => Sink::Csv(BufWriter::new(file)),
            Format::Jsonl => Sink::Jsonl(BufWriter::new(file)),
            Format::Parquet => Sink::Parquet(Box::new(ParquetTable::create(
                file,
                &parquet_columns(empty),
                &path.display().to_string(),
            )?)),
        };
        let mut f = Self {
            path: path.to_path_buf(),
            tmp,
            out,
        };
        if format == Format::Csv {
            f.write_text(&csv(empty))?;
        }
        Ok(f)
    }

    fn write_text(&mut self, text: &str) -> Result<()> {
        let (Sink::Csv(out) | Sink::Jsonl(out)) = &mut self.out else {
            bail!("{} is not a text file", self.tmp.display());
        };
        out.write_all(text.as_bytes())
            .with_context(|| format!("cannot write {}", self.tmp.display()))
    }

    /// Add the rows of one block.
    pub fn write(&mut self, table: &PerQueryTable) -> Result<()> {
        let text = match &mut self.out {
            Sink::Parquet(out) => return Ok(out.write(parquet_cells(table))?),
            // The header was written once at the start.
            Sink::Csv(_) => {
                let text = csv(table);
                text.split_once('\n')
                    .map_or(String::new(), |(_, rows)| rows.to_string())
            }
            Sink::Jsonl(_) => jsonl(table)?,
        };
        self.write_text(&text)
    }

    pub fn finish(self) -> Result<()> {
        let file = match self.out {
            Sink::Csv(out) | Sink::Jsonl(out) => out
                .into_inner()
                .map_err(|e| e.into_error())
                .with_context(|| format!("cannot write {}", self.tmp.display()))?,
            Sink::Parquet(out) => out.finish()?,
        };
        crate::service::base::publish(file, &self.tmp, &self.path)
    }
}
