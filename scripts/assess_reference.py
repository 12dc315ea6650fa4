"""Reference values for the grown qrels of `raglab assess` / `raglab qrels export`,
computed with pytrec_eval and ir_measures, never from raglab's output.

Inputs (tests/data/assess/, written once by raglab's own commands on the shipped sample;
see tests/data/PROVENANCE.md): a BM25 run of the sample questions
(`eval retrieval --methods bm25,tfidf --run-out`), the targets-only qrels that
`qrels export` wrote right after `assess pool` (every sample question's targets at grade
1), and the grown qrels it wrote after one assessor graded the pool's chunks.

For each qrels file: pytrec_eval's per-query P_1 (trec_eval 9.0.8 in
pytrec_eval-terrier) and ir_measures' Judged@10, with their means over the queries
trec_eval evaluates (those both files hold); and the questions whose P_1 differs between
the two qrels.

Regenerate (from the repository root; Python 3.11.7 was used):
    python3 -m venv /tmp/assessvenv
    /tmp/assessvenv/bin/pip install pytrec_eval-terrier==0.5.11 ir_measures==0.4.3
    /tmp/assessvenv/bin/python scripts/assess_reference.py
"""

import json
from importlib.metadata import version
from pathlib import Path

import ir_measures
import pytrec_eval
from ir_measures import Judged

ROOT = Path(__file__).resolve().parent.parent
DIR = ROOT / "tests" / "data" / "assess"
RUN = DIR / "bm25.trec"
QRELS = {"targets": DIR / "targets.qrels", "grown": DIR / "grown.qrels"}


def read_qrels(path):
    qrels = {}
    for line in path.read_text().splitlines():
        if line.strip():
            q, _, d, rel = line.split()
            qrels.setdefault(q, {})[d] = int(rel)
    return qrels


def read_run(path):
    run = {}
    for line in path.read_text().splitlines():
        if line.strip():
            q, _, d, _, score, _ = line.split()
            run.setdefault(q, {})[d] = float(score)
    return run


def main():
    run = read_run(RUN)
    out = {
        "tools": {
            "pytrec_eval-terrier": version("pytrec_eval-terrier"),
            "ir_measures": version("ir_measures"),
        },
        "run": RUN.name,
        "qrels": {},
    }
    for name, path in QRELS.items():
        qrels = read_qrels(path)
        ev = pytrec_eval.RelevanceEvaluator(qrels, {"P_1"})
        p1 = {q: v["P_1"] for q, v in ev.evaluate(run).items()}
        judged = {
            m.query_id: m.value
            for m in ir_measures.iter_calc([Judged @ 10], qrels, run)
        }
        queries = sorted(p1)
        out["qrels"][name] = {
            "file": path.name,
            "num_q": len(queries),
            "P_1": p1,
            "Judged@10": {q: judged.get(q, 0.0) for q in queries},
            "mean": {
                "P@1": sum(p1.values()) / len(queries),
                "Judged@10": sum(judged.get(q, 0.0) for q in queries) / len(queries),
            },
        }
        print(name, out["qrels"][name]["num_q"], out["qrels"][name]["mean"])
    t, g = out["qrels"]["targets"]["P_1"], out["qrels"]["grown"]["P_1"]
    out["p1_changed"] = sorted(q for q in t if t[q] != g.get(q))
    print("P_1 changed for", len(out["p1_changed"]), "questions")
    (DIR / "reference.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
