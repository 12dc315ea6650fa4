#!/usr/bin/env python3
"""Reference Bradley-Terry scores for raglab's pairwise preference ranking
(core::preference), from the `choix` package's maximum-likelihood fit.

Writes tests/data/preference/: comparisons.csv (item, winner, loser, tie) and
reference.json with choix's scores. The comparisons are synthetic (said so in
tests/data/PROVENANCE.md): 5 runs with true log strengths (0.8, 0.3, 0, -0.4,
-0.7), 60 items, each comparing a drawn pair of runs once per reviewer (3) with a
tie when the two strengths' win chance is within 0.08 of a coin flip by a draw.

raglab counts a tie as half a win for each side. choix takes whole wins, so each
comparison is given to it twice: a win as two wins, a tie as one win each way (the
likelihood is the same up to a factor of 2, so the maximum is the same point).
choix's fit is `opt_pairwise` with no regularisation (alpha = 0), a Newton-CG
optimiser of the log-likelihood: another algorithm than raglab's MM iteration.
Scores are log strengths centred to mean 0.

Usage: python3 scripts/preference_reference.py  (needs numpy, scipy, choix;
versions are recorded in the output).
"""

import csv
import json
from importlib.metadata import version
from pathlib import Path

import choix
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "preference"
TRUE = np.array([0.8, 0.3, 0.0, -0.4, -0.7])


def comparisons():
    rng = np.random.default_rng(20261202)
    rows = []
    for item in range(60):
        a, b = rng.choice(len(TRUE), size=2, replace=False)
        p = 1.0 / (1.0 + np.exp(TRUE[b] - TRUE[a]))
        for _reviewer in range(3):
            u = rng.random()
            if abs(u - 0.5) < 0.08:
                rows.append((item, int(a), int(b), 1))
            elif u < p:
                rows.append((item, int(a), int(b), 0))
            else:
                rows.append((item, int(b), int(a), 0))
    return rows


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rows = comparisons()
    with open(OUT / "comparisons.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["item", "winner", "loser", "tie"])
        w.writerows(rows)
    data = []
    for _item, win, lose, tie in rows:
        if tie:
            data += [(win, lose), (lose, win)]
        else:
            data += [(win, lose), (win, lose)]
    params = choix.opt_pairwise(len(TRUE), data, alpha=0.0, method="Newton-CG", tol=1e-12)
    params = params - params.mean()
    ref = {
        "runs": len(TRUE),
        "scores": [float(x) for x in params],
        "versions": {p: version(p) for p in ("choix", "numpy", "scipy")},
    }
    (OUT / "reference.json").write_text(json.dumps(ref, indent=2) + "\n")
    print(json.dumps(ref, indent=2))


if __name__ == "__main__":
    main()
