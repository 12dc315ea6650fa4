#!/usr/bin/env python3
"""Rebuild sample-data/ from the MedQuAD CDC sample (CC BY 4.0).

Input: a folder with corpus.jsonl and queries.jsonl (shared/data/medquad_cdc_sample).
Output, under sample-data/:
  guidance/TOPIC/DOC.md  one markdown document per MedQuAD title, one `##` section per
                         passage, named for its kind of guidance (from `qtype`, never the
                         question text), so header chunking gives exactly one chunk per
                         passage; TOPIC is the first path segment of the CDC URL.
  questions.jsonl        {id, text, answer, relevant: [chunk ids], topic, qtype, source_ids}
  repairs.jsonl          {id, medquad, text, repairs: [kinds]}: every question whose text
                         differs from MedQuAD's, and every question dropped (text null)
  PROVENANCE.md          source, licence, attribution, and what was repaired (counts per
                         kind, dropped ids, the titles given to untitled documents)
  LICENSE-MedQuAD-CC-BY-4.0.txt

MedQuAD fills question templates with a document's focus (its title). Where the focus was
empty the questions read "What is (are) ?" and the documents had no title; the templates
also leave "(are)", a doubled "? ?" and a space before "?". The repairs below are rules,
each counted; the one question no rule makes English is rewritten by hand (`REWRITE`),
and questions that cannot be repaired are dropped, both listed in PROVENANCE.md. A
question keeps its MedQuAD id.

Chunk ids follow raglab's header chunker (src/core/chunk/id.rs): DOC_ID#SLUG, where DOC_ID
is the file path under the ingest root without extension and SLUG the slug of the section
header, with -2, -3... for repeats within one document. The Rust tests
`tests/it/corpus/ingest_sample.rs` and `tests/it/corpus/sample_data.rs` check that the chunks of
guidance/ hold every question's targets and that every question is well formed.

Usage: build_sample_data.py SOURCE_DIR OUT_DIR
"""
import json
import re
import shutil
import sys
from collections import Counter, OrderedDict, defaultdict
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

# Titles of the pages MedQuAD left without a focus, taken from each page's own text
# (the phrases must occur in every passage from that URL, or the build stops).
UNTITLED = {
    "http://www.cdc.gov/HAI/organisms/visa_vrsa/visa_vrsa.html": (
        "Vancomycin-intermediate/resistant Staphylococcus aureus (VISA/VRSA)",
        ["VISA/VRSA", "Vancomycin-resistant Staphylococcus aureus"],
    ),
    "http://www.cdc.gov/HAI/organisms/vre/vre.html": (
        "Vancomycin-resistant Enterococci (VRE)",
        ["vancomycin-resistant enterococci (VRE)"],
    ),
    "http://www.cdc.gov/vaccines/": ("Vaccines and Immunizations", ["accine"]),
}

# The one question no rule turns into English (MedQuAD's text is a page heading).
REWRITE = {"q-CDC_QA-0000199-12": "How do vaccines prevent disease?"}

# Templates whose empty focus cannot take a document title that is not a disease: "Who
# is at risk for Vaccines and Immunizations?" asks nothing. Such questions are dropped.
DISEASE_TEMPLATES = ("Who is at risk for", "How to prevent", "How to diagnose",
                     "What are the symptoms of", "What are the treatments for", "What causes")
EMPTY_FOCUS = re.compile(r"^(What is \(are\)|" + "|".join(DISEASE_TEMPLATES) + r")\s*\?(\s*\?)?$")
IS_ARE = re.compile(r"^What is \(are\) (?P<focus>.+?)\s*\?$")
# Plural head nouns among the sample's focuses ("What are Body Lice?").
PLURAL_HEADS = {"lice", "enterococci", "toxins"}
# A target passage shorter than this holds no answer: the page's navigation ("Topics",
# "Frequently Asked Questions (FAQs)") or a heading whose list was lost.
MIN_ANSWER_WORDS = 8
# Category prefixes of MedQuAD titles, dropped from a question's focus (not from the
# document title): "Who is at risk for Ascariasis?", not "... for Parasites - Ascariasis?".
PREFIXES = ("Parasites - ", "Lice - ")

KINDS = {
    "hand_rewrite": "rewritten by hand (REWRITE in the script)",
    "empty_focus": "empty focus filled with the document's title",
    "split": "one MedQuAD text with an empty focus over two documents, split into one question per document",
    "doubled_qmark": "doubled \"? ?\" made one \"?\"",
    "is_are": "\"What is (are) X ?\" made \"What is X?\" or \"What are X?\"",
    "category_prefix": "category prefix (\"Parasites - \", \"Lice - \") dropped from the focus",
    "prevent_vaccination": "\"How to prevent X Vaccination\" made \"How to prevent X\"",
    "appended_focus": "MedQuAD's appended \" for FOCUS ?\" moved to the front (\"FOCUS: question?\")",
    "space_before_qmark": "space before the final \"?\" removed",
    "missing_qmark": "final \"?\" added",
    "capitalised": "first letter capitalised",
    "case_restored": "words MedQuAD lowercased given the case they always have in the passage (hps -> HPS, cdc -> CDC, staphylococcus -> Staphylococcus), and \"i\" -> \"I\"",
}


def slug(text: str, limit: int = 64) -> str:
    """Lowercase ASCII alphanumeric runs joined by '-', cut at a word boundary."""
    s = "-".join(re.findall(r"[a-z0-9]+", text.lower()))
    if len(s) > limit:
        s = s[:limit].rsplit("-", 1)[0]
    return s or "untitled"


def fill_titles(corpus: list) -> Counter:
    """Give every passage without a title its page's title (UNTITLED), checked against
    the passage's text."""
    filled = Counter()
    for rec in corpus:
        if rec["title"].strip():
            continue
        title, evidence = UNTITLED[rec["url"]]
        missing = [e for e in evidence if e not in rec["text"]]
        if missing:
            sys.exit(f"{rec['id']}: title {title!r} not supported by its text ({missing})")
        rec["title"] = title
        filled[title] += 1
    return filled


def focus_of(title: str) -> str:
    for p in PREFIXES:
        if title.startswith(p):
            title = title[len(p):]
    return title


def is_plural(focus: str) -> bool:
    head = re.sub(r"\s*\([^)]*\)\s*$", "", focus).split()
    return bool(head) and head[-1].strip('"').lower() in PLURAL_HEADS


def well_formed(text: str) -> bool:
    """The rules tests/it/corpus/sample_data.rs checks, so a build never ships what it fails."""
    body = text[:-1].rstrip() if text.endswith("?") else ""
    return (text.endswith("?") and not text.endswith(" ?") and "?" not in text[:-1]
            and "(are)" not in text and text[:1].isupper() and re.search(r"[A-Za-z0-9]", body)
            and not EMPTY_FOCUS.match(text))


def restore_case(text: str, passage: str, kinds: list) -> str:
    """In a question MedQuAD wrote in lowercase, give a word (not the first) the form it
    always has in the passage when that form is capitalised and appears mid-sentence
    (after a lowercase word), so acronyms and genus names read as in the passage."""
    words = re.findall(r"[A-Za-z]+", passage)
    lower = {w for w in words if w.islower()}
    mid = Counter(b for a, b in zip(words, words[1:]) if a.islower() and not b.islower())

    def fix(m):
        w = m.group(0)
        if w == "i":
            return "I"
        forms = [f for f in mid if f.lower() == w]
        return forms[0] if len(forms) == 1 and w not in lower else w

    head, sep, rest = text.partition(" ")
    out = head + sep + re.sub(r"\b[a-z]+\b", fix, rest)
    if out != text:
        kinds.append("case_restored")
    return out


def polish(text: str, title: str, kinds: list) -> str:
    """The template repairs of one question whose focus is `title`, in order."""
    if re.search(r"\?\s*\?$", text):
        text = re.sub(r"\?\s*\?$", "?", text)
        kinds.append("doubled_qmark")
    m = IS_ARE.match(text)
    if m:
        focus = m["focus"]
        text = f"What {'are' if is_plural(focus_of(focus)) else 'is'} {focus}?"
        kinds.append("is_are")
    if focus_of(title) != title and title in text:
        text = text.replace(title, focus_of(title))
        kinds.append("category_prefix")
    m = re.match(r"^How to prevent (?P<x>.+) Vaccination\s*\?$", text)
    if m:
        text = f"How to prevent {m['x']}?"
        kinds.append("prevent_vaccination")
    m = re.match(rf"^(?P<body>[a-z].*) for {re.escape(title)}\s*\?$", text)
    if m:
        text = f"{title}: {m['body']}?"
        kinds.append("appended_focus")
    if re.search(r"\s\?$", text):
        text = re.sub(r"\s+\?$", "?", text)
        kinds.append("space_before_qmark")
    if not text.endswith("?"):
        text += "?"
        kinds.append("missing_qmark")
    if text[:1].islower():
        text = text[0].upper() + text[1:]
        kinds.append("capitalised")
    return text


def unanswerable(text: str, rel: list, title_of: dict, text_of: dict):
    """Why a question has no answer among its targets, if it has none: it names another
    document than its targets', or every target passage is too short to answer."""
    named = {t for t in set(title_of.values()) if t in text}
    if named and not named & {title_of[r] for r in rel}:
        return f"it names {', '.join(sorted(named))} but its target is a passage of {title_of[rel[0]]}"
    if all(len(text_of[r].split()) < MIN_ANSWER_WORDS for r in rel):
        shown = " / ".join(repr(text_of[r].replace(chr(10), " ")) for r in rel)
        return f"its target passage holds no answer ({shown})"
    return None


def repair(q: dict, title_of: dict, text_of: dict) -> tuple:
    """The questions (id, text, relevant record ids, kinds) one MedQuAD question becomes
    (none when dropped), and the reason when dropped."""
    text, rel = q["text"], q["relevant"]
    if q["id"] in REWRITE:
        return [(q["id"], REWRITE[q["id"]], rel, ["hand_rewrite"])], None
    m = EMPTY_FOCUS.match(text)
    if m is None:
        why = unanswerable(text, rel, title_of, text_of)
        if why:
            return [], why
        kinds = []
        out = polish(text, title_of[rel[0]], kinds)
        if text[:1].islower():
            out = restore_case(out, " ".join(text_of[r] for r in rel), kinds)
        return [(q["id"], out, rel, kinds)], None
    if m[1] != "What is (are)":
        titles = sorted({title_of[r] for r in rel})
        return [], f"empty focus in \"{m[1]} ?\"; its document, {', '.join(titles)}, is not a disease"
    # "What is (are) ?" fits any title: one question per document, each with its own id
    # (MedQuAD's id of that document's passage).
    by_title = OrderedDict()
    for r in rel:
        by_title.setdefault(title_of[r], []).append(r)
    out = []
    for title, recs in by_title.items():
        kinds = ["empty_focus"] + (["split"] if len(by_title) > 1 else [])
        text = polish(f"What is (are) {title} ?", title, kinds)
        out.append((q["id"] if recs[0] == rel[0] else f"q-{recs[0]}", text, recs, kinds))
    return out, None


def write_docs(corpus: list, guidance: Path) -> tuple:
    """One markdown file per title; returns (chunk id of each record, topic of each
    record, number of documents)."""
    docs = OrderedDict()
    for rec in corpus:
        docs.setdefault(rec["title"], []).append(rec)
    if guidance.exists():
        shutil.rmtree(guidance)
    chunk_of, topic_of, used_doc_ids = {}, {}, set()
    for title, recs in docs.items():
        topic = urlparse(recs[0]["url"]).path.strip("/").split("/")[0].lower() or "general"
        doc_id = f"{topic}/{slug(title)}"
        n, base = 2, doc_id
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
            chunk_of[rec["id"]] = f"{doc_id}#{slug(shown)}"
            topic_of[rec["id"]] = topic
            lines += [f"## {shown}", "", rec["text"].strip(), ""]
        path = guidance / f"{doc_id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines), encoding="utf-8")
    return chunk_of, topic_of, len(docs)


def provenance(n_docs: int, n_chunks: int, questions: list, medquad: int, kinds: Counter,
               dropped: list, filled: Counter, rewrites: list) -> str:
    two = sum(len(q["relevant"]) > 1 for q in questions)
    lines = [
        "# Provenance of sample-data/guidance and sample-data/questions.jsonl", "",
        "Built by `python3 scripts/build_sample_data.py ../shared/data/medquad_cdc_sample sample-data`",
        "from the MedQuAD CDC subset (github.com/abachaa/MedQuAD @ 577bd37b96c02d1833b2c9eed2de9f96964e96cb,",
        "9_CDC_QA/*.xml), CC BY 4.0 (licence: LICENSE-MedQuAD-CC-BY-4.0.txt). Attribution: Ben Abacha A,",
        "Demner-Fushman D. A question-entailment approach to question answering. BMC Bioinformatics",
        "2019;20:511. The passages are CDC's text unchanged; the questions are MedQuAD's, repaired as below.",
        "", "## Sizes", "",
        f"{n_docs} documents, {n_chunks} passages (one chunk each), {len(questions)} questions "
        f"({two} with two targets), from {medquad} MedQuAD questions.", "",
        "## Titles given to untitled documents", "",
        "MedQuAD left these pages without a focus; their passages had shared one document titled",
        "\"untitled\". Each page is now its own document, titled from its own text:", "",
    ]
    for url, (title, _) in UNTITLED.items():
        n = filled[title]
        lines.append(f"- {title} ({n} passage{'' if n == 1 else 's'}): {url}")
    lines += ["", "## Question repairs (questions per kind; a question may have several)", "",
              "| kind | questions |", "|---|---|"]
    lines += [f"| {KINDS[k]} | {kinds[k]} |" for k in KINDS if kinds[k]]
    lines += ["", f"{sum(1 for q in questions if q['_changed'])} of {len(questions)} questions differ "
              "from MedQuAD's text; `repairs.jsonl` lists each with MedQuAD's text and its repairs.", ""]
    lines += ["## Rewritten by hand", ""] + [f"- {i}: \"{old}\" -> \"{new}\"" for i, old, new in rewrites]
    lines += ["", "## Dropped (cannot be repaired)", ""]
    lines += [f"- {i} \"{text}\": {why}" for i, text, why in dropped]
    return "\n".join(lines) + "\n"


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    corpus = [json.loads(l) for l in (src / "corpus.jsonl").read_text().splitlines() if l.strip()]
    queries = [json.loads(l) for l in (src / "queries.jsonl").read_text().splitlines() if l.strip()]
    filled = fill_titles(corpus)
    chunk_of, topic_of, n_docs = write_docs(corpus, out / "guidance")
    title_of = {r["id"]: r["title"] for r in corpus}
    text_of = {r["id"]: r["text"].strip() for r in corpus}

    questions, log, dropped, rewrites, kinds = [], [], [], [], Counter()
    for q in queries:
        made, why = repair(q, title_of, text_of)
        if why:
            dropped.append((q["id"], q["text"], why))
            log.append({"id": q["id"], "medquad": q["text"], "text": None, "repairs": ["dropped"]})
        for qid, text, rel, ks in made:
            if not well_formed(text):
                sys.exit(f"{qid}: {text!r} is still malformed after {ks}")
            kinds.update(set(ks))
            if "hand_rewrite" in ks:
                rewrites.append((qid, q["text"], text))
            changed = text != q["text"] or qid != q["id"]
            if changed:
                log.append({"id": qid, "medquad": q["text"], "text": text, "repairs": ks})
            questions.append({
                "id": qid, "text": text, "answer": "\n\n".join(text_of[r] for r in rel),
                "relevant": [chunk_of[r] for r in rel], "topic": topic_of[rel[0]],
                "qtype": q.get("qtype"), "source_ids": rel, "_changed": changed,
            })
    ids = [q["id"] for q in questions]
    assert len(ids) == len(set(ids)), "question ids are unique"

    with (out / "questions.jsonl").open("w", encoding="utf-8") as f:
        for q in questions:
            f.write(json.dumps({k: v for k, v in q.items() if k != "_changed"}, ensure_ascii=False) + "\n")
    with (out / "repairs.jsonl").open("w", encoding="utf-8") as f:
        for r in log:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    (out / "PROVENANCE.md").write_text(
        provenance(n_docs, len(chunk_of), questions, len(queries), kinds, dropped, filled, rewrites),
        encoding="utf-8")
    shutil.copy(src / "LICENSE-MedQuAD-CC-BY-4.0.txt", out / "LICENSE-MedQuAD-CC-BY-4.0.txt")
    print(f"{n_docs} documents, {len(chunk_of)} sections, {len(questions)} questions "
          f"({len(dropped)} dropped) -> {out}")
    for k in KINDS:
        if kinds[k]:
            print(f"  {kinds[k]:4d} {k}")


if __name__ == "__main__":
    main()
