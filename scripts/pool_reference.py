"""Reference pools for raglab's pooling (src/core/assessment.rs) and `raglab assess
pool`, computed with trectools, never from raglab's output.

Inputs (all in the repository): three real runs on the MedQuAD CDC sample, BM25
(tests/data/reference_runs/medquad_cdc_sample.run.trec, 100 deep), scikit-learn TF-IDF
and ranx RRF (tests/data/significance/, 30 deep); see tests/data/PROVENANCE.md.

The pool of a question at depth k (TREC's top-k pooling) is the union of the top k
documents of each run for it. trectools' `TrecPoolMaker().make_pool(runs,
strategy="topX", topX=k)` takes each run's first k lines for a query in file order
(`TrecRun.get_top_documents`), while raglab ranks a run as trec_eval does (score
descending, ties by document id descending). This script checks that every run's
lines for each query are already in that order, with no tied scores, so the two
readings take the same documents; it stops otherwise.

Pools written (tests/data/pooling/reference.json, `pools`): BM25 + TF-IDF at depths 5
and 10, and BM25 + TF-IDF + RRF at depth 10; each as {runs, depth, size (pooled
(query, document) pairs), queries: {qid: [docids, sorted]}}.

Regenerate (from the repository root; Python 3.11.7 was used):
    python3 -m venv /tmp/assessvenv
    /tmp/assessvenv/bin/pip install trectools==0.0.50
    /tmp/assessvenv/bin/python scripts/pool_reference.py
"""

import json
import sys
from importlib.metadata import version
from pathlib import Path

from trectools import TrecPoolMaker, TrecRun

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
RUNS = {
    "bm25": "reference_runs/medquad_cdc_sample.run.trec",
    "tfidf": "significance/medquad_cdc_sample.tfidf.run.trec",
    "rrf": "significance/medquad_cdc_sample.rrf.run.trec",
}
POOLS = [(["bm25", "tfidf"], 5), (["bm25", "tfidf"], 10), (["bm25", "tfidf", "rrf"], 10)]


def check_order(path):
    """Each query's lines in trec_eval's order: score descending, no ties."""
    by_query = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        q, _, d, _, s, _ = line.split()
        by_query.setdefault(q, []).append((float(s), d, n))
    for q, rows in by_query.items():
        for (s1, d1, n1), (s2, d2, n2) in zip(rows, rows[1:]):
            if not s1 > s2:
                sys.exit(f"{path}:{n2}: {q} {d2} is not below {d1} by score (line {n1})")


def main():
    runs = {}
    for name, rel in RUNS.items():
        path = DATA / rel
        check_order(path)
        runs[name] = TrecRun(str(path))
    pools = []
    for names, depth in POOLS:
        pool = TrecPoolMaker().make_pool([runs[n] for n in names], strategy="topX", topX=depth)
        queries = {str(q): sorted(str(d) for d in docs) for q, docs in sorted(pool.pool.items())}
        pools.append(
            {
                "runs": names,
                "depth": depth,
                "size": sum(len(d) for d in queries.values()),
                "queries": queries,
            }
        )
        print(f"{'+'.join(names)} depth {depth}: {len(queries)} queries, {pools[-1]['size']} pairs")
    out = {
        "tools": {"trectools": version("trectools"), "pandas": version("pandas")},
        "runs": RUNS,
        "order": "each run's lines per query checked in score-descending order without ties",
        "pools": pools,
    }
    dest = DATA / "pooling" / "reference.json"
    dest.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {dest.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
