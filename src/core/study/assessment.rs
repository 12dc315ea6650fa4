//! Relevance assessment: qrels that grow beyond the one target chunk each question
//! ships with. Pure rules only; the grade log and the pool live in the workspace
//! (`service::assess`).
//!
//! - **Pool** (TREC's top-k pooling): the pool of a question at depth k is the union
//!   of the top k documents of each chosen run for it, each run ranked as trec_eval
//!   ranks it (score descending, ties by document id descending). A question that no
//!   run retrieves for has no pool.
//! - **Grade**: an assessor grades a (question, chunk) pair 0 (not relevant), 1
//!   (relevant) or 2 (highly relevant). Grades are append-only signed rows
//!   ([`Grade`]); the latest counted row of an assessor for a pair is their grade.
//! - **Queue**: an assessor's queue is the pool's pairs in one seeded order (a
//!   Fisher-Yates shuffle of the pairs sorted by question then chunk, with the pool's
//!   seed), without the shipped targets and without the pairs that assessor has
//!   graded. The order hides which run retrieved a chunk and at what rank; another
//!   assessor's grade of a pair never removes it from this assessor's queue (blind).
//! - **qrels**: a shipped target is grade 1 (the convention of raglab's questions
//!   file, whose `relevant` chunks are read as relevance 1) and is never overwritten by
//!   a grade. Every other graded pair gets the **median of its assessors' latest
//!   grades, rounded down** (two assessors grading 1 and 2 give 1; 0 and 1 give 0), so
//!   a pair is relevant only when at least half its assessors found it relevant.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::core::metrics::order_run;
use crate::core::rng::Rng;
use crate::core::signing::{Binding, Checked, Refusal, Roster, Verify, seal_fault};

/// The highest grade: 0 not relevant, 1 relevant, 2 highly relevant.
pub const MAX_GRADE: u32 = 2;

/// The grade a shipped target has in the qrels.
pub const TARGET_GRADE: u32 = 1;

/// One grade of one (question, chunk) pair by one assessor: a row of the grade log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grade {
    pub question_id: String,
    pub chunk_id: String,
    /// The assessor's name (the study roster's name for their key).
    pub assessor: String,
    /// 0, 1 or 2.
    pub grade: u32,
    pub graded_at: String,
    /// The writer's wall clock (nanoseconds), kept for people; order is the log's.
    pub seq: u64,
    /// Label log rows stored when the grade was written: the roster entry in force
    /// there gives the key that must have signed it (so a key rotation keeps earlier
    /// grades).
    pub label_rows: u64,
    /// The assessor's public key and signature
    /// ([`grade_bytes`]).
    #[serde(default)]
    pub signer: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
}

/// One question of a stored pool: a row of the pool dataset. Every question of the
/// questions file the pool was made with is stored (its targets are the shipped
/// qrels), with its pool members (empty when it was not sampled or no run retrieved
/// for it). Not signed: a pool decides what is asked, never what counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PooledQuestion {
    /// The pool's id (the writer's clock in nanoseconds when it was made); the newest
    /// stored pool is the one in force.
    pub pool: u64,
    pub question_id: String,
    pub question: String,
    /// The question's shipped target chunks.
    pub targets: Vec<String>,
    /// Its pool: the union of the runs' top `depth`, sorted.
    pub members: Vec<String>,
    pub depth: u32,
    /// The run files pooled, as given.
    pub runs: Vec<String>,
    /// The seed of the question sample and of the queue order.
    pub seed: u64,
    pub made_at: String,
}

/// Two assessors' agreement over the pairs both have graded (their latest grades),
/// with the study statistics: raw agreement, Cohen's kappa, and linearly weighted
/// kappa (grades are ordered). `None` where undefined (no shared pair, or chance
/// agreement 1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssessorAgreement {
    pub first: String,
    pub second: String,
    pub pairs: usize,
    pub raw: Option<f64>,
    pub kappa: Option<f64>,
    pub linear_kappa: Option<f64>,
}

/// Agreement of every two assessors (names sorted) over the pairs both graded.
pub fn agreement(
    grades: &BTreeMap<(String, String), BTreeMap<String, u32>>,
) -> Vec<AssessorAgreement> {
    use crate::core::agreement::{Confusion, Weights, cohen_kappa, raw_agreement, weighted_kappa};
    let names: BTreeSet<&String> = grades.values().flat_map(|by| by.keys()).collect();
    let names: Vec<&String> = names.into_iter().collect();
    let labels: Vec<String> = (0..=MAX_GRADE).map(|g| g.to_string()).collect();
    let mut out = Vec::new();
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            let shared: Vec<(String, String)> = grades
                .values()
                .filter_map(|by| Some((by.get(*a)?.to_string(), by.get(*b)?.to_string())))
                .collect();
            let c = Confusion::with_labels(&shared, labels.clone());
            out.push(AssessorAgreement {
                first: (*a).clone(),
                second: (*b).clone(),
                pairs: shared.len(),
                raw: raw_agreement(&c),
                kappa: cohen_kappa(&c),
                linear_kappa: weighted_kappa(&c, Weights::Linear),
            });
        }
    }
    out
}

/// A run: each query's `(document, score)` pairs, in any order.
pub type Run = HashMap<String, Vec<(String, f64)>>;

/// The pool of each question at depth `depth`: the union of each run's top `depth`
/// documents for it (trec_eval's order). Questions no run holds are absent.
pub fn pool(runs: &[Run], depth: usize) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for run in runs {
        for (qid, hits) in run {
            let mut hits = hits.clone();
            order_run(&mut hits);
            out.entry(qid.clone())
                .or_default()
                .extend(hits.into_iter().take(depth).map(|(d, _)| d));
        }
    }
    out.retain(|_, docs| !docs.is_empty());
    out
}

/// `n` of `questions` chosen with `seed` (all of them, in their order, when `n` is
/// `None` or not below their number); the chosen ones keep their sorted order.
pub fn sample_questions(questions: &[String], n: Option<usize>, seed: u64) -> Vec<String> {
    match n {
        Some(n) if n < questions.len() => {
            let mut picked = Rng::new(seed).sample_indices(questions.len(), n);
            picked.sort_unstable();
            picked.into_iter().map(|i| questions[i].clone()).collect()
        }
        _ => questions.to_vec(),
    }
}

/// Every pair of `pool` in the pool's seeded order: sorted by (question, chunk), then
/// shuffled (Fisher-Yates) with `seed`.
pub fn seeded_order(pool: &BTreeMap<String, BTreeSet<String>>, seed: u64) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = pool
        .iter()
        .flat_map(|(q, docs)| docs.iter().map(move |d| (q.clone(), d.clone())))
        .collect();
    let mut rng = Rng::new(seed);
    for i in (1..pairs.len()).rev() {
        let j = rng.below(i + 1);
        pairs.swap(i, j);
    }
    pairs
}

/// The latest counted grade of each assessor for each pair: (question, chunk) ->
/// assessor -> grade, from counted rows in log order.
pub fn latest(grades: &[Grade]) -> BTreeMap<(String, String), BTreeMap<String, u32>> {
    let mut out: BTreeMap<(String, String), BTreeMap<String, u32>> = BTreeMap::new();
    for g in grades {
        out.entry((g.question_id.clone(), g.chunk_id.clone()))
            .or_default()
            .insert(g.assessor.clone(), g.grade);
    }
    out
}

/// An assessor's queue: `order` without the targets (`targets`: question -> its
/// target chunks) and without the pairs `assessor` has graded. Other assessors'
/// grades do not matter.
pub fn queue<'a>(
    order: &'a [(String, String)],
    targets: &HashMap<String, HashSet<String>>,
    grades: &BTreeMap<(String, String), BTreeMap<String, u32>>,
    assessor: &str,
) -> Vec<&'a (String, String)> {
    order
        .iter()
        .filter(|(q, d)| !targets.get(q).is_some_and(|t| t.contains(d)))
        .filter(|p| !grades.get(*p).is_some_and(|by| by.contains_key(assessor)))
        .collect()
}

/// Several assessors' grades of one pair combined: their median, rounded down (the
/// lower middle grade for an even count). `None` without a grade.
pub fn combine(grades: &[u32]) -> Option<u32> {
    let mut g = grades.to_vec();
    g.sort_unstable();
    match g.len() {
        0 => None,
        n if n % 2 == 1 => Some(g[n / 2]),
        n => Some((g[n / 2 - 1] + g[n / 2]) / 2),
    }
}

/// The grown qrels: every target at [`TARGET_GRADE`], then every graded pair that is
/// not a target at the [`combine`]d grade of its assessors' latest grades.
pub fn grown_qrels(
    targets: &BTreeMap<String, BTreeSet<String>>,
    grades: &BTreeMap<(String, String), BTreeMap<String, u32>>,
) -> BTreeMap<String, BTreeMap<String, u32>> {
    let mut out: BTreeMap<String, BTreeMap<String, u32>> = BTreeMap::new();
    for (q, docs) in targets {
        let row = out.entry(q.clone()).or_default();
        for d in docs {
            row.insert(d.clone(), TARGET_GRADE);
        }
    }
    for ((q, d), by) in grades {
        let row = out.entry(q.clone()).or_default();
        if targets.get(q).is_some_and(|t| t.contains(d)) {
            continue;
        }
        let given: Vec<u32> = by.values().copied().collect();
        if let Some(g) = combine(&given) {
            row.insert(d.clone(), g);
        }
    }
    out.retain(|_, row| !row.is_empty());
    out
}

/// TREC qrels text (`qid 0 docid grade`, one line each, sorted by question then
/// document).
pub fn qrels_text(qrels: &BTreeMap<String, BTreeMap<String, u32>>) -> String {
    let mut out = String::new();
    for (q, row) in qrels {
        for (d, g) in row {
            out.push_str(&format!("{q} 0 {d} {g}\n"));
        }
    }
    out
}

/// The grade rows (in log order) that count. Every row needs a grade of 0 to 2 and a
/// signature that no earlier counted row carries (a copied row would bring an old
/// grade back as the latest). In a study without a roster the rest count, as every
/// row of an unsigned study does; under a roster, a row counts when it is signed by
/// the key the roster gives its assessor at the label log position it signs
/// (`label_rows`), bound to the study.
pub fn check_grades(rows: Vec<Grade>, roster: &Roster, verify: Verify) -> Checked<Grade> {
    let mut out = Checked::default();
    let mut seen: HashSet<String> = HashSet::new();
    for (pos, g) in rows.into_iter().enumerate() {
        let pair = format!(
            "grade of chunk {} for question {} by {}",
            g.chunk_id, g.question_id, g.assessor
        );
        let repeated = g.signature.as_ref().is_some_and(|s| seen.contains(s));
        let fault = if g.grade > MAX_GRADE {
            Some(format!("{pair} is {}, not 0, 1 or 2", g.grade))
        } else if repeated {
            Some(format!(
                "{pair} repeats an earlier grade's signature (a copied row changes nothing)"
            ))
        } else if roster.is_signed() {
            signed_fault(&g, roster, verify).map(|why| format!("{pair} {why}"))
        } else {
            None
        };
        match fault {
            Some(why) => out.refused.push(Refusal {
                item: Some(g.question_id.clone()),
                row: None,
                why,
            }),
            None => {
                seen.extend(g.signature.clone());
                out.kept.push(g);
                out.rows.push(pos);
            }
        }
    }
    out
}

/// Why a grade's seal does not hold under `roster`, if it does not.
fn signed_fault(g: &Grade, roster: &Roster, verify: Verify) -> Option<String> {
    let pos = usize::try_from(g.label_rows).unwrap_or(usize::MAX);
    let who = &g.assessor;
    match roster.key_at(who, pos) {
        Ok(None) => Some(format!(
            "claims assessor {who}, who is not on the study roster"
        )),
        Err(from) => Some(format!(
            "claims assessor {who}, who was removed from the study roster from label row {from}"
        )),
        Ok(Some(key)) => {
            let bytes = |b: &Binding| grade_bytes(g, b);
            let (signer, sig) = (g.signer.as_deref(), g.signature.as_deref());
            seal_fault(signer, sig, key, roster.binding(), &bytes, verify)
                .map(|why| format!("is not signed by {who}'s key{why}"))
        }
    }
}

/// The bytes a relevance grade is signed over in a study bound as `study`: every
/// field but the signature, under a tag of its own.
pub fn grade_bytes(g: &Grade, study: &Binding) -> Vec<u8> {
    let mut c = study.canon("grade");
    c.str(&g.question_id)
        .str(&g.chunk_id)
        .str(&g.assessor)
        .num(Some(u64::from(g.grade)))
        .str(&g.graded_at)
        .num(Some(g.seq))
        .num(Some(g.label_rows))
        .opt(g.signer.as_deref());
    c.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::signing::toy::*;

    fn run(rows: &[(&str, &str, f64)]) -> Run {
        let mut r = Run::new();
        for (q, d, s) in rows {
            r.entry((*q).to_string())
                .or_default()
                .push(((*d).to_string(), *s));
        }
        r
    }

    fn set(docs: &[&str]) -> BTreeSet<String> {
        docs.iter().map(|d| (*d).to_string()).collect()
    }

    /// Top 2 of each run by score (ties by id descending, as trec_eval), whatever the
    /// file order; the union per question.
    #[test]
    fn pools_by_hand() {
        let a = run(&[
            ("q1", "d1", 1.0),
            ("q1", "d2", 3.0),
            ("q1", "d3", 2.0),
            ("q2", "d9", 1.0),
        ]);
        let b = run(&[
            ("q1", "d4", 5.0),
            ("q1", "d5", 5.0),
            ("q1", "d2", 1.0),
            ("q3", "x", 0.0),
        ]);
        let p = pool(&[a.clone(), b], 2);
        assert_eq!(p["q1"], set(&["d2", "d3", "d4", "d5"]));
        assert_eq!(p["q2"], set(&["d9"]));
        assert_eq!(p["q3"], set(&["x"]));
        assert_eq!(pool(std::slice::from_ref(&a), 1)["q1"], set(&["d2"]));
        assert!(pool(&[a], 0).is_empty());
    }

    #[test]
    fn the_median_rounded_down() {
        assert_eq!(combine(&[]), None);
        assert_eq!(combine(&[2]), Some(2));
        assert_eq!(combine(&[1, 2]), Some(1));
        assert_eq!(combine(&[0, 1]), Some(0));
        assert_eq!(combine(&[2, 0, 2]), Some(2));
        assert_eq!(combine(&[0, 2]), Some(1));
        assert_eq!(combine(&[2, 2, 0, 0]), Some(1));
    }

    fn grade(q: &str, d: &str, who: &str, g: u32, seq: u64) -> Grade {
        Grade {
            question_id: q.into(),
            chunk_id: d.into(),
            assessor: who.into(),
            grade: g,
            graded_at: "t".into(),
            seq,
            label_rows: 0,
            signer: None,
            signature: Some(format!("sig{seq}")),
        }
    }

    /// The latest grade per assessor counts; targets stay at grade 1 whatever an
    /// assessor said; assessors are combined by the median rounded down.
    #[test]
    fn grown_qrels_by_hand() {
        let rows = vec![
            grade("q1", "a", "ann", 0, 1),
            grade("q1", "a", "ann", 2, 2),
            grade("q1", "a", "bob", 1, 3),
            grade("q1", "t", "ann", 0, 4),
            grade("q2", "b", "bob", 0, 5),
        ];
        let targets = BTreeMap::from([
            ("q1".to_string(), set(&["t"])),
            ("q3".to_string(), set(&["u"])),
        ]);
        let qrels = grown_qrels(&targets, &latest(&rows));
        assert_eq!(
            qrels_text(&qrels),
            "q1 0 a 1\nq1 0 t 1\nq2 0 b 0\nq3 0 u 1\n"
        );
    }

    /// The queue leaves out targets and the assessor's own graded pairs only; the
    /// seeded order is a permutation that depends on the seed alone.
    #[test]
    fn queues_are_blind_and_seeded() {
        let p = BTreeMap::from([
            ("q1".to_string(), set(&["a", "b", "t"])),
            ("q2".to_string(), set(&["c", "d"])),
        ]);
        let order = seeded_order(&p, 7);
        assert_eq!(order, seeded_order(&p, 7));
        assert_ne!(order, seeded_order(&p, 8));
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted.len(), 5);
        let targets = HashMap::from([("q1".to_string(), HashSet::from(["t".to_string()]))]);
        let g = latest(&[grade("q1", "a", "ann", 1, 1)]);
        let for_ann = queue(&order, &targets, &g, "ann");
        let for_bob = queue(&order, &targets, &g, "bob");
        assert_eq!(for_ann.len(), 3);
        assert_eq!(for_bob.len(), 4, "ann's grade leaves bob's queue as it was");
        assert!(for_bob.iter().any(|(q, d)| q == "q1" && d == "a"));
        assert!(!for_bob.iter().any(|(_, d)| d == "t"));
    }

    /// Two assessors agreeing on 2 of 3 shared pairs, by hand: p_o = 2/3; marginals
    /// ann (0, 1, 2) = (1, 1, 1), bob = (1, 0, 2): p_e = (1*1 + 1*0 + 1*2) / 9 = 1/3,
    /// kappa = (2/3 - 1/3) / (2/3) = 0.5. Pair d is ann's alone and does not count.
    #[test]
    fn agreement_by_hand() {
        let rows = vec![
            grade("q1", "a", "ann", 0, 1),
            grade("q1", "a", "bob", 0, 2),
            grade("q1", "b", "ann", 1, 3),
            grade("q1", "b", "bob", 2, 4),
            grade("q1", "c", "ann", 2, 5),
            grade("q1", "c", "bob", 2, 6),
            grade("q1", "d", "ann", 2, 7),
        ];
        let a = agreement(&latest(&rows));
        assert_eq!(a.len(), 1);
        assert_eq!(
            (a[0].first.as_str(), a[0].second.as_str(), a[0].pairs),
            ("ann", "bob", 3)
        );
        assert!((a[0].raw.expect("raw") - 2.0 / 3.0).abs() < 1e-12);
        assert!((a[0].kappa.expect("kappa") - 0.5).abs() < 1e-12);
        // Expected linear disagreement: rows (1,1,1), columns (1,0,2), n = 3:
        // sum |i-j| r_i c_j / n = (|0-2|*1*2 + |1-0|*1*1 + |1-2|*1*2 + |2-0|*1*1) / 3
        // = (4 + 1 + 2 + 2) / 3 = 3; observed 1; weighted kappa = 1 - 1/3.
        assert!((a[0].linear_kappa.expect("weighted") - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn samples_are_seeded_subsets() {
        let qs: Vec<String> = (0..10).map(|i| format!("q{i}")).collect();
        let s = sample_questions(&qs, Some(3), 1);
        assert_eq!(s.len(), 3);
        assert_eq!(s, sample_questions(&qs, Some(3), 1));
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sample_questions(&qs, None, 1), qs);
        assert_eq!(sample_questions(&qs, Some(20), 1), qs);
    }

    /// Unsigned study: out-of-range grades and copied rows are refused, the rest
    /// count.
    #[test]
    fn unsigned_grades_refuse_bad_and_copied_rows() {
        let rows = vec![
            grade("q1", "a", "ann", 1, 1),
            grade("q1", "a", "ann", 3, 2),
            grade("q1", "a", "ann", 1, 1),
        ];
        let no = |_: &str, _: &[u8], _: &str| false;
        let c = check_grades(rows, &Roster::default(), &no);
        assert_eq!((c.kept.len(), c.rows.clone()), (1, vec![0]));
        assert_eq!(c.refused.len(), 2);
        assert!(c.refused[0].why.contains("not 0, 1 or 2"));
        assert!(c.refused[1].why.contains("repeats"));
    }

    /// A relevance grade counts only when signed by the key the roster gives its
    /// assessor, over its own fields and this study's id.
    #[test]
    fn grades_count_only_when_signed_by_their_assessors_key() {
        let (roster, bound) = study("n1");
        let grade = |who: &str, by: &str, binding: &Binding, g: u32| {
            let mut r = Grade {
                question_id: "q".into(),
                chunk_id: "c".into(),
                assessor: who.into(),
                grade: g,
                graded_at: "t".into(),
                seq: u64::from(g),
                label_rows: 0,
                signer: Some(by.into()),
                signature: None,
            };
            r.signature = Some(toy_sign(by, &grade_bytes(&r, binding)));
            r
        };
        let mut tampered = grade("ann", ANN, &bound, 2);
        tampered.grade = 0;
        let rows = vec![
            grade("ann", ANN, &bound, 1),
            grade("ann", MAL, &bound, 2),
            grade("mal", MAL, &bound, 2),
            grade("ann", ANN, &Binding::Unbound, 0),
            tampered,
        ];
        let c = check_grades(rows, &roster, &toy_verify);
        assert_eq!(c.rows, vec![0]);
        let why: Vec<&str> = c.refused.iter().map(|r| r.why.as_str()).collect();
        assert_eq!(why.len(), 4, "{why:?}");
        assert!(why[0].contains("not signed by ann's key"), "{}", why[0]);
        assert!(why[1].contains("not on the study roster"), "{}", why[1]);
        assert!(why[2].contains("without this study's id"), "{}", why[2]);
        assert!(why[3].contains("does not match its fields"), "{}", why[3]);
    }
}
