#!/usr/bin/env python3
"""Build sample-data/pubmedqa/ from PubMedQA PQA-L (MIT): the one multiple-choice set
here with real answers and a real corpus.

Input: shared/data/pubmedqa_pqal (corpus.jsonl, queries.jsonl, LICENSE-PubMedQA-MIT.txt).
Output, under OUT_DIR:
  corpus.jsonl   the 1,000 abstracts as JSONL records {id, title, text, ...}; ingesting
                 the file gives one chunk per abstract whose id is the PubMed id
  mcqa.jsonl     the 500 questions of the official test split as multiple-choice
                 questions: {id, text, options: [yes, no, maybe], answer, relevant}
  LICENSE-PubMedQA-MIT.txt, ATTRIBUTION.md

The answer is the adjudicated `final_decision`. The other 500 abstracts stay in the
corpus as distractors for retrieval.

Usage: build_mcqa_sample.py SOURCE_DIR OUT_DIR
"""
import json
import shutil
import sys
from pathlib import Path


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "corpus.jsonl", out / "corpus.jsonl")
    shutil.copy(src / "LICENSE-PubMedQA-MIT.txt", out / "LICENSE-PubMedQA-MIT.txt")
    n = 0
    with open(src / "queries.jsonl") as f, open(out / "mcqa.jsonl", "w") as w:
        for line in f:
            q = json.loads(line)
            if q["split"] != "test":
                continue
            w.write(json.dumps({
                "id": q["id"],
                "text": q["text"],
                "options": ["yes", "no", "maybe"],
                "answer": q["final_decision"],
                "relevant": q["relevant"],
            }) + "\n")
            n += 1
    (out / "ATTRIBUTION.md").write_text(
        "PubMedQA PQA-L (github.com/pubmedqa/pubmedqa @ 1cbae8e92f72f20c8d3747cbb3bf5bc53554d997),\n"
        "MIT licence (copy alongside). Abstracts are PubMed text.\n\n"
        "Jin Q, Dhingra B, Liu Z, Cohen W, Lu X. PubMedQA: A Dataset for Biomedical Research\n"
        "Question Answering. EMNLP 2019.\n\n"
        f"mcqa.jsonl: the {n} questions of the official test split, options yes/no/maybe,\n"
        "answer = the adjudicated final_decision. The paper reports a majority baseline of\n"
        "55.2% and single-human accuracy of 78.0% on this split.\n"
    )
    print(f"{n} questions, corpus copied to {out}")


if __name__ == "__main__":
    main()
