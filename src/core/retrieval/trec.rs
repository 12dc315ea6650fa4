//! The two TREC text formats raglab reads: qrels (`qid 0 docid rel`, whitespace
//! separated, the second column ignored) and run files (`qid Q0 docid rank score tag`,
//! the rank column ignored: a run is ordered by score, see
//! [`crate::core::metrics::order_run`]). Blank lines are skipped; a malformed line is an
//! error naming its 1-based number, so a caller can say which file and where. A run
//! that ranks one document twice for a query is refused, as trec_eval refuses it,
//! naming both lines.

use std::collections::HashMap;

use crate::core::metrics::Qrel;

/// Relevance judgements by query from qrels text (`Err(line)`: a malformed line).
pub fn parse_qrels(text: &str) -> Result<HashMap<String, Qrel>, usize> {
    let mut qrels: HashMap<String, Qrel> = HashMap::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(q), Some(d), Some(r)) = (
            f.first(),
            f.get(2),
            f.get(3).and_then(|r| r.parse::<u32>().ok()),
        ) else {
            return Err(i + 1);
        };
        qrels
            .entry((*q).to_string())
            .or_default()
            .insert((*d).to_string(), r);
    }
    Ok(qrels)
}

/// Why run text was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// A malformed line (1-based): fewer than five columns, or a score that is not a
    /// finite number.
    Malformed(usize),
    /// A document ranked twice for one query, at 1-based lines `first` and `line`:
    /// trec_eval refuses such a run ("duplicate docs") rather than score it.
    Duplicate {
        query: String,
        doc: String,
        first: usize,
        line: usize,
    },
}

/// Each query's `(docid, score)` pairs from run text, in file order. A malformed line,
/// or a (query, document) pair on a second line, is an error naming the line(s).
pub fn parse_run(text: &str) -> Result<HashMap<String, Vec<(String, f64)>>, RunError> {
    let mut run: HashMap<String, Vec<(String, f64)>> = HashMap::new();
    let mut seen: HashMap<&str, HashMap<&str, usize>> = HashMap::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(q), Some(d), Some(s)) = (
            f.first(),
            f.get(2),
            f.get(4)
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|s| s.is_finite()),
        ) else {
            return Err(RunError::Malformed(i + 1));
        };
        if let Some(&first) = seen.entry(q).or_default().get(d) {
            return Err(RunError::Duplicate {
                query: (*q).to_string(),
                doc: (*d).to_string(),
                first,
                line: i + 1,
            });
        }
        seen.entry(q).or_default().insert(d, i + 1);
        run.entry((*q).to_string())
            .or_default()
            .push(((*d).to_string(), s));
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qrels_and_runs_by_hand() {
        let q = parse_qrels("q1 0 d1 1\n\nq1 0 d2 0\nq2\t0\td9\t2\n").expect("qrels");
        assert_eq!(q["q1"]["d1"], 1);
        assert_eq!(q["q1"]["d2"], 0);
        assert_eq!(q["q2"]["d9"], 2);
        assert_eq!(parse_qrels("q1 0 d1 1\nq1 0 d2 yes\n"), Err(2));
        let r = parse_run("q1 Q0 a 1 2.5 t\nq1 Q0 b 2 3 t\n\nq2 Q0 c 1 -1e3 t\n").expect("run");
        assert_eq!(
            r["q1"],
            vec![("a".to_string(), 2.5), ("b".to_string(), 3.0)]
        );
        assert_eq!(r["q2"][0].1, -1000.0);
        assert_eq!(parse_run("q1 Q0 a 1\n"), Err(RunError::Malformed(1)));
        assert_eq!(parse_run("q1 Q0 a 1 NaN t\n"), Err(RunError::Malformed(1)));
    }

    /// A document twice for one query is refused, naming both lines, as trec_eval
    /// refuses it; the same document for two queries is fine.
    #[test]
    fn a_document_ranked_twice_is_refused() {
        let text = "q1 Q0 a 1 3 t\nq2 Q0 a 1 3 t\n\nq1 Q0 b 2 2 t\nq1 Q0 a 3 1 t\n";
        assert_eq!(
            parse_run(text),
            Err(RunError::Duplicate {
                query: "q1".into(),
                doc: "a".into(),
                first: 1,
                line: 5
            })
        );
        let ok = parse_run("q1 Q0 a 1 3 t\nq2 Q0 a 1 3 t\n").expect("one each");
        assert_eq!((ok["q1"].len(), ok["q2"].len()), (1, 1));
    }
}
