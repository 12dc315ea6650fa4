#!/usr/bin/env python3
"""Build the BEIR-format test datasets in tests/data/beir/ from real data at hand.

Two small slices, each a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv),
written exactly as BEIR's GenericDataLoader reads them:

- medquad/: the first 15 MedQuAD CDC documents of tests/data/medquad_cdc_sample (their
  74 answer passages), and every question of queries.jsonl whose answers all lie in them.
  Graded qrels, made here by one rule: 2 for a passage that answers the question (MedQuAD's
  own pairing), 1 for every other passage of the same MedQuAD document (same XML file, same
  focus: on topic, not the answer). Split: test.
- pubmedqa/: PubMedQA PQA-L items from the shared data folder (default
  /work/shared/data/pubmedqa_pqal, itself made from github.com/pubmedqa/pubmedqa): the
  first 80 items of the official test split and the first 20 of the other 500 (`cv`),
  in file order. Corpus: each item's abstract (its title is empty, as in PubMedQA).
  Queries: the item's question, id `q-<pubid>` (BEIR's evaluator drops a passage whose id
  equals the query id, so the ids must differ). Qrels: the question's own abstract,
  score 1. Splits: test (80 queries) and cv (20 queries); queries.jsonl holds both, as
  BEIR's files hold every split's queries.

Nothing is written by hand and nothing comes from raglab's output. Run from the
repository root: python3 scripts/build_beir_test_data.py [--pubmedqa DIR]
"""

import argparse
import json
import shutil
from collections import OrderedDict
from pathlib import Path

OUT = Path("tests/data/beir")
MEDQUAD = Path("tests/data/medquad_cdc_sample")
MEDQUAD_DOCS = 15
PUBMEDQA_TEST = 80
PUBMEDQA_CV = 20


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def write_qrels(path, rows):
    """BEIR's qrels: a header line, then `query-id corpus-id score`, tab separated."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q, d, s in rows:
            f.write(f"{q}\t{d}\t{s}\n")


def document_of(passage_id):
    """MedQuAD passage `CDC_QA-0000001-5` belongs to document `CDC_QA-0000001`."""
    return passage_id.rsplit("-", 1)[0]


def medquad():
    corpus = read_jsonl(MEDQUAD / "corpus.jsonl")
    docs = OrderedDict()
    for r in corpus:
        docs.setdefault(document_of(r["id"]), []).append(r)
    kept = list(docs.items())[:MEDQUAD_DOCS]
    passages = [r for _, rs in kept for r in rs]
    in_slice = {r["id"] for r in passages}
    by_doc = {d: [r["id"] for r in rs] for d, rs in kept}
    questions = [
        q
        for q in read_jsonl(MEDQUAD / "queries.jsonl")
        if q["relevant"] and all(d in in_slice for d in q["relevant"])
    ]
    out = OUT / "medquad"
    write_jsonl(
        out / "corpus.jsonl",
        [
            {
                "_id": r["id"],
                "title": r["title"],
                "text": r["text"],
                "metadata": {"url": r["url"]},
            }
            for r in passages
        ],
    )
    write_jsonl(
        out / "queries.jsonl",
        [
            {"_id": q["id"], "text": q["text"], "metadata": {"qtype": q["qtype"]}}
            for q in questions
        ],
    )
    rows = []
    for q in questions:
        answers = set(q["relevant"])
        siblings = sorted(
            {p for d in answers for p in by_doc[document_of(d)]} - answers
        )
        rows += [(q["id"], d, 2) for d in sorted(answers)]
        rows += [(q["id"], d, 1) for d in siblings]
    write_qrels(out / "qrels" / "test.tsv", rows)
    shutil.copy(MEDQUAD / "LICENSE-MedQuAD-CC-BY-4.0.txt", out)
    return len(passages), len(questions), len(rows)


def pubmedqa(src):
    corpus = {r["id"]: r for r in read_jsonl(src / "corpus.jsonl")}
    queries = read_jsonl(src / "queries.jsonl")
    test = [q for q in queries if q["split"] == "test"][:PUBMEDQA_TEST]
    cv = [q for q in queries if q["split"] == "cv"][:PUBMEDQA_CV]
    chosen = test + cv
    out = OUT / "pubmedqa"
    write_jsonl(
        out / "corpus.jsonl",
        [
            {
                "_id": d,
                "title": corpus[d]["title"],
                "text": corpus[d]["text"],
                "metadata": {"year": corpus[d]["year"]},
            }
            for q in chosen
            for d in q["relevant"]
        ],
    )
    write_jsonl(
        out / "queries.jsonl",
        [{"_id": f"q-{q['id']}", "text": q["text"]} for q in chosen],
    )
    for name, qs in (("test", test), ("cv", cv)):
        write_qrels(
            out / "qrels" / f"{name}.tsv",
            [(f"q-{q['id']}", d, 1) for q in qs for d in q["relevant"]],
        )
    shutil.copy(src / "LICENSE-PubMedQA-MIT.txt", out)
    return len(chosen), len(test), len(cv)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pubmedqa", type=Path, default=Path("/work/shared/data/pubmedqa_pqal"))
    args = ap.parse_args()
    print("medquad: %d passages, %d queries, %d judgements" % medquad())
    print("pubmedqa: %d passages, %d test and %d cv queries" % pubmedqa(args.pubmedqa))


if __name__ == "__main__":
    main()
