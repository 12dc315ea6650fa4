#!/usr/bin/env python3
"""trec_eval's values for the BEIR test runs: reference.json.

For each dataset (medquad, pubmedqa) and each run in runs/ (BM25 and TF-IDF, the run
files `raglab eval retrieval --beir DIR --split test --methods bm25,tfidf --depth 10
--run-out` wrote), pytrec_eval (trec_eval 9.0.8 inside pytrec_eval-terrier) scores the run against
the dataset's own qrels/test.tsv, read as BEIR's loader reads it (header line skipped,
`query-id corpus-id score`, graded). Written: per query and as trec_eval's means over
the queries it evaluates (those of the run that the qrels judge), the measures P_1,
recip_rank, recall_1/5/10, ndcg_cut_1/5/10 and map, with num_q.

Run from the repository root:
    python3 -m venv /tmp/beirvenv
    /tmp/beirvenv/bin/pip install pytrec_eval-terrier==0.5.11
    /tmp/beirvenv/bin/python tests/data/beir/make_reference.py
"""

import csv
import json
from importlib.metadata import version
from pathlib import Path

import pytrec_eval

HERE = Path(__file__).resolve().parent
MEASURES = {"P.1", "recip_rank", "recall.1,5,10", "ndcg_cut.1,5,10", "map"}
DATASETS = ("medquad", "pubmedqa")
METHODS = ("bm25", "tfidf")


def read_qrels(path):
    qrels = {}
    with open(path, encoding="utf-8") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        next(reader)
        for q, d, score in reader:
            qrels.setdefault(q, {})[d] = int(score)
    return qrels


def read_run(path):
    run = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            q, _, d, _, score, _ = line.split()
            run.setdefault(q, {})[d] = float(score)
    return run


def main():
    out = {
        "tools": {
            "pytrec_eval-terrier": version("pytrec_eval-terrier"),
            "measures": sorted(MEASURES),
        },
        "datasets": {},
    }
    for name in DATASETS:
        qrels = read_qrels(HERE / name / "qrels" / "test.tsv")
        entry = {"queries": len(qrels), "runs": {}}
        for method in METHODS:
            rel = f"runs/{name}.{method}.trec"
            per_query = pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(
                read_run(HERE / rel)
            )
            names = sorted(next(iter(per_query.values())).keys())
            mean = {
                m: pytrec_eval.compute_aggregated_measure(
                    m, [v[m] for v in per_query.values()]
                )
                for m in names
            }
            entry["runs"][method] = {
                "file": rel,
                "num_q": len(per_query),
                "mean": mean,
                "per_query": per_query,
            }
            print(
                f"{name} {method}: {len(per_query)} queries, "
                + ", ".join(f"{m} {mean[m]:.6f}" for m in names)
            )
        out["datasets"][name] = entry
    with open(HERE / "reference.json", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
