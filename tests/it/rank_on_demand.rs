//! Ranking on demand (the Query pane's retrieval) against whole rankings, on a
//! synthetic corpus full of ties: duplicate texts tie in BM25 and TF-IDF, duplicate
//! vectors tie in dense. The lists cut at the depth must be the first `depth` of the
//! whole rankings, and every place `rank_on_demand` reports (rank and score in each
//! list) must be the one the whole ranking gives, ties broken by id descending. The
//! whole rankings come from independent paths: the plain f32 scan sorted
//! (`search_scalar`), tantivy's own `TopDocs` over every document (the BM25 path the
//! pane used before) sorted, and TF-IDF's full list.

use raglab::core::chunk::Chunk;
use raglab::core::compare::WholePlaces;
use raglab::core::fusion::Scored;
use raglab::service::retrieval::rank_on_demand;
use raglab::store::sparse::SparseIndex;
use raglab::store::vectors::VectorSet;

const WORDS: [&str; 9] = [
    "fever", "measles", "vaccine", "rash", "cough", "child", "dose", "clinic", "water",
];
const DIM: usize = 12;

fn chunk(i: usize) -> Chunk {
    // Every 7th pattern repeats: chunks i and i + 7k share a text (ties), and the
    // number of words varies so that lengths differ between patterns.
    let p = i % 7;
    let text: Vec<&str> = (0..=p + 2)
        .map(|j| WORDS[(p * 3 + j * (p + 1)) % 9])
        .collect();
    let text = if i % 50 == 49 {
        "unrelated words only".to_string()
    } else {
        text.join(" ")
    };
    let mut c = crate::common::text_chunk(format!("c{i:03}"), text);
    c.ordinal = i;
    c
}

/// A unit vector from a seed; rows with equal seeds are equal (dense ties).
fn unit(seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let v: Vec<f32> = (0..DIM)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

/// BM25 over every document with tantivy's `TopDocs`, then ties by id descending:
/// the whole ranking as the pane computed it before ranking on demand.
fn bm25_topdocs(dir: &std::path::Path, query: &str) -> Vec<Scored> {
    use tantivy::collector::TopDocs;
    use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
    use tantivy::schema::{IndexRecordOption, Value};
    let index = tantivy::Index::open_in_dir(dir).expect("index");
    let schema = index.schema();
    let (text, id) = (
        schema.get_field("text").expect("text"),
        schema.get_field("chunk_id").expect("id"),
    );
    let mut analyzer = index.tokenizer_for_field(text).expect("tokenizer");
    let mut stream = analyzer.token_stream(query);
    let mut terms = Vec::new();
    while stream.advance() {
        let t = tantivy::Term::from_field_text(text, &stream.token().text);
        if !terms.contains(&t) {
            terms.push(t);
        }
    }
    let clauses: Vec<(Occur, Box<dyn Query>)> = terms
        .into_iter()
        .map(|t| {
            (
                Occur::Should,
                Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs)) as Box<dyn Query>,
            )
        })
        .collect();
    let reader = index.reader().expect("reader");
    let searcher = reader.searcher();
    let top = searcher
        .search(
            &BooleanQuery::new(clauses),
            &TopDocs::with_limit(100_000).order_by_score(),
        )
        .expect("search");
    let mut out: Vec<Scored> = top
        .into_iter()
        .map(|(score, addr)| {
            let doc: tantivy::TantivyDocument = searcher.doc(addr).expect("doc");
            Scored {
                id: doc
                    .get_first(id)
                    .and_then(|v| v.as_str())
                    .expect("id")
                    .to_string(),
                score: f64::from(score),
            }
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| b.id.cmp(&a.id)));
    out
}

fn has_ties(list: &[Scored]) -> bool {
    list.windows(2).any(|w| w[0].score == w[1].score)
}

#[test]
fn ranks_on_demand_equal_the_whole_rankings_with_ties() {
    let tmp = tempfile::tempdir().expect("tmp");
    let n = 400;
    let chunks: Vec<Chunk> = (0..n).map(chunk).collect();
    let dir = tmp.path().join("bm25");
    let mut sparse = SparseIndex::open(&dir).expect("open");
    sparse.sync(&chunks).expect("sync");
    let ids: Vec<String> = chunks.iter().map(|c| c.id.clone()).collect();
    // 60 distinct vectors over 400 rows: every vector is held by 6 or 7 rows.
    let data: Vec<f32> = (0..n).flat_map(|i| unit((i % 60) as u64)).collect();
    let vectors = VectorSet::new(DIM, ids.clone(), vec![String::new(); n], data);
    let (mut beyond, mut tied) = (0, [false; 3]);
    for (qi, query) in [
        "fever measles",
        "rash cough child vaccine",
        "water",
        "dose dose clinic fever",
        "measles child words",
    ]
    .iter()
    .enumerate()
    {
        // Query vectors: a row's own vector (ties at the top) or a fresh one.
        let qv = if qi % 2 == 0 {
            unit((qi * 7 % 60) as u64)
        } else {
            unit(1000 + qi as u64)
        };
        let full = raglab::core::retrieval::QueryLists::new(
            bm25_topdocs(&dir, query),
            sparse.tfidf(query, n).expect("tfidf"),
            vectors.search_scalar(&qv, n),
        );
        tied[0] |= has_ties(&full.dense);
        tied[1] |= has_ties(&full.bm25);
        tied[2] |= has_ties(&full.tfidf);
        for depth in [1, 5, 20] {
            // Targets: a chunk sharing no word with most queries, and others.
            let extra: Vec<String> = ["c049", "c003", "c250", "c399"]
                .iter()
                .map(|s| (*s).to_string())
                .collect();
            let (lists, places, _) =
                rank_on_demand(&sparse, &vectors, query, Some(&qv), depth, &extra).expect("rank");
            let cut = full.truncated(depth);
            assert_eq!(lists.dense, cut.dense, "{query} dense at {depth}");
            assert_eq!(lists.bm25, cut.bm25, "{query} bm25 at {depth}");
            assert_eq!(lists.tfidf, cut.tfidf, "{query} tfidf at {depth}");
            let asked: Vec<String> = lists
                .dense
                .iter()
                .chain(&lists.bm25)
                .chain(&lists.tfidf)
                .map(|s| s.id.clone())
                .chain(extra.iter().cloned())
                .collect();
            let want = WholePlaces::from_full(&full, &asked);
            assert_eq!(places.len(), want.len(), "{query}: one place per chunk");
            for id in &asked {
                let (got, exp) = (places.get(id), want.get(id));
                assert_eq!(got, exp, "{query} at depth {depth}: places of {id}");
                let p = exp.expect("known");
                beyond += [p.dense, p.bm25, p.tfidf]
                    .iter()
                    .flatten()
                    .filter(|p| p.rank > depth)
                    .count();
            }
        }
    }
    assert!(tied.iter().all(|t| *t), "ties in every list: {tied:?}");
    assert!(beyond > 50, "places beyond the cut were ranked: {beyond}");
}
