#!/usr/bin/env python3
"""Rebuild sample-data/ from the MedQuAD CDC sample (CC BY 4.0).

Input: a folder with corpus.jsonl and queries.jsonl (shared/data/medquad_cdc_sample).
Output, under sample-data/:
  guidance/TOPIC/DOC.md  one markdown document per MedQuAD title, one `##` section per
                         passage, named for its kind of guidance (from `qtype`, never the
                         question text), so header chunking gives exactly one chunk per
                         passage; TOPIC is the first path segment of the CDC URL.
  questions.jsonl        {id, text, answer, relevant: [chunk ids], topic, qtype, source_ids}
  LICENSE-MedQuAD-CC-BY-4.0.txt, ATTRIBUTION.md

Chunk ids follow raglab's header chunker (src/core/chunk/id.rs): DOC_ID#SLUG, where DOC_ID
is the file path under the ingest root without extension and SLUG the slug of the section
header, with -2, -3... for repeats within one document. The Rust test
`tests/ingest_sample.rs` checks that ingesting guidance/ yields exactly these ids.

Usage: build_sample_data.py SOURCE_DIR OUT_DIR
"""
import json
import re
import shutil
import sys
from collections import OrderedDict, defaultdict
from pathlib import Path
from urllib.parse import urlparse

SECTION = {
    "information": "Overview",
    "susceptibility": "Who is at risk",
    "symptoms": "Symptoms",
    "exams and tests": "Diagnosis",
    "treatment": "Treatment",
    "prevention": "Prevention",
    "frequency": "How common it is",
    "complications": "Complications",
    "causes": "Causes",
    "research": "Research",
}
ORDER = list(SECTION)


def slug(text: str, limit: int = 64) -> str:
    """Lowercase ASCII alphanumeric runs joined by '-', cut at a word boundary."""
    s = "-".join(re.findall(r"[a-z0-9]+", text.lower()))
    if len(s) > limit:
        s = s[:limit].rsplit("-", 1)[0]
    return s or "untitled"


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    corpus = [json.loads(l) for l in (src / "corpus.jsonl").read_text().splitlines() if l.strip()]
    queries = [json.loads(l) for l in (src / "queries.jsonl").read_text().splitlines() if l.strip()]

    docs = OrderedDict()
    for rec in corpus:
        docs.setdefault(rec["title"], []).append(rec)

    guidance = out / "guidance"
    if guidance.exists():
        shutil.rmtree(guidance)
    chunk_of = {}  # record id -> chunk id
    topic_of = {}
    used_doc_ids = set()
    for title, recs in docs.items():
        topic = urlparse(recs[0]["url"]).path.strip("/").split("/")[0].lower() or "general"
        doc_id = f"{topic}/{slug(title)}"
        n = 2
        base = doc_id
        while doc_id in used_doc_ids:
            doc_id, n = f"{base}-{n}", n + 1
        used_doc_ids.add(doc_id)
        recs = sorted(recs, key=lambda r: (ORDER.index(r["qtype"]), r["id"]))
        seen = defaultdict(int)
        lines = ["---", f"title: {title}", f"topic: {topic}", f"source: {recs[0]['url']}",
                 "license: CC BY 4.0, MedQuAD (Ben Abacha & Demner-Fushman 2019)", "---", "",
                 f"# {title}", ""]
        for rec in recs:
            header = SECTION[rec["qtype"]]
            seen[header] += 1
            count = seen[header]
            shown = header if count == 1 else f"{header} ({count})"
            sid = slug(shown)
            chunk_of[rec["id"]] = f"{doc_id}#{sid}"
            topic_of[rec["id"]] = topic
            lines += [f"## {shown}", "", rec["text"].strip(), ""]
        path = guidance / f"{doc_id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines), encoding="utf-8")

    text_of = {r["id"]: r["text"].strip() for r in corpus}
    with (out / "questions.jsonl").open("w", encoding="utf-8") as f:
        for q in queries:
            rel = q["relevant"]
            f.write(json.dumps({
                "id": q["id"],
                "text": q["text"],
                "answer": "\n\n".join(text_of[r] for r in rel),
                "relevant": [chunk_of[r] for r in rel],
                "topic": topic_of[rel[0]],
                "qtype": q.get("qtype"),
                "source_ids": rel,
            }, ensure_ascii=False) + "\n")

    shutil.copy(src / "LICENSE-MedQuAD-CC-BY-4.0.txt", out / "LICENSE-MedQuAD-CC-BY-4.0.txt")
    print(f"{len(docs)} documents, {len(chunk_of)} sections, {len(queries)} questions -> {out}")


if __name__ == "__main__":
    main()
