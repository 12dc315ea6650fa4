"""Reference values for raglab's significance tests (src/core/significance.rs) and for
`raglab eval runs`, computed with independent tools, never from raglab's output.

1. scipy: `ttest_rel` (two-sided) on hand-picked and seeded paired vectors, Student's t
   two-sided tail 2 * t.sf(|t|, df) on a grid of (t, df), and `binomtest` (two-sided,
   p = 0.5) for McNemar's exact test on (b, c) discordant counts.
2. Two more real runs on the MedQuAD CDC sample besides the BM25 run of
   tests/data/reference_runs: a TF-IDF run (scikit-learn `TfidfVectorizer`, lowercase
   `[a-z0-9]+` tokens over title + text, smooth idf, L2 norm, cosine) and ranx's RRF
   fusion of the BM25 and TF-IDF runs (`ranx.fuse(method="rrf")`, k = 60). Each query's
   documents are ordered by score descending, ties by document id descending (as
   trec_eval orders them), cut to the top 30, and written with strictly decreasing
   scores (31 - rank), so no tool's tie-breaking can change the ranking.
3. ranx on the three runs: per-query and mean ndcg@10, mrr, precision@1, recall@10;
   `compare` with Fisher's randomisation test (10,000 permutations, seed 42) and the
   paired Student's t-test, and ranx's wins / ties / losses.

Output: tests/data/significance/reference.json and the two run files.

Regenerate (from the repository root; Python 3.11.7 was used):
    python3 -m venv /tmp/refenv
    /tmp/refenv/bin/pip install scipy==1.17.1 numpy==2.4.6 scikit-learn==1.9.1 ranx==0.3.21
    /tmp/refenv/bin/python scripts/significance_reference.py
"""

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np
from scipy import stats
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import linear_kernel

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
OUT = DATA / "significance"
SAMPLE = DATA / "medquad_cdc_sample"
BM25_RUN = DATA / "reference_runs" / "medquad_cdc_sample.run.trec"
DEPTH = 30
METRICS = ["ndcg@10", "mrr", "precision@1", "recall@10"]
PERMUTATIONS = 10_000
SEED = 42


def paired_cases():
    rng = np.random.default_rng(20240601)
    cases = [
        ("hand_n4", [0.1, 0.4, 0.35, 0.8], [0.2, 0.5, 0.3, 0.9]),
        ("hand_n2", [0.0, 1.0], [1.0, 1.0]),
        ("hand_n3_negative", [0.9, 0.7, 0.8], [0.5, 0.6, 0.2]),
    ]
    a = rng.uniform(0, 1, 50)
    cases.append(("uniform_n50", a, a + rng.normal(0.05, 0.3, 50)))
    a = rng.uniform(0, 1, 500)
    cases.append(("uniform_n500_small_effect", a, a + rng.normal(0.01, 0.2, 500)))
    a = rng.uniform(0, 1, 30)
    cases.append(("strong_n30", a, a + rng.normal(0.5, 0.05, 30)))
    # Reciprocal-rank-like values: many ties and few distinct values.
    ranks = rng.integers(1, 6, size=(2, 200))
    cases.append(("rr_like_n200", 1.0 / ranks[0], 1.0 / ranks[1]))
    out = []
    for name, a, b in cases:
        a = [float(x) for x in a]
        b = [float(x) for x in b]
        # Difference taken as b - a (raglab's candidate minus baseline).
        res = stats.ttest_rel(b, a, alternative="two-sided")
        out.append({"name": name, "a": a, "b": b, "t": float(res.statistic),
                    "df": int(res.df), "p": float(res.pvalue)})
    return out


def t_tail_grid():
    out = []
    for df in [1, 2, 3, 5, 10, 30, 100, 1000, 13999]:
        for t in [0.0, 0.5, 1.0, 1.96, 2.5, 4.0, 10.0, 40.0]:
            out.append({"t": t, "df": df, "p": float(2.0 * stats.t.sf(t, df))})
    return out


def mcnemar_cases():
    out = []
    for b, c in [(1, 0), (5, 1), (3, 7), (10, 10), (0, 25), (40, 60), (480, 520),
                 (1200, 1350), (700, 600), (2, 9)]:
        p = stats.binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
        out.append({"b": b, "c": c, "p": float(p)})
    return out


def read_jsonl(path):
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def ordered(scores):
    """(doc, score) pairs by score descending, ties by doc id descending."""
    return sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)


def write_run(path, run, tag):
    lines = []
    for qid in sorted(run):
        for rank, (doc, _) in enumerate(ordered(run[qid])[:DEPTH], start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {DEPTH + 1 - rank:.1f} {tag}")
    path.write_text("\n".join(lines) + "\n")


def read_run(path):
    run = {}
    for line in path.read_text().splitlines():
        if line.strip():
            qid, _, doc, _, score, _ = line.split()
            run.setdefault(qid, {})[doc] = float(score)
    return run


def tfidf_run():
    corpus = read_jsonl(SAMPLE / "corpus.jsonl")
    queries = read_jsonl(SAMPLE / "queries.jsonl")
    vec = TfidfVectorizer(lowercase=True, token_pattern=r"[a-z0-9]+")
    docs = vec.fit_transform([c["title"] + " " + c["text"] for c in corpus])
    sims = linear_kernel(vec.transform([q["text"] for q in queries]), docs)
    run = {}
    for q, row in zip(queries, sims):
        run[q["id"]] = {corpus[i]["id"]: float(s) for i, s in enumerate(row) if s > 0}
    return run


def ranx_reference(paths):
    from ranx import Qrels, Run, compare, evaluate, fuse

    qrels = Qrels.from_file(str(SAMPLE / "qrels.tsv"), kind="trec")
    runs = {}
    for name, path in paths.items():
        run = Run.from_file(str(path), kind="trec")
        run.name = name
        runs[name] = run
    out = {"metrics": METRICS, "n_permutations": PERMUTATIONS, "random_seed": SEED,
           "runs": {}}
    for name, run in runs.items():
        per_query = {}
        means = {}
        for m in METRICS:
            evaluate(qrels, run, m, make_comparable=True, save_results_in_run=True)
            per_query[m] = {q: float(v) for q, v in run.scores[m].items()}
            means[m] = float(np.mean(list(per_query[m].values())))
        out["runs"][name] = {"file": str(paths[name].relative_to(ROOT)), "means": means,
                             "per_query": per_query}
    for test in ["fisher", "student"]:
        rep = compare(qrels, list(runs.values()), METRICS, stat_test=test,
                      n_permutations=PERMUTATIONS, random_seed=SEED, max_p=0.05,
                      make_comparable=True).to_dict()
        out[test] = {a: {b: {m: float(p) for m, p in ms.items()}
                         for b, ms in rep[a]["comparisons"].items()}
                     for a in rep["model_names"]}
        out["win_tie_loss"] = {a: rep[a]["win_tie_loss"] for a in rep["model_names"]}
    return out, fuse


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    tfidf_path = OUT / "medquad_cdc_sample.tfidf.run.trec"
    write_run(tfidf_path, tfidf_run(), "sklearn-tfidf")
    from ranx import Run, fuse

    bm25 = Run(read_run(BM25_RUN), name="bm25")
    tfidf = Run(read_run(tfidf_path), name="tfidf")
    fused = fuse(runs=[bm25, tfidf], method="rrf")
    rrf_path = OUT / "medquad_cdc_sample.rrf.run.trec"
    write_run(rrf_path, {q: dict(d) for q, d in fused.to_dict().items()}, "ranx-rrf")
    ranx, _ = ranx_reference({"bm25": BM25_RUN, "tfidf": tfidf_path, "rrf": rrf_path})
    ref = {
        "tools": {p: version(p) for p in ["scipy", "numpy", "scikit-learn", "ranx"]},
        "ttest_rel": paired_cases(),
        "t_two_sided_tail": t_tail_grid(),
        "binomtest": mcnemar_cases(),
        "ranx": ranx,
    }
    (OUT / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")


if __name__ == "__main__":
    main()
