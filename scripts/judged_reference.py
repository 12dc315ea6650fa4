"""Reference values for raglab's incomplete-judgement measures (src/core/incomplete.rs)
and `raglab eval runs`, computed with independent tools, never from raglab's output.

Inputs (all in the repository): the MedQuAD CDC sample (tests/data/medquad_cdc_sample:
corpus, qrels.tsv with MedQuAD's own question -> answer passage pairs) and three real
runs on it: BM25 (tests/data/reference_runs, 100 deep), scikit-learn TF-IDF and ranx RRF
(tests/data/significance, 30 deep).

1. Incomplete, graded qrels made by one stated rule (written to
   tests/data/judged/medquad_cdc_sample.pooled.qrels, TREC's `qid 0 docid rel`):
   - topics: about half of the questions of qrels.tsv are assessed, those whose
     int(sha256(f"{SEED} topic {qid}").hexdigest(), 16) % 10 < TOPIC_TENTHS (5); the
     others have no judgement at all (so their targets can be judged for no query:
     the holes BEIR's Hole@k counts);
   - pool: for each assessed question, the union of the top POOL_DEPTH = 5 of the
     BM25 and TF-IDF runs (each ordered by score descending, ties by document id
     descending, as trec_eval orders them). The RRF run contributes nothing: it is
     scored on a pool it did not help build, as a new system is in TREC;
   - grade: 2 for a passage qrels.tsv pairs with the question (its target); 1 for
     another passage of the same MedQuAD document (`CDC_QA-0000001-5` belongs to
     `CDC_QA-0000001`) as one of its targets: on topic, not the answer (the rule of
     tests/data/beir/medquad); 0 for every other pooled passage;
   - every target is judged, pooled or not;
   - incompleteness: a pooled judgement that is not a target is dropped (left unjudged)
     when int(sha256(f"{SEED} {qid} {docid}").hexdigest(), 16) % 10 < DROP_TENTHS
     (SEED = "raglab-judged-1", DROP_TENTHS = 3: about 30% of them).
   Every assessed question keeps a relevant judgement, so raglab (which leaves out a
   query without one) and trec_eval evaluate the same queries: the assessed ones
   (trec_eval evaluates the queries both the run and the qrels hold; each run holds
   all 259 questions).
2. Per query and mean (over the assessed queries; no run lacks one):
   - bpref: pytrec_eval (trec_eval 9.0.8 inside pytrec_eval-terrier), checked equal to
     ir_measures' Bpref (which calls pytrec_eval);
   - Judged@1/5/10: ir_measures' `Judged@k` (its own provider: documents of the top k
     judged for the query, any grade, over min(k, retrieved));
   - Hole@1/5/10: computed here from BEIR's definition (beir.retrieval.custom_metrics
     `hole`; BEIR itself is not installed): the top-k documents that no query of the
     qrels judges, over k, for each assessed query. BEIR sums over every query of the
     results (assessed or not) and divides by the number of qrels queries; here the
     sum is over the assessed queries only, the queries raglab and trec_eval evaluate.
     Hole@k is not 1 - Judged@k: a passage judged for another question is no hole.
   The runs have no tied scores within a query (checked), so the tools' different
   tie-breaking (ir_measures: id ascending; BEIR: file order; trec_eval: id
   descending) cannot change a ranking.

Output: tests/data/judged/reference.json and the qrels file above.

Regenerate (from the repository root; Python 3.11.7 was used):
    python3 -m venv /tmp/judgedvenv
    /tmp/judgedvenv/bin/pip install pytrec_eval-terrier==0.5.11 ir_measures==0.4.3
    /tmp/judgedvenv/bin/python scripts/judged_reference.py
"""

import hashlib
import json
import sys
from importlib.metadata import version
from pathlib import Path

import ir_measures
import pytrec_eval
from ir_measures import Bpref, Judged

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
OUT = DATA / "judged"
QRELS_OUT = OUT / "medquad_cdc_sample.pooled.qrels"
TARGETS = DATA / "medquad_cdc_sample" / "qrels.tsv"
CORPUS = DATA / "medquad_cdc_sample" / "corpus.jsonl"
RUNS = {
    "bm25": "reference_runs/medquad_cdc_sample.run.trec",
    "tfidf": "significance/medquad_cdc_sample.tfidf.run.trec",
    "rrf": "significance/medquad_cdc_sample.rrf.run.trec",
}
POOLED_BY = ("bm25", "tfidf")
POOL_DEPTH = 5
SEED = "raglab-judged-1"
TOPIC_TENTHS = 5
DROP_TENTHS = 3
KS = (1, 5, 10)


def read_run(path):
    run = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            q, _, d, _, score, _ = line.split()
            if d in run.setdefault(q, {}):
                sys.exit(f"{path}: {q} {d} twice")
            run[q][d] = float(score)
    return run


def ordered(docs):
    """trec_eval's order: score descending, ties by document id descending."""
    by_id = sorted(docs.items(), key=lambda x: x[0], reverse=True)
    return [d for d, _ in sorted(by_id, key=lambda x: -x[1])]


def read_targets():
    targets = {}
    with open(TARGETS, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                q, _, d, rel = line.split()
                if int(rel) > 0:
                    targets.setdefault(q, set()).add(d)
    return targets


def document_of(passage_id):
    """MedQuAD passage `CDC_QA-0000001-5` belongs to document `CDC_QA-0000001`."""
    return passage_id.rsplit("-", 1)[0]


def tenth(text):
    """A number in 0..9 drawn from `text` by SHA-256 (the same in every language)."""
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 10


def assessed(qid):
    return tenth(f"{SEED} topic {qid}") < TOPIC_TENTHS


def dropped(qid, doc):
    return tenth(f"{SEED} {qid} {doc}") < DROP_TENTHS


def pooled_qrels(runs, targets):
    qrels, stats = {}, {"pooled": 0, "dropped": 0, "targets": 0, "not_assessed": 0}
    for qid, answers in sorted(targets.items()):
        if not assessed(qid):
            stats["not_assessed"] += 1
            continue
        docs_of = {document_of(d) for d in answers}
        pool = set()
        for name in POOLED_BY:
            pool.update(ordered(runs[name].get(qid, {}))[:POOL_DEPTH])
        judged = {d: 2 for d in answers}
        stats["targets"] += len(answers)
        for d in sorted(pool - answers):
            stats["pooled"] += 1
            if dropped(qid, d):
                stats["dropped"] += 1
                continue
            judged[d] = 1 if document_of(d) in docs_of else 0
        qrels[qid] = judged
    return qrels, stats


def write_qrels(qrels):
    OUT.mkdir(parents=True, exist_ok=True)
    with open(QRELS_OUT, "w", encoding="utf-8") as f:
        for q in sorted(qrels):
            for d in sorted(qrels[q]):
                f.write(f"{q} 0 {d} {qrels[q][d]}\n")


def check_no_ties(name, run):
    for q, docs in run.items():
        if len(set(docs.values())) != len(docs):
            sys.exit(f"{name}: tied scores for {q}; the tools would order them differently")


def holes(run, annotated):
    """BEIR's Hole@k per query: top-k documents judged for no query, over k."""
    out = {}
    for q, docs in run.items():
        top = ordered(docs)
        out[q] = {
            f"Hole@{k}": sum(d not in annotated for d in top[:k]) / k for k in KS
        }
    return out


def per_query_values(run, qrels, annotated):
    run = {q: docs for q, docs in run.items() if q in qrels}
    bpref = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}).evaluate(run)
    values = {q: {"bpref": v["bpref"]} for q, v in bpref.items()}
    measures = [Bpref] + [Judged @ k for k in KS]
    for m in ir_measures.iter_calc(measures, qrels, run):
        if m.measure == Bpref:
            if m.value != values[m.query_id]["bpref"]:
                sys.exit(f"{m.query_id}: ir_measures bpref {m.value} != pytrec_eval")
            continue
        values[m.query_id][f"Judged@{m.measure['cutoff']}"] = m.value
    for q, h in holes(run, annotated).items():
        values[q].update(h)
    return values


def main():
    runs = {name: read_run(DATA / rel) for name, rel in RUNS.items()}
    for name, run in runs.items():
        check_no_ties(name, run)
    targets = read_targets()
    qrels, stats = pooled_qrels(runs, targets)
    write_qrels(qrels)
    annotated = {d for judged in qrels.values() for d in judged}
    out = {
        "tools": {
            "pytrec_eval-terrier": version("pytrec_eval-terrier"),
            "ir_measures": version("ir_measures"),
            "python": sys.version.split()[0],
        },
        "qrels": str(QRELS_OUT.relative_to(DATA)),
        "rule": {
            "pooled_by": list(POOLED_BY),
            "pool_depth": POOL_DEPTH,
            "seed": SEED,
            "topic_tenths": TOPIC_TENTHS,
            "drop_tenths": DROP_TENTHS,
            "queries": len(qrels),
            "judgements": sum(len(j) for j in qrels.values()),
            "judged_documents": len(annotated),
            **stats,
        },
        "ks": list(KS),
        "runs": {},
    }
    for name, run in runs.items():
        values = per_query_values(run, qrels, annotated)
        names = ["bpref"] + [f"Judged@{k}" for k in KS] + [f"Hole@{k}" for k in KS]
        mean = {m: sum(v[m] for v in values.values()) / len(values) for m in names}
        out["runs"][name] = {
            "file": RUNS[name],
            "num_q": len(values),
            "mean": mean,
            "per_query": values,
        }
        print(f"{name}: {len(values)} queries, " + ", ".join(f"{m} {mean[m]:.6f}" for m in names))
    print(json.dumps(out["rule"]))
    with open(OUT / "reference.json", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
