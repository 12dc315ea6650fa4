#!/usr/bin/env python3
"""Write a query file of at least N lines by repeating real query files (for the memory
and time curve of `raglab eval retrieval` over many queries; questions repeat, ids get a
`~rK` suffix so every line is its own query).

Usage: repeat_queries.py OUT N QUERIES.jsonl [QUERIES.jsonl ...]
"""
import json
import sys


def main() -> None:
    out, n, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    rows = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    if not rows:
        sys.exit("no queries read")
    with open(out, "w", encoding="utf-8") as fh:
        written, rep = 0, 0
        while written < n:
            for r in rows:
                if written >= n:
                    break
                q = {"id": f"{r['id']}~r{rep}", "text": r["text"], "relevant": r["relevant"]}
                fh.write(json.dumps(q) + "\n")
                written += 1
            rep += 1
    print(f"{written} queries ({len(rows)} distinct) -> {out}")


if __name__ == "__main__":
    main()
