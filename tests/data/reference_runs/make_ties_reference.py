"""trec_eval reference (pytrec_eval-terrier) for the tied run ties.run.trec on ties.qrels.tsv.

The run is read as trec_eval reads a run file: a query with no line in it (q5, whose
retrieval returned nothing) is absent from the run, so trec_eval never evaluates it and,
without -c, its means are over the queries present in both run and qrels (q6 is in the
run but has no judgements, so it is skipped too). trec_eval orders each query's documents
by score descending, ties by document id descending; the rank column is ignored (it is
deliberately not that order here).

Output: ties.per_query.json with trec_eval's per-query values, their means as trec_eval
prints them for "all" (pytrec_eval.compute_aggregated_measure), and the queries counted.

Regenerate (from the repository root):
    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install pytrec_eval-terrier==0.5.11
    /tmp/refvenv/bin/python tests/data/reference_runs/make_ties_reference.py
"""

import json
from importlib.metadata import version
from pathlib import Path

import pytrec_eval

HERE = Path(__file__).resolve().parent
MEASURES = [
    "P_1", "P_5", "P_10",
    "recall_1", "recall_5", "recall_10", "recall_100",
    "recip_rank", "ndcg_cut_5", "ndcg_cut_10", "map",
]


def main():
    qrels = {}
    for line in (HERE / "ties.qrels.tsv").read_text().splitlines():
        if line.strip():
            qid, _, doc, rel = line.split()
            qrels.setdefault(qid, {})[doc] = int(rel)
    run = {}
    for line in (HERE / "ties.run.trec").read_text().splitlines():
        if line.strip():
            qid, _, doc, _rank, score, _tag = line.split()
            run.setdefault(qid, {})[doc] = float(score)
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"P.1,5,10", "recall.1,5,10,100", "recip_rank", "ndcg_cut.5,10", "map"}
    )
    per_query = {
        qid: {m: values[m] for m in MEASURES}
        for qid, values in sorted(evaluator.evaluate(run).items())
    }
    mean = {
        m: pytrec_eval.compute_aggregated_measure(m, [v[m] for v in per_query.values()])
        for m in MEASURES
    }
    ref = {
        "generated_by": "tests/data/reference_runs/make_ties_reference.py",
        "pytrec_eval_terrier": version("pytrec_eval-terrier"),
        "num_q": len(per_query),
        "absent_from_run": sorted(q for q in qrels if q not in run),
        "not_in_qrels": sorted(q for q in run if q not in qrels),
        "per_query": per_query,
        "mean": mean,
    }
    (HERE / "ties.per_query.json").write_text(json.dumps(ref, indent=1) + "\n")


if __name__ == "__main__":
    main()
