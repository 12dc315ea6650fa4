//! Chunk embeddings: one lance dataset per embedding model,
//! `embeddings/MODEL.lance` with `chunk_id`, `hash` (of the indexed text) and `vector`
//! (fixed-size list of f32), so several models coexist in one workspace and can be
//! compared. Dense search is exact cosine over the normalised vectors held in memory
//! (deterministic; ties by chunk id descending), scanned by [`super::dense_scan`].

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, RecordBatch, RecordBatchIterator,
    StringArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use lance::Dataset;
use lance::dataset::WriteMode;
use lance::index::vector::VectorIndexParams;
use lance_linalg::distance::MetricType;

use super::dense_ivf::{Ivf, IvfStats, default_lists};
use super::dense_scan::{Quantised, ScanStats, exact_score};
use super::workspace::Workspace;
use super::{Result, StoreError};
use crate::core::fusion::Scored;

/// Dataset name of a model's embeddings (the model name made path-safe).
pub fn dataset_name(model: &str) -> String {
    let safe: String = model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("embeddings/{safe}.lance")
}

fn schema(dim: usize) -> SchemaRef {
    let dim = i32::try_from(dim).unwrap_or(i32::MAX);
    Arc::new(Schema::new(vec![
        Field::new("chunk_id", DataType::Utf8, false),
        Field::new("hash", DataType::Utf8, false),
        Field::new(
            "vector",
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), dim),
            false,
        ),
    ]))
}

/// All vectors of one model, in memory.
#[derive(Debug, Clone, Default)]
pub struct VectorSet {
    pub dim: usize,
    pub ids: Vec<String>,
    pub hashes: Vec<String>,
    /// Row-major, `ids.len() * dim`, each row L2-normalised.
    pub data: Vec<f32>,
    /// `data` quantised to int8 in the scan's panel layout, built on the first search
    /// (a set is replaced whole, never edited in place, once searched).
    pub(crate) quantised: OnceLock<Quantised>,
    /// Row numbers sorted by id, built on the first [`VectorSet::ranks_of`]: 4 bytes a
    /// row where a map from id would copy every id.
    pub(crate) by_id: OnceLock<Vec<u32>>,
    /// The in-memory IVF of [`VectorSet::ann_search`], built on its first use.
    pub(crate) ivf: OnceLock<Ivf>,
}

impl VectorSet {
    pub fn new(dim: usize, ids: Vec<String>, hashes: Vec<String>, data: Vec<f32>) -> Self {
        Self {
            dim,
            ids,
            hashes,
            data,
            quantised: OnceLock::new(),
            by_id: OnceLock::new(),
            ivf: OnceLock::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    /// Build the scan's copy of the vectors now rather than on the first search.
    pub fn prepare_search(&self) {
        let _ = self.quantised();
    }

    fn quantised(&self) -> &Quantised {
        self.quantised
            .get_or_init(|| Quantised::new(&self.data[..self.len() * self.dim], self.dim))
    }

    /// Exact cosine top-k (vectors and query are normalised, so cosine is the dot
    /// product), best first; equal scores by chunk id descending. The same scores and
    /// order as [`VectorSet::search_scalar`], from the int8 pre-scan and f32 rescoring.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<Scored> {
        self.search_with_stats(query, k).0
    }

    /// [`VectorSet::search`] and how many rows it rescored in f32.
    pub fn search_with_stats(&self, query: &[f32], k: usize) -> (Vec<Scored>, ScanStats) {
        if self.dim == 0 || query.len() != self.dim {
            return (self.search_scalar(query, k), ScanStats::default());
        }
        let (top, stats) =
            self.quantised()
                .top_k(&self.data[..self.len() * self.dim], query, k, |i| {
                    self.ids[i].as_str()
                });
        (self.scored(top), stats)
    }

    /// Rows with their f32 scores as chunk ids with scores.
    fn scored(&self, top: Vec<(f32, usize)>) -> Vec<Scored> {
        top.into_iter()
            .map(|(s, i)| Scored {
                id: self.ids[i].clone(),
                score: f64::from(s),
            })
            .collect()
    }

    /// The row holding `id`, if any.
    pub fn row_of(&self, id: &str) -> Option<usize> {
        let sorted = self.by_id.get_or_init(|| {
            let mut rows: Vec<u32> = (0..self.len()).map(|r| r as u32).collect();
            rows.sort_by(|&a, &b| self.ids[a as usize].cmp(&self.ids[b as usize]));
            rows
        });
        let at = sorted.partition_point(|&r| self.ids[r as usize].as_str() < id);
        sorted
            .get(at)
            .map(|&r| r as usize)
            .filter(|&r| self.ids[r] == id)
    }

    /// The place (rank from 1, score) of each of `ids` in the ranking [`VectorSet::search`]
    /// gives with k = every row, without ranking every row (`None`: no such row).
    pub fn ranks_of(&self, query: &[f32], ids: &[&str]) -> Vec<Option<(usize, f64)>> {
        let rows: Vec<Option<usize>> = ids.iter().map(|id| self.row_of(id)).collect();
        let found: Vec<usize> = rows.iter().flatten().copied().collect();
        if self.dim == 0 || query.len() != self.dim || found.is_empty() {
            return vec![None; ids.len()];
        }
        let places =
            self.quantised()
                .ranks_of(&self.data[..self.len() * self.dim], query, &found, |i| {
                    self.ids[i].as_str()
                });
        let mut places = places.into_iter();
        rows.iter()
            .map(|r| {
                r.and_then(|_| places.next())
                    .map(|(rank, s)| (rank, f64::from(s)))
            })
            .collect()
    }

    /// Build the IVF of [`VectorSet::ann_search`] now rather than on its first search.
    pub fn prepare_ann(&self) -> &Ivf {
        self.ivf.get_or_init(|| {
            let rows = &self.data[..self.len() * self.dim];
            Ivf::build(
                self.quantised(),
                rows,
                self.dim,
                default_lists(self.len()),
                IVF_SEED,
            )
        })
    }

    /// Approximate cosine top-k: the exact top k (scores, order and ties as
    /// [`VectorSet::search`]) of the rows filed in the `nprobes` lists of the
    /// in-memory IVF whose centres best match `query`; a neighbour filed in another
    /// list is missed. With every list probed it is [`VectorSet::search`].
    pub fn ann_search(&self, query: &[f32], k: usize, nprobes: usize) -> (Vec<Scored>, IvfStats) {
        if self.dim == 0 || query.len() != self.dim {
            return (self.search_scalar(query, k), IvfStats::default());
        }
        let (top, stats) = self.prepare_ann().top_k(
            &self.data[..self.len() * self.dim],
            query,
            k,
            nprobes,
            |i| self.ids[i].as_str(),
        );
        (self.scored(top), stats)
    }

    /// Bytes of the int8 copy one search scans.
    pub fn scanned_bytes(&self) -> usize {
        self.quantised().scanned_bytes()
    }

    /// The plain scan [`VectorSet::search`] replaced, kept as its reference (tests and
    /// the `dense_scan` bench): one scalar dot product per row, all rows sorted.
    pub fn search_scalar(&self, query: &[f32], k: usize) -> Vec<Scored> {
        let mut scored: Vec<(f32, usize)> = (0..self.len())
            .map(|i| (exact_score(self.row(i), query), i))
            .collect();
        let by = |a: &(f32, usize), b: &(f32, usize)| {
            b.0.total_cmp(&a.0)
                .then_with(|| self.ids[b.1].cmp(&self.ids[a.1]))
        };
        if k < scored.len() {
            scored.select_nth_unstable_by(k, by);
            scored.truncate(k);
        }
        scored.sort_by(by);
        scored
            .into_iter()
            .map(|(s, i)| Scored {
                id: self.ids[i].clone(),
                score: f64::from(s),
            })
            .collect()
    }
}

/// The set with one row per id, the last one written (shards of `index --shard`
/// append; a shard run twice appends its ids again).
fn last_of_each(set: VectorSet) -> VectorSet {
    let keep: Vec<usize> = {
        let mut last: HashMap<&str, usize> = HashMap::new();
        for (i, id) in set.ids.iter().enumerate() {
            last.insert(id.as_str(), i);
        }
        (0..set.ids.len())
            .filter(|&i| last.get(set.ids[i].as_str()) == Some(&i))
            .collect()
    };
    if keep.len() == set.ids.len() {
        return set;
    }
    let dim = set.dim;
    VectorSet::new(
        dim,
        keep.iter().map(|&i| set.ids[i].clone()).collect(),
        keep.iter().map(|&i| set.hashes[i].clone()).collect(),
        keep.iter()
            .flat_map(|&i| set.data[i * dim..(i + 1) * dim].iter().copied())
            .collect(),
    )
}

pub struct VectorStore<'a> {
    ws: &'a Workspace,
    name: String,
}

impl<'a> VectorStore<'a> {
    pub fn new(ws: &'a Workspace, model: &str) -> Self {
        Self {
            ws,
            name: dataset_name(model),
        }
    }

    /// Whether vectors of this model were ever stored.
    pub async fn exists(&self) -> Result<bool> {
        self.ws.dataset_exists(&self.name).await
    }

    pub async fn load(&self) -> Result<VectorSet> {
        if !self.exists().await? {
            return Ok(VectorSet::default());
        }
        let uri = self.ws.uri(&self.name);
        let ds = self.ws.open_dataset(&self.name).await?;
        let bad = |c: &str| StoreError::Invalid(format!("{uri}: missing or mistyped column `{c}`"));
        let (mut ids, mut hashes, mut values) = (Vec::new(), Vec::new(), Vec::new());
        let mut dim = None;
        super::scan_batches(self.ws, &self.name, &ds, |rows, batch| {
            let id = super::string_column(batch, "chunk_id").ok_or_else(|| bad("chunk_id"))?;
            let hash = super::string_column(batch, "hash").ok_or_else(|| bad("hash"))?;
            let vectors = batch
                .column_by_name("vector")
                .and_then(|c| c.as_fixed_size_list_opt())
                .ok_or_else(|| bad("vector"))?;
            let d = usize::try_from(vectors.value_length()).unwrap_or(0);
            if *dim.get_or_insert(d) != d {
                return Err(bad("vector"));
            }
            let v = vectors
                .values()
                .as_primitive_opt::<Float32Type>()
                .ok_or_else(|| bad("vector"))?;
            let n = batch.num_rows();
            if values.capacity() == 0 {
                // Room for every row at once: no doubling copies of a 1.5 GB array.
                values.reserve_exact(rows * d);
                ids.reserve_exact(rows);
                hashes.reserve_exact(rows);
            }
            let offset = vectors.offset() * d;
            values.extend_from_slice(&v.values()[offset..offset + n * d]);
            ids.extend((0..n).map(|i| id.value(i).to_string()));
            hashes.extend((0..n).map(|i| hash.value(i).to_string()));
            Ok(())
        })
        .await?;
        Ok(last_of_each(VectorSet::new(
            dim.unwrap_or(0),
            ids,
            hashes,
            values,
        )))
    }

    /// Rows the dataset holds (an id appended twice counts twice); 0 when absent.
    pub async fn row_count(&self) -> Result<usize> {
        if !self.exists().await? {
            return Ok(0);
        }
        let uri = self.ws.uri(&self.name);
        self.ws
            .open_dataset(&self.name)
            .await?
            .count_rows(None)
            .await
            .map_err(|e| StoreError::lance(&uri, e))
    }

    /// Remove every version but the latest, and the files only they used; returns the
    /// bytes removed. On a local workspace files no version references (left by a
    /// killed write) go too: this runs under the writer lock at the end of a whole
    /// `raglab index`, and that lock holds every writer on this machine, so no other
    /// write is in flight. On object storage the lock does not span machines: an
    /// `index --shard` elsewhere may have written files it has not committed yet, so
    /// unreferenced files are left to lance's own age rule (kept while recent).
    pub async fn cleanup_old_versions(&self) -> Result<u64> {
        use lance::dataset::cleanup::CleanupPolicyBuilder;
        let _guard = self.ws.lock_for_write(&self.name).await?;
        let uri = self.ws.uri(&self.name);
        let ds = self.ws.open_dataset(&self.name).await?;
        let policy = CleanupPolicyBuilder::default()
            .retain_n_versions(&ds, 1)
            .await
            .map_err(|e| StoreError::lance(&uri, e))?
            .delete_unverified(!self.ws.is_remote())
            .error_if_tagged_old_versions(false)
            .build();
        let stats = ds
            .cleanup_with_policy(policy)
            .await
            .map_err(|e| StoreError::lance(&uri, e))?;
        Ok(stats.bytes_removed)
    }

    /// Replace the dataset with `set` (one atomic commit).
    pub async fn save(&self, set: &VectorSet) -> Result<()> {
        self.write(set, WriteMode::Overwrite).await
    }

    /// Add `set`'s rows (one commit): a checkpoint of `raglab index`, or the vectors
    /// of one shard of `index --shard`. Shards append side by side (appends never
    /// conflict); [`VectorStore::load`] keeps the last row of an id, and the next
    /// whole `index` rewrites the set.
    pub async fn append(&self, set: &VectorSet) -> Result<()> {
        self.write(set, WriteMode::Append).await
    }

    async fn write(&self, set: &VectorSet, mode: WriteMode) -> Result<()> {
        let _guard = self.ws.lock_for_write(&self.name).await?;
        let changes = self.ws.before_commit(&self.name);
        let values = Float32Array::from(set.data.clone());
        let field = Arc::new(Field::new("item", DataType::Float32, true));
        let dim = i32::try_from(set.dim).unwrap_or(i32::MAX);
        let list =
            FixedSizeListArray::try_new(field, dim, Arc::new(values), None).map_err(|source| {
                StoreError::Arrow {
                    what: self.name.clone(),
                    source,
                }
            })?;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(
                set.ids
                    .iter()
                    .map(|s| Some(s.as_str()))
                    .collect::<StringArray>(),
            ),
            Arc::new(
                set.hashes
                    .iter()
                    .map(|s| Some(s.as_str()))
                    .collect::<StringArray>(),
            ),
            Arc::new(list),
        ];
        let batch =
            RecordBatch::try_new(schema(set.dim), columns).map_err(|source| StoreError::Arrow {
                what: self.name.clone(),
                source,
            })?;
        let uri = self.ws.uri(&self.name);
        super::workspace::retry_on_conflict(&uri, |_| {
            let batch = batch.clone();
            let uri = uri.clone();
            async move {
                // Shards of `index --shard` on several machines may all find no
                // dataset: one creates it, the others append (never a racing create).
                if matches!(mode, WriteMode::Append)
                    && !self.exists().await?
                    && self
                        .ws
                        .create_dataset(&self.name, batch.clone())
                        .await?
                        .is_some()
                {
                    return Ok(());
                }
                let reader = RecordBatchIterator::new(vec![Ok(batch)], schema(set.dim));
                Dataset::write(reader, uri.as_str(), Some(self.ws.write_params(mode)))
                    .await
                    .map_err(|e| StoreError::lance(&uri, e))?;
                Ok(())
            }
        })
        .await?;
        // Derived data, but a manifest synced before its data files would leave a
        // dataset that cannot be opened: synced like every other commit.
        changes.make_durable().await?;
        Ok(())
    }
}

/// Which chunks need (re-)embedding: absent, or indexed text changed.
pub fn stale<'c>(set: &VectorSet, wanted: &'c [(String, String)]) -> Vec<&'c (String, String)> {
    let have: HashMap<&str, &str> = set
        .ids
        .iter()
        .map(String::as_str)
        .zip(set.hashes.iter().map(String::as_str))
        .collect();
    wanted
        .iter()
        .filter(|(id, h)| have.get(id.as_str()) != Some(&h.as_str()))
        .collect()
}

/// Keep only `wanted` ids, adding the fresh vectors.
pub fn merge(
    old: &VectorSet,
    wanted: &[(String, String)],
    fresh: HashMap<String, Vec<f32>>,
    dim: usize,
) -> VectorSet {
    let old_rows: HashMap<(&str, &str), usize> = old
        .ids
        .iter()
        .zip(&old.hashes)
        .enumerate()
        .map(|(i, (id, h))| ((id.as_str(), h.as_str()), i))
        .collect();
    let mut out = VectorSet {
        dim,
        ..Default::default()
    };
    for (id, h) in wanted {
        let row: Option<&[f32]> = fresh.get(id).map(Vec::as_slice).or_else(|| {
            old_rows
                .get(&(id.as_str(), h.as_str()))
                .filter(|_| old.dim == dim)
                .map(|&i| old.row(i))
        });
        if let Some(v) = row {
            out.ids.push(id.clone());
            out.hashes.push(h.clone());
            out.data.extend_from_slice(v);
        }
    }
    out
}

/// Seed of the IVF's k-means: the same set always gets the same lists.
const IVF_SEED: u64 = 0x1f_5eed;

/// Name of the approximate index on the `vector` column.
pub const ANN_INDEX: &str = "vector_ivf";

impl VectorStore<'_> {
    /// Build (or rebuild) an IVF_PQ cosine index: `partitions` lists, product
    /// quantisation with 8-dimension sub-vectors of 8 bits, k-means stopped after
    /// `iterations`: lance's ANN, which the synthetic bench sets beside the in-memory
    /// IVF of [`VectorSet::ann_search`]; searches rescore a few times k rows in full
    /// ([`AnnSearcher::search_refined`]) to win back what the codes lose.
    pub async fn build_ivf_pq(
        &self,
        dim: usize,
        partitions: usize,
        iterations: usize,
    ) -> Result<usize> {
        let sub_vectors = if dim.is_multiple_of(8) { dim / 8 } else { 1 };
        self.build_index(|_| {
            VectorIndexParams::ivf_pq(
                partitions.max(1),
                8,
                sub_vectors.max(1),
                MetricType::Cosine,
                iterations.max(1),
            )
        })
        .await?;
        Ok(partitions)
    }

    /// Build (or replace) the vectors' ANN index with the parameters `params` makes
    /// from the row count, under the dataset's write lock, made durable.
    async fn build_index(&self, params: impl FnOnce(usize) -> VectorIndexParams) -> Result<()> {
        use lance::index::DatasetIndexExt;
        let _guard = self.ws.lock_for_write(&self.name).await?;
        let changes = self.ws.before_commit(&self.name);
        let uri = self.ws.uri(&self.name);
        let mut ds = self.ws.open_dataset(&self.name).await?;
        let n = ds
            .count_rows(None)
            .await
            .map_err(|e| StoreError::lance(&uri, e))?;
        ds.create_index(
            &["vector"],
            lance_index::IndexType::Vector,
            Some(ANN_INDEX.into()),
            &params(n),
            true,
        )
        .await
        .map_err(|e| StoreError::lance(&uri, e))?;
        changes.make_durable().await?;
        Ok(())
    }

    /// The vectors' dataset opened once for ANN searches.
    pub async fn ann_searcher(&self) -> Result<AnnSearcher> {
        Ok(AnnSearcher {
            uri: self.ws.uri(&self.name),
            ds: self.ws.open_dataset(&self.name).await?,
        })
    }
}

/// A model's vectors dataset, opened once, searched through its ANN index (opening a
/// dataset reads its manifest and index metadata: too slow to repeat per query).
pub struct AnnSearcher {
    uri: String,
    ds: Dataset,
}

impl AnnSearcher {
    /// Top-k by the lance IVF_PQ index (cosine; score = 1 - distance), `nprobes`
    /// partitions read, the index's best `k * refine` rows rescored on their full
    /// vectors before the top k is taken (the codes are approximate); equal scores
    /// by chunk id descending. The bench's comparison for [`VectorSet::ann_search`].
    pub async fn search_refined(
        &self,
        query: &[f32],
        k: usize,
        nprobes: usize,
        refine: Option<u32>,
    ) -> Result<Vec<Scored>> {
        let uri = &self.uri;
        let q = Float32Array::from(query.to_vec());
        let mut scan = self.ds.scan();
        scan.nearest("vector", &q, k)
            .map_err(|e| StoreError::lance(uri, e))?
            .nprobes(nprobes)
            .distance_metric(MetricType::Cosine);
        if let Some(r) = refine {
            scan.refine(r);
        }
        scan.project(&["chunk_id"])
            .map_err(|e| StoreError::lance(uri, e))?;
        let batch = scan
            .try_into_batch()
            .await
            .map_err(|e| StoreError::lance(uri, e))?;
        let bad = |c: &str| StoreError::Invalid(format!("{uri}: ANN result lacks `{c}`"));
        let ids = super::string_column(&batch, "chunk_id").ok_or_else(|| bad("chunk_id"))?;
        let dist = batch
            .column_by_name("_distance")
            .and_then(|c| c.as_primitive_opt::<Float32Type>())
            .ok_or_else(|| bad("_distance"))?;
        let mut out: Vec<Scored> = (0..batch.num_rows())
            .map(|i| Scored {
                id: ids.value(i).to_string(),
                score: 1.0 - f64::from(dist.value(i)),
            })
            .collect();
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| b.id.cmp(&a.id)));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Rows drawn from a few base rows (many exact ties), with entries from a small
    /// set (zeros and signed zeros among them), ids from a small pool (equal scores
    /// broken by id), and every k from 0 past the number of rows.
    fn case() -> impl Strategy<Value = (VectorSet, Vec<f32>, usize)> {
        let value = prop_oneof![
            Just(0.0f32),
            Just(-0.0f32),
            Just(0.5f32),
            Just(-0.25f32),
            -1.0f32..1.0f32,
        ];
        (1usize..48, 0usize..160).prop_flat_map(move |(dim, n)| {
            (
                prop::collection::vec(prop::collection::vec(value.clone(), dim), 1..6),
                prop::collection::vec((0usize..6, 0u32..40), n),
                prop::collection::vec(value.clone(), dim),
                0usize..n + 3,
            )
                .prop_map(move |(bases, rows, q, k)| {
                    let data = rows
                        .iter()
                        .flat_map(|&(b, _)| bases[b % bases.len()].clone())
                        .collect();
                    let ids = rows.iter().map(|&(_, id)| format!("c{id}")).collect();
                    let hashes = vec![String::new(); rows.len()];
                    (VectorSet::new(dim, ids, hashes, data), q, k)
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The int8 pre-scan with f32 rescoring gives the scalar scan's top k: same
        /// ids, same order, same scores bit for bit.
        #[test]
        fn fast_scan_equals_the_scalar_scan((set, q, k) in case()) {
            let fast = set.search(&q, k);
            let slow = set.search_scalar(&q, k);
            prop_assert_eq!(fast.len(), slow.len());
            for (f, s) in fast.iter().zip(&slow) {
                prop_assert_eq!(&f.id, &s.id);
                prop_assert_eq!(f.score.to_bits(), s.score.to_bits());
            }
        }
    }

    #[test]
    fn larger_sets_cross_tiles_and_panels() {
        // 5,000 rows: two tiles of the kernel, the last panel partly padding.
        let dim = 384;
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        let n = 5_000;
        let data: Vec<f32> = (0..n * dim).map(|_| next()).collect();
        let ids = (0..n).map(|i| format!("chunk-{i:05}")).collect();
        let set = VectorSet::new(dim, ids, vec![String::new(); n], data);
        let q: Vec<f32> = (0..dim).map(|_| next()).collect();
        for k in [1, 10, 100, n, n + 1] {
            assert_eq!(set.search(&q, k), set.search_scalar(&q, k), "k = {k}");
        }
    }

    /// A set large enough for the scan to split over threads (and so to merge the
    /// parts' candidates), with many near ties: rows from a few bases plus tiny noise.
    #[test]
    fn a_split_scan_equals_the_scalar_scan() {
        let (dim, n) = (16, 240_001);
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        let bases: Vec<Vec<f32>> = (0..5).map(|_| (0..dim).map(|_| next()).collect()).collect();
        let data: Vec<f32> = (0..n)
            .flat_map(|i| {
                let noise = next() * 1e-4;
                bases[i % 5]
                    .iter()
                    .map(move |x| x + noise)
                    .collect::<Vec<_>>()
            })
            .collect();
        let ids = (0..n).map(|i| format!("c{:06}", (i * 7919) % n)).collect();
        let set = VectorSet::new(dim, ids, vec![String::new(); n], data);
        let q: Vec<f32> = (0..dim).map(|_| next()).collect();
        for k in [1, 10, 100, 1000] {
            let (fast, stats) = set.search_with_stats(&q, k);
            assert!(!stats.f32_scan);
            assert_eq!(fast, set.search_scalar(&q, k), "k = {k}");
        }
    }
}
