"""Reference values for raglab's clustered intervals and non-inferiority gate
(src/core/retrieval/significance/clustered.rs, `raglab gate`), computed with
statsmodels and scipy, never from raglab's output.

1. `clustered`: seeded data sets with unequal clusters (continuous values, 0/1 values,
   paired baseline/candidate columns). For each: statsmodels'
   `OLS(y, ones).fit(cov_type="cluster", cov_kwds={"groups": g}).bse[0]` (CR1), the
   naive standard error sqrt(sum e^2) / n, computed with numpy, and for 0/1 values
   sqrt(p (1 - p) / n).
2. `normal`: scipy's `norm.ppf(p)` and `norm.sf(z)` on a grid.
3. `gate`: the MedQuAD CDC sample's per-query nDCG@10 of the BM25 and TF-IDF runs, as
   ranx computed them (significance/reference.json), clustered by each question's source
   document (the MedQuAD document id, `CDC_QA-0000001` for passage `CDC_QA-0000001-5`):
   statsmodels' clustered SE of the paired differences tfidf - bm25 and the 95% normal
   interval. The clusters are written to significance/medquad_cdc_sample.clusters.tsv
   (query id, cluster), the `--clusters` file of `raglab gate`.

Output: tests/data/significance/clustered.json and the clusters file.

Regenerate (from the repository root; Python 3.11.7 was used):
    python3 -m venv /tmp/refenv
    /tmp/refenv/bin/pip install statsmodels==0.15.0 scipy==1.17.1 numpy==2.4.6
    /tmp/refenv/bin/python scripts/clustered_reference.py
"""

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np
import statsmodels.api as sm
from scipy.stats import norm

DATA = Path("tests/data")


def cluster_se(y, groups):
    y = np.asarray(y, dtype=float)
    fit = sm.OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": np.asarray(groups)})
    return float(fit.bse[0])


def naive_se(y):
    y = np.asarray(y, dtype=float)
    e = y - y.mean()
    return float(np.sqrt((e * e).sum()) / len(y))


def unequal_groups(rng, sizes):
    return [g for g, size in enumerate(sizes) for _ in range(size)]


def data_sets():
    rng = np.random.default_rng(20261208)
    out = []
    sizes = [1, 2, 3, 5, 8, 13, 4, 7, 2, 9]
    groups = unequal_groups(rng, sizes)
    # Shared error within a cluster makes the clustered SE exceed the naive one.
    effects = rng.normal(0, 0.3, len(sizes))
    y = [float(effects[g] + rng.normal(0, 0.2)) for g in groups]
    out.append({"name": "continuous, shared error", "values": y, "groups": groups})
    y = [float(rng.uniform()) for _ in groups]
    out.append({"name": "uniform, no shared error", "values": y, "groups": groups})
    probs = rng.uniform(0.1, 0.9, len(sizes))
    y = [float(rng.uniform() < probs[g]) for g in groups]
    out.append({"name": "binary", "values": y, "groups": groups, "binary": True})
    # Cluster names in no order, groups given as text.
    names = ["doc-" + "abcdefghij"[g] for g in groups]
    perm = rng.permutation(len(names))
    y = [float(rng.normal()) for _ in groups]
    out.append({"name": "shuffled text labels", "values": [y[i] for i in perm],
                "groups": [names[i] for i in perm]})
    # Paired columns: the difference candidate - baseline.
    base = [float(effects[g] + rng.normal(0, 0.2)) for g in groups]
    cand = [b + float(0.05 * effects[g] + rng.normal(0, 0.1)) for b, g in zip(base, groups)]
    out.append({"name": "paired", "baseline": base, "candidate": cand, "groups": groups})
    for d in out:
        if "values" in d:
            y = d["values"]
        else:
            y = [c - b for b, c in zip(d["baseline"], d["candidate"])]
        d["mean"] = float(np.mean(y))
        d["se_clustered"] = cluster_se(y, d["groups"])
        d["se_naive"] = naive_se(y)
        if d.get("binary"):
            p = float(np.mean(y))
            d["se_binary"] = float(np.sqrt(p * (1 - p) / len(y)))
    return out


def gate():
    ref = json.loads((DATA / "significance/reference.json").read_text())
    per_query = ref["ranx"]["runs"]
    bm25 = per_query["bm25"]["per_query"]["ndcg@10"]
    tfidf = per_query["tfidf"]["per_query"]["ndcg@10"]
    qids = sorted(bm25)
    clusters = {}
    for line in (DATA / "medquad_cdc_sample/qrels.tsv").read_text().splitlines():
        qid, _, doc, rel = line.split("\t")
        if int(rel) > 0 and qid not in clusters:
            clusters[qid] = doc.rsplit("-", 1)[0]
    lines = [f"{q}\t{clusters[q]}" for q in qids]
    (DATA / "significance/medquad_cdc_sample.clusters.tsv").write_text("\n".join(lines) + "\n")
    d = [tfidf[q] - bm25[q] for q in qids]
    g = [clusters[q] for q in qids]
    se = cluster_se(d, g)
    mean = float(np.mean(d))
    z = float(norm.ppf(0.975))
    return {
        "baseline": "bm25", "candidate": "tfidf", "metric": "ndcg@10",
        "queries": len(qids), "clusters": len(set(g)),
        "mean": mean, "se_clustered": se, "se_naive": naive_se(d),
        "lower": mean - z * se, "upper": mean + z * se,
    }


def main():
    ps = [1e-12, 1e-6, 0.001, 0.025, 0.05, 0.1, 0.2, 0.5, 0.8, 0.9, 0.95, 0.975, 0.995, 1 - 1e-9]
    zs = [-8.0, -3.0, -1.959964, -0.5, 0.0, 0.3, 1.0, 1.644854, 2.5, 4.0, 7.5]
    out = {
        "tools": {"statsmodels": version("statsmodels"), "scipy": version("scipy"),
                  "numpy": version("numpy")},
        "clustered": data_sets(),
        "normal": {"ppf": [[p, float(norm.ppf(p))] for p in ps],
                   "sf": [[z, float(norm.sf(z))] for z in zs]},
        "gate": gate(),
    }
    (DATA / "significance/clustered.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
