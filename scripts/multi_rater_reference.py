#!/usr/bin/env python3
"""Reference values for raglab's multi-rater agreement (core::agreement::raters).

Writes tests/data/multi_rater/: the rating tables as CSV and reference.json with
Fleiss' kappa (statsmodels), Krippendorff's alpha (the `krippendorff` package;
nominal, ordinal, interval), and Cohen's kappa, linear and quadratic weighted
kappa per pair of raters (scikit-learn), for each table and for the two tables of
one data set pooled (raglab's Overall row).

Data (real ratings with more than two raters per subject), both as printed in
statsmodels' test file statsmodels/stats/tests/test_inter_rater.py, which takes
them from R's irr package:
- `diagnoses`: 30 psychiatric patients, each diagnosed by 6 raters into 5
  categories (1 depression, 2 personality disorder, 3 schizophrenia, 4 neurosis,
  5 other); Fleiss, J. L. (1971) "Measuring nominal scale agreement among many
  raters", Psychological Bulletin 76(5), 378-382, Table 1 (from Sandifer, Hordern
  and Green, 1968). Nominal labels.
- `anxiety`: 20 subjects rated by 3 raters on an ordered scale from 1 (not anxious)
  to 6 (extremely anxious); irr's `anxiety` data set. Ordered labels.

Missing labels: each table is also written with some ratings removed, a fixed
rule (cell of subject s and rater r removed when (5 s + 3 r) % 7 == 0, s and r from
0), to test how missing labels are handled: alpha uses every pairable unit, Fleiss
the complete units only, a pair's kappa the units both labelled.

Usage: python3 scripts/multi_rater_reference.py  (needs numpy, statsmodels,
scikit-learn, krippendorff; versions are recorded in the output).
"""

import csv
import json
import sys
from importlib.metadata import version
from pathlib import Path

import krippendorff
import numpy as np
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats import inter_rater
from statsmodels.stats.tests import test_inter_rater as sm_data

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "multi_rater"


def masked(table):
    """The table with the fixed rule's cells removed (NaN)."""
    t = table.astype(float).copy()
    for s in range(t.shape[0]):
        for r in range(t.shape[1]):
            if (5 * s + 3 * r) % 7 == 0:
                t[s, r] = np.nan
    return t


def write_csv(path, table):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["subject"] + [f"rater{r + 1}" for r in range(table.shape[1])])
        for s, row in enumerate(table):
            w.writerow([s + 1] + ["" if np.isnan(v) else str(int(v)) for v in row])


def row_values(table, labels, ordered):
    """Every statistic of one table (rows: subjects, columns: raters; NaN missing)."""
    out = {}
    complete = table[~np.isnan(table).any(axis=1)]
    counts, _ = inter_rater.aggregate_raters(complete.astype(int), n_cat=None)
    # aggregate_raters counts only the categories present; put them on all labels.
    full = np.zeros((complete.shape[0], len(labels)))
    for i, row in enumerate(complete.astype(int)):
        for v in row:
            full[i, labels.index(v)] += 1
    assert np.allclose(full.sum(), counts.sum())
    out["fleiss"] = float(inter_rater.fleiss_kappa(full, method="fleiss"))
    out["complete_units"] = int(complete.shape[0])
    out["units"] = int((np.sum(~np.isnan(table), axis=1) >= 2).sum())
    levels = ["nominal"] + (["ordinal", "interval"] if ordered else [])
    for level in levels:
        out[f"alpha_{level}"] = float(
            krippendorff.alpha(
                reliability_data=table.T,
                value_domain=np.array(labels, dtype=float),
                level_of_measurement=level,
            )
        )
    pairs = []
    for a in range(table.shape[1]):
        for b in range(a + 1, table.shape[1]):
            both = ~np.isnan(table[:, a]) & ~np.isnan(table[:, b])
            x, y = table[both, a].astype(int), table[both, b].astype(int)
            p = {"first": f"rater{a + 1}", "second": f"rater{b + 1}", "units": int(both.sum())}
            p["kappa"] = float(cohen_kappa_score(x, y, labels=labels))
            if ordered:
                p["linear"] = float(cohen_kappa_score(x, y, labels=labels, weights="linear"))
                p["quadratic"] = float(cohen_kappa_score(x, y, labels=labels, weights="quadratic"))
            pairs.append(p)
    out["pairs"] = pairs
    return out


def data_set(name, table, labels, ordered):
    full = table.astype(float)
    miss = masked(table)
    write_csv(OUT / f"{name}.csv", full)
    write_csv(OUT / f"{name}_missing.csv", miss)
    return {
        "labels": [str(v) for v in labels],
        "ordered": ordered,
        "raters": table.shape[1],
        "criteria": {"full": f"{name}.csv", "missing": f"{name}_missing.csv"},
        "rows": {
            "full": row_values(full, labels, ordered),
            "missing": row_values(miss, labels, ordered),
            # Overall: every (subject, criterion) unit of both tables pooled.
            "Overall": row_values(np.vstack([full, miss]), labels, ordered),
        },
    }


def seen_by_last_rater(name, table):
    """The rows as the last rater sees them in raglab's study (the items revealed to
    them): an item (a subject, with the criteria `full` and `missing`) is revealed
    to a reviewer once two reviewers have labelled both its criteria and that
    reviewer is one of them; labels given before are blind."""
    full = table.astype(float)
    miss = masked(table)
    complete = ~np.isnan(full) & ~np.isnan(miss)
    last = complete.shape[1] - 1
    seen = complete[:, last] & complete[:, :last].any(axis=1)
    return {
        "rater": f"rater{last + 1}",
        "items": int(seen.sum()),
        "rows": {
            "full": row_values(full[seen], *name),
            "missing": row_values(miss[seen], *name),
            "Overall": row_values(np.vstack([full[seen], miss[seen]]), *name),
        },
    }


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    ref = {
        "generated_by": "scripts/multi_rater_reference.py",
        "versions": {
            p: version(p) for p in ["numpy", "statsmodels", "scikit-learn", "krippendorff"]
        },
        "python": sys.version.split()[0],
        "sets": {
            "diagnoses": data_set("diagnoses", sm_data.diagnoses, [1, 2, 3, 4, 5], False),
            "anxiety": data_set("anxiety", sm_data.anxiety, [1, 2, 3, 4, 5, 6], True),
        },
        # The study test's view of reviewer rater3 (tests/it/study/reference_raters.rs).
        "anxiety_seen_by_rater3": seen_by_last_rater(([1, 2, 3, 4, 5, 6], True), sm_data.anxiety),
    }
    with open(OUT / "reference.json", "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    print(json.dumps({k: v["rows"]["Overall"]["alpha_nominal"] for k, v in ref["sets"].items()}))


if __name__ == "__main__":
    main()
