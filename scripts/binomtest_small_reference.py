"""scipy's two-sided binomtest(b, b + c, 0.5) for every pair of discordant counts with
b + c <= 16: the reference for McNemar's exact p of `report answers --compare` on small
answer runs (tests/it/models/compare_answers.rs). Written from scipy alone, never from raglab.

Run from the repository root: python3 scripts/binomtest_small_reference.py
(scipy 1.17.1 was used; see tests/data/PROVENANCE.md).
"""

import json
from pathlib import Path

import scipy
from scipy import stats

MAX_DISCORDANT = 16


def main():
    cases = []
    for n in range(MAX_DISCORDANT + 1):
        for b in range(n + 1):
            c = n - b
            # binomtest needs n >= 1; with no discordant pair McNemar's p is 1 by
            # definition (no discordant pair is no evidence), which the test checks on its own.
            if n == 0:
                continue
            p = stats.binomtest(b, n, 0.5, alternative="two-sided").pvalue
            cases.append({"b": b, "c": c, "p": float(p)})
    head = {"scipy": scipy.__version__, "max_discordant": MAX_DISCORDANT}
    lines = ",\n  ".join(json.dumps(c) for c in cases)
    text = json.dumps(head)[:-1] + ', "binomtest": [\n  ' + lines + "\n]}\n"
    json.loads(text)
    path = Path("tests/data/significance/binomtest_small.json")
    path.write_text(text)
    print(f"wrote {path}: {len(cases)} cases")


if __name__ == "__main__":
    main()
