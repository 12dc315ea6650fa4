#!/usr/bin/env python3
"""Reference values for Gwet's AC1 and the Brennan-Prediger coefficient (nominal,
unweighted), computed with irrCAC (the Python port of Gwet's R package irrCAC).

Writes tests/data/multi_rater/chance_corrected.json: for each table below, irrCAC's
`irrCAC.raw.CAC(ratings).gwet()` (AC1) and `.bp()` (Brennan-Prediger): coefficient,
pa, pe, standard error, z, 95% confidence interval and p-value, with the counts they
rest on (n = subjects with at least one rating, n2more = subjects with at least two,
q = categories). For the two-rater PubMedQA pairs it also writes irrCAC's
contingency-table path (`irrCAC.table.CAC(...).gwet()` / `.bp()`), whose variance
formula differs.

Full precision: irrCAC rounds everything it returns except the raw path's p-value to
`digits` decimals (default 5; `np.round` / `round`). The values here are irrCAC's own
code run with that rounding switched off (the names `round` and `np.round` inside
irrCAC's modules replaced by the identity while the call runs; nothing else changed).
The script checks that rounding them to 5 decimals gives exactly what the untouched
irrCAC returns, and that irrCAC's documented example (its raw_4raters data set: AC1
0.77544, se 0.14295, pa 0.81818, pe 0.19032; BP 0.773, se 0.145, p 0.00012 at 3 digits)
still comes out.

Data (all in this repository; nothing else is read):
- tests/data/multi_rater/diagnoses.csv, diagnoses_missing.csv: 30 subjects, 6 raters,
  categories 1-5 (Fleiss 1971; see tests/data/PROVENANCE.md).
- tests/data/multi_rater/anxiety.csv, anxiety_missing.csv: 20 subjects, 3 raters,
  categories 1-6, treated here as nominal.
- `Overall` of each data set: the full and the missing table stacked (60 or 40
  subjects), as raglab's Overall row pools criteria (same as reference.json).
- `anxiety_sparse`: anxiety_missing.csv with further cells removed, cell of subject s
  and rater r (from 0) removed where (s + 2 r) % 4 == 0, so that 6 subjects keep one
  rating and one keeps none (the table is written into the JSON); it exercises irrCAC's
  handling of one-rating subjects (kept in n and in the category shares, left out of pa)
  and of unrated subjects (dropped).
- tests/data/pubmedqa_pqal/raters.jsonl: 1,000 items, labels yes/no/maybe; pairs
  reasoning_required_pred vs reasoning_free_pred, and reasoning_required_pred vs
  final_decision.

Categories are passed explicitly (1-5, 1-6, yes/no/maybe); every one of them is used in
every table, so irrCAC's default (the categories observed) gives the same numbers.

Usage: python3 -m venv /tmp/irrvenv && /tmp/irrvenv/bin/pip install irrCAC==0.4.4 pandas numpy
&& /tmp/irrvenv/bin/python scripts/chance_corrected_reference.py  (versions are recorded
in the output).
"""

import json
import math
import sys
import warnings
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

import irrCAC.raw
import irrCAC.table
import numpy as np
import pandas as pd
from irrCAC.datasets import raw_4raters

ROOT = Path(__file__).resolve().parent.parent
MR = ROOT / "tests" / "data" / "multi_rater"
PQAL = ROOT / "tests" / "data" / "pubmedqa_pqal" / "raters.jsonl"
OUT = MR / "chance_corrected.json"


class _NumpyNoRound:
    """numpy, except that `round` returns its argument unchanged."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def round(x, decimals=0):
        return x


@contextmanager
def unrounded():
    """Run irrCAC's code with its final rounding switched off."""
    mods = [irrCAC.raw, irrCAC.table]
    saved = [(m, m.np, m.__dict__.get("round")) for m in mods]
    for m in mods:
        m.np = _NumpyNoRound()
        m.round = lambda x, ndigits=None: x
    try:
        yield
    finally:
        for m, old_np, old_round in saved:
            m.np = old_np
            if old_round is None:
                del m.round
            else:
                m.round = old_round


def as_float(x):
    return float(np.asarray(x).reshape(-1)[0]) if np.ndim(x) else float(x)


def est_dict(est):
    lo, hi = est["confidence_interval"]
    return {
        "coefficient": as_float(est["coefficient_value"]),
        "pa": as_float(est["pa"]),
        "pe": as_float(est["pe"]),
        "se": as_float(est["se"]),
        "z": as_float(est["z"]),
        "ci95": [as_float(lo), as_float(hi)],
        "p_value": as_float(est["p_value"]),
        "irrcac_name": est["coefficient_name"],
    }


def same_after_rounding(full, rounded, digits=5):
    """irrCAC's rounded output equals our unrounded value rounded the same way."""
    for key in ["coefficient", "pa", "pe", "se", "z"]:
        a, b = round(full[key], digits), rounded[key]
        assert a == b or math.isclose(a, b, abs_tol=1.5 * 10**-digits), (key, full, rounded)
    for a, b in zip(full["ci95"], rounded["ci95"]):
        assert math.isclose(round(a, digits), b, abs_tol=1.5 * 10**-digits), (full, rounded)


def run(cls, data, method, **kw):
    """irrCAC's result, unrounded, checked against the untouched rounded result."""
    rounded = est_dict(getattr(cls(data, **kw), method)()["est"])
    with unrounded():
        full = est_dict(getattr(cls(data, **kw), method)()["est"])
    same_after_rounding(full, rounded)
    if method == "bp" and cls is irrCAC.raw.CAC:
        assert full["p_value"] == rounded["p_value"]  # raw path: p is never rounded
    return full


def counts(df, categories):
    """n (rows irrCAC keeps: at least one rating), n2more, q, ratings, df of t."""
    r = df.notna().sum(axis=1)
    n = int((r >= 1).sum())
    return {
        "subjects_in_table": int(df.shape[0]),
        "n": n,
        "n2more": int((r >= 2).sum()),
        "one_rating": int((r == 1).sum()),
        "no_rating": int((r == 0).sum()),
        "q": len(categories),
        "ratings": int(r.sum()),
        "t_df": n - 1,
    }


def raw_values(df, categories):
    observed = set(df.stack().unique().tolist())
    assert observed <= set(categories), observed
    assert len(observed) == len(categories), "a category is unused; see the docstring"
    out = counts(df, categories)
    out["ac1"] = run(irrCAC.raw.CAC, df, "gwet", categories=categories)
    out["bp"] = run(irrCAC.raw.CAC, df, "bp", categories=categories)
    # Observed categories only (irrCAC's default) must give the same numbers here.
    default = run(irrCAC.raw.CAC, df, "gwet")
    assert math.isclose(default["coefficient"], out["ac1"]["coefficient"], abs_tol=1e-14)
    return out


def read_csv(name):
    df = pd.read_csv(MR / f"{name}.csv", index_col="subject")
    return df.astype(float)


def sparse(df):
    t = df.copy()
    for s in range(t.shape[0]):
        for r in range(t.shape[1]):
            if (s + 2 * r) % 4 == 0:
                t.iat[s, r] = np.nan
    return t


def table_json(df):
    return [[None if np.isnan(v) else int(v) for v in row] for row in df.values]


def data_set(name, labels):
    full, miss = read_csv(name), read_csv(f"{name}_missing")
    both = pd.concat([full, miss], ignore_index=True)
    return {
        "labels": [str(v) for v in labels],
        "raters": int(full.shape[1]),
        "rows": {
            "full": {"table": f"{name}.csv", **raw_values(full, labels)},
            "missing": {"table": f"{name}_missing.csv", **raw_values(miss, labels)},
            "Overall": {
                "table": f"{name}.csv then {name}_missing.csv, stacked",
                **raw_values(both, labels),
            },
        },
    }


def pubmedqa():
    rows = [json.loads(line) for line in PQAL.read_text().splitlines() if line.strip()]
    assert len(rows) == 1000
    labels = ["yes", "no", "maybe"]
    out = {"file": "tests/data/pubmedqa_pqal/raters.jsonl", "labels": labels, "pairs": []}
    for a, b in [
        ("reasoning_required_pred", "reasoning_free_pred"),
        ("reasoning_required_pred", "final_decision"),
    ]:
        df = pd.DataFrame({a: [r[a] for r in rows], b: [r[b] for r in rows]})
        pair = {"first": a, "second": b, **raw_values(df, labels)}
        # The same ratings as a q x q contingency table (rows: first, columns: second).
        cont = pd.crosstab(df[a], df[b]).reindex(index=labels, columns=labels, fill_value=0)
        pair["confusion_rows_first"] = cont.values.tolist()
        pair["table_path"] = {
            "ac1": run(irrCAC.table.CAC, cont, "gwet"),
            "bp": run(irrCAC.table.CAC, cont, "bp"),
        }
        out["pairs"].append(pair)
    return out


def check_documented_example():
    """irrCAC's own doctest / unit-test values for its raw_4raters data set."""
    ac1 = irrCAC.raw.CAC(raw_4raters()).gwet()["est"]
    assert ac1["coefficient_value"] == 0.77544 and ac1["se"] == 0.14295, ac1
    assert ac1["pa"] == 0.81818 and ac1["pe"] == 0.19032, ac1
    assert ac1["confidence_interval"] == (0.46081, 1), ac1
    bp = irrCAC.raw.CAC(raw_4raters(), digits=3).bp()["est"]
    assert bp["coefficient_value"] == 0.773 and bp["se"] == 0.145, bp
    assert round(bp["p_value"], 5) == 0.00012, bp


def main():
    # irrCAC's CAC.__init__ calls replace(inplace=True) on the dropna() of the table;
    # harmless here (no "" cells), but pandas warns when a row was dropped.
    warnings.simplefilter("ignore", pd.errors.SettingWithCopyWarning)
    check_documented_example()
    anx_sparse = sparse(read_csv("anxiety_missing"))
    ref = {
        "generated_by": "scripts/chance_corrected_reference.py",
        "versions": {p: version(p) for p in ["irrCAC", "numpy", "pandas", "scipy"]},
        "python": sys.version.split()[0],
        "notes": [
            "irrCAC.raw.CAC(ratings, categories=labels).gwet() / .bp(), defaults: "
            "identity weights, confidence_level 0.95, N = inf (f = 0); irrCAC's final "
            "rounding switched off (see the script's docstring).",
            "ci95: [lower, min(1, upper)], Student t with n - 1 df, n = subjects with at "
            "least one rating.",
            "p_value as irrCAC reports it: AC1 two-sided 2 * (1 - T.cdf(|z|, n - 1)); "
            "BP ONE-sided 1 - T.cdf(|z|, n - 1) (irrCAC 0.4.4's bp() lacks the factor 2). "
            "Computed as 1 - cdf, so it is exactly 0 once cdf rounds to 1 (PubMedQA).",
            "table_path: irrCAC.table.CAC on the q x q contingency table (2 raters, "
            "Gwet 2014's two-rater variance, divisor n, p = 2 * (1 - T.cdf(max(coef, "
            "0) / se, n - 1))); same coefficient, pa and pe as the raw path, other se.",
        ],
        "sets": {
            "diagnoses": data_set("diagnoses", [1, 2, 3, 4, 5]),
            "anxiety": data_set("anxiety", [1, 2, 3, 4, 5, 6]),
        },
        "anxiety_sparse": {
            "rule": "anxiety_missing.csv, plus cell (s, r) removed where (s + 2 r) % 4 == 0 "
            "(s, r from 0)",
            "labels": [str(v) for v in range(1, 7)],
            "table": table_json(anx_sparse),
            **raw_values(anx_sparse, [1, 2, 3, 4, 5, 6]),
        },
        "pubmedqa": pubmedqa(),
    }
    with open(OUT, "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    summary = {k: v["rows"]["full"]["ac1"]["coefficient"] for k, v in ref["sets"].items()}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
