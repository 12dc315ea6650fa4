#!/usr/bin/env python3
"""Write a synthetic markdown corpus for throughput benchmarks (not for quality).

Usage: synth_corpus.py OUT_DIR SECTIONS [SECTIONS_PER_DOC]
Each document has a title and `##` sections of 60-180 words drawn from a fixed public-health
vocabulary with a seeded generator, so the corpus is the same on every run.
"""
import random
import sys
from pathlib import Path

WORDS = ("vaccine vaccination dose booster infection transmission symptoms fever cough rash "
         "children adults pregnant travel prevention treatment antibiotics antiviral diagnosis "
         "testing outbreak exposure contact hands washing soap water food safety mosquito tick "
         "bite animal rabies measles influenza tuberculosis hepatitis hygiene mask ventilation "
         "healthcare provider clinic hospital guidance recommendation risk factor immune system "
         "incubation period isolation quarantine surveillance reporting laboratory specimen").split()
HEADERS = ["Overview", "Symptoms", "Who is at risk", "Diagnosis", "Treatment", "Prevention",
           "How common it is", "Complications", "Travel advice", "For clinicians"]


def main() -> None:
    out, total = Path(sys.argv[1]), int(sys.argv[2])
    per_doc = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    rng = random.Random(2024)
    out.mkdir(parents=True, exist_ok=True)
    written, d = 0, 0
    while written < total:
        n = min(per_doc, total - written)
        lines = [f"# Synthetic guidance {d}", ""]
        for s in range(n):
            lines += [f"## {HEADERS[s % len(HEADERS)]} {s}", "",
                      " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 180))) + ".", ""]
        (out / f"doc-{d:05d}.md").write_text("\n".join(lines))
        written += n
        d += 1
    print(f"{d} documents, {written} sections -> {out}")


if __name__ == "__main__":
    main()
