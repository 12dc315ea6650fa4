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
use raglab::service::retrieval::{lists_on_demand, rank_on_demand};
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
            assert!(!places.is_pending(), "both steps give every place");
            assert_eq!(places.len(), want.len(), "{query}: one place per chunk");
            // The first step alone: the same lists, each place a list gives its own
            // chunk already right, every other one pending (unknown, not absent).
            let (first, within, _) =
                lists_on_demand(&sparse, &vectors, query, Some(&qv), depth, &extra).expect("lists");
            assert_eq!(
                (&first.dense, &first.bm25, &first.tfidf),
                (&lists.dense, &lists.bm25, &lists.tfidf)
            );
            assert!(within.is_pending());
            for id in &asked {
                let (got, exp) = (within.get(id).expect("asked"), want.get(id).expect("known"));
                let inside = |list: &[Scored]| list.iter().any(|s| &s.id == id);
                for (g, e, held) in [
                    (got.dense, exp.dense, inside(&lists.dense)),
                    (got.bm25, exp.bm25, inside(&lists.bm25)),
                    (got.tfidf, exp.tfidf, inside(&lists.tfidf)),
                ] {
                    assert_eq!(
                        g,
                        if held { e } else { None },
                        "{query} at {depth}: {id} first step"
                    );
                }
            }
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

/// The Query pane through its keys and a `TestBackend`, on real retrieval: Enter on a
/// question draws the lists at once with the target's places outside them pending
/// (`placing…`, `…` in its opened line, never "not in list"), the second step fills
/// them in, an answer of an old ticket is ignored, and a second step that fails
/// leaves them unknown (`?`) with the error shown, not pending for ever.
#[test]
fn the_query_pane_draws_the_lists_first_then_the_places() {
    use raglab::core::question::Question;
    use raglab::service::retrieval::{DEFAULT_DEPTH, places_on_demand};
    use raglab::tui::action::Action;
    use raglab::tui::effect::Effect;
    use raglab::tui::panes::PaneView;
    use raglab::tui::panes::query::QueryPane;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    let tmp = tempfile::tempdir().expect("tmp");
    let n = 400;
    let chunks: Vec<Chunk> = (0..n).map(chunk).collect();
    let mut sparse = SparseIndex::open(&tmp.path().join("bm25")).expect("open");
    sparse.sync(&chunks).expect("sync");
    let ids: Vec<String> = chunks.iter().map(|c| c.id.clone()).collect();
    let data: Vec<f32> = (0..n).flat_map(|i| unit(i as u64)).collect();
    let vectors = VectorSet::new(DIM, ids, vec![String::new(); n], data);
    let (text, qv) = ("fever measles", unit(1000));
    // The target: the chunk the dense ranking puts last (far outside its top 100).
    let whole_dense = vectors.search_scalar(&qv, n);
    let target = whole_dense.last().expect("ranked").id.clone();
    let info = raglab::tui::app::chunk_info(&chunks);
    let question = Question {
        id: "q0".into(),
        text: text.into(),
        relevant: vec![target.clone()],
        ..Question::default()
    };
    let mut pane = QueryPane::new(vec![question], Vec::new(), info);
    let theme = raglab::tui::theme::Theme::builtin("dark").expect("theme");
    let mut term = Terminal::new(TestBackend::new(200, 50)).expect("terminal");
    let mut screen = |pane: &QueryPane| {
        let frame = term.draw(|f| pane.draw(f, f.area(), &theme)).expect("draw");
        let b = frame.buffer;
        (0..b.area.height)
            .map(|y| {
                (0..b.area.width)
                    .map(|x| b[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let targets = std::slice::from_ref(&target);
    let enter = |pane: &mut QueryPane| match pane.update(Action::RunSelected) {
        Some(Effect::Search { ticket, text }) => (ticket, text),
        other => panic!("Enter did not search: {other:?}"),
    };

    let (ticket, asked) = enter(&mut pane);
    let (lists, within, t) =
        lists_on_demand(&sparse, &vectors, &asked, Some(&qv), DEFAULT_DEPTH, targets)
            .expect("lists");
    assert!(
        !lists.dense.iter().any(|s| s.id == target),
        "target outside"
    );
    pane.on_result(ticket, Ok((lists.clone(), within, t)));
    pane.update(Action::OpenTarget);
    let first = screen(&pane);
    assert!(first.contains("(placing…)"), "{first}");
    assert!(first.contains("dense … ·"), "{first}");
    assert!(!first.contains(&format!("dense #{n}")), "{first}");

    let (places, t2) =
        places_on_demand(&sparse, &vectors, &asked, Some(&qv), &lists, targets).expect("places");
    // An answer of an older ticket changes nothing.
    pane.on_places(ticket.wrapping_sub(1), Ok((places.clone(), t2)));
    assert_eq!(screen(&pane), first);
    pane.on_places(ticket, Ok((places, t2)));
    let placed = screen(&pane);
    assert!(placed.contains(&format!("dense #{n} ·")), "{placed}");
    assert!(!placed.contains("placing"), "{placed}");

    // A second search whose second step fails: unknown, said, not pending.
    pane.update(Action::CloseOverlay);
    let (ticket, asked) = enter(&mut pane);
    let (lists, within, t) =
        lists_on_demand(&sparse, &vectors, &asked, Some(&qv), DEFAULT_DEPTH, targets)
            .expect("lists");
    pane.on_result(ticket, Ok((lists, within, t)));
    pane.on_places(ticket, Err("the index went away".into()));
    let failed = screen(&pane);
    assert!(failed.contains("the index went away"), "{failed}");
    assert!(!failed.contains("placing…"), "{failed}");
    pane.update(Action::OpenTarget);
    let opened = screen(&pane);
    assert!(opened.contains("dense ? ·"), "{opened}");
}
