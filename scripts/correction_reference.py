"""Reference values for raglab's judge correction (src/core/study/correction.rs),
computed with ppi_py and statsmodels, never from raglab's output.

For seeded data sets (n human-labelled answers with the judge's label, N judged-only
answers; the judge drawn with a chosen sensitivity and specificity around a true pass
rate), the file keeps the labels and:
- ppi_py 0.2.3: `ppi_mean_pointestimate` and `ppi_mean_ci` (alpha = 0.05) with lam = 1
  (classic PPI) and lam = None (PPI++, tuned);
- statsmodels: `proportion_confint(k, m, alpha=0.05, method="wilson")` of the judge's
  sensitivity and specificity on the labelled answers;
- the Rogan-Gladen estimate and its delta-method interval written out in numpy.

Output: tests/data/correction/reference.json.

Regenerate (from the repository root; Python 3.11.7 was used):
    python3 -m venv /tmp/refenv
    /tmp/refenv/bin/pip install ppi-python==0.2.3 statsmodels==0.15.0 scipy==1.17.1 numpy==2.4.6
    /tmp/refenv/bin/python scripts/correction_reference.py
"""

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint


def rogan_gladen(p, n_all, sens, n_pos, spec, n_neg, alpha=0.05):
    j = sens + spec - 1
    if j <= 0:
        return None
    theta = (p + spec - 1) / j
    var = (p * (1 - p) / n_all + theta**2 * sens * (1 - sens) / n_pos
           + (1 - theta) ** 2 * spec * (1 - spec) / n_neg) / j**2
    half = norm.ppf(1 - alpha / 2) * np.sqrt(var)
    clip = lambda x: float(min(1.0, max(0.0, x)))
    return {"estimate": clip(theta), "low": clip(theta - half), "high": clip(theta + half)}


def data_set(rng, name, n, big_n, true_rate, sens, spec):
    y_all = rng.uniform(size=n + big_n) < true_rate
    judge = np.where(y_all, rng.uniform(size=n + big_n) < sens, rng.uniform(size=n + big_n) >= spec)
    y, f, fu = y_all[:n].astype(float), judge[:n].astype(float), judge[n:].astype(float)
    out = {"name": name, "human": y.tolist(), "judge": f.tolist(), "judge_only": fu.tolist()}
    for key, lam in (("ppi", 1), ("ppi_plus", None)):
        lo, hi = ppi_mean_ci(y, f, fu, alpha=0.05, lam=lam)
        out[key] = {"estimate": float(np.squeeze(ppi_mean_pointestimate(y, f, fu, lam=lam))),
                    "low": float(np.squeeze(lo)), "high": float(np.squeeze(hi))}
    pos, neg = y == 1, y == 0
    tp, tn = int((f[pos] == 1).sum()), int((f[neg] == 0).sum())
    for key, k, m in (("sensitivity", tp, int(pos.sum())), ("specificity", tn, int(neg.sum()))):
        lo, hi = proportion_confint(k, m, alpha=0.05, method="wilson")
        out[key] = {"estimate": k / m, "low": float(lo), "high": float(hi)}
    p = float(np.concatenate([f, fu]).mean())
    out["raw_judge"] = p
    out["rogan_gladen"] = rogan_gladen(p, n + big_n, tp / pos.sum(), int(pos.sum()),
                                       tn / neg.sum(), int(neg.sum()))
    return out


def main():
    rng = np.random.default_rng(20261208)
    sets = [
        data_set(rng, "issue example: 60% true, sens 0.85, spec 0.75", 80, 400, 0.60, 0.85, 0.75),
        data_set(rng, "few labels", 25, 300, 0.40, 0.90, 0.70),
        data_set(rng, "a good judge", 120, 1000, 0.70, 0.95, 0.95),
        data_set(rng, "a weak judge", 60, 200, 0.50, 0.60, 0.55),
    ]
    out = {"tools": {t: version(t) for t in ("ppi-python", "statsmodels", "scipy", "numpy")},
           "sets": sets}
    path = Path("tests/data/correction/reference.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
