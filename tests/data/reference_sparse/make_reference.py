"""TF-IDF cosine reference for tests/reference_sparse.rs, computed with scikit-learn.

For each state of the chunks in corpus.json, a TfidfVectorizer is fitted on that state's
chunks only (the documents that survive the incremental re-index; deleted and replaced
versions are never seen), each query is transformed by the same vectorizer, and the
cosine is linear_kernel of the two L2-normalised matrices.

Conventions (scikit-learn defaults except the token pattern):
- indexed text of a chunk: its header path joined with " > " (its title when the path is
  empty), a blank line, then its text (raglab's Chunk::indexed_text);
- tokens: maximal runs of letters and digits, lowercased; this is tantivy's default
  analyser (SimpleTokenizer splits on every char that is not alphanumeric, LowerCaser;
  RemoveLongFilter drops tokens of 40 bytes or more, and there are none here), which keeps
  one-character tokens that scikit-learn's default pattern \\b\\w\\w+\\b would drop;
- raw term frequency (sublinear_tf=False), smooth_idf=True: idf = ln((1 + n) / (1 + df)) + 1,
  norm="l2"; query terms outside the fitted vocabulary are ignored.

Output: tfidf_reference.json, for each state and query the chunks with a cosine > 0, best
first (ties: chunk id descending).

Regenerate (from the repository root):
    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install scikit-learn==1.9.1
    /tmp/refvenv/bin/python tests/data/reference_sparse/make_reference.py
"""

import json
import re
from pathlib import Path

import numpy as np
import scipy
import sklearn
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import linear_kernel

HERE = Path(__file__).resolve().parent
TOKEN_PATTERN = r"(?u)[^\W_]+"


def indexed_text(chunk):
    path = " > ".join(chunk["header_path"]) if chunk["header_path"] else chunk["title"]
    return f"{path}\n\n{chunk['text']}"


def main():
    corpus = json.loads((HERE / "corpus.json").read_text())
    queries = corpus["queries"]
    states = []
    for chunks in corpus["versions"]:
        texts = [indexed_text(c) for c in chunks]
        ids = [c["id"] for c in chunks]
        for t in texts + queries:
            assert t.isascii(), t
            assert all(len(tok) < 40 for tok in re.findall(TOKEN_PATTERN, t.lower()))
        vec = TfidfVectorizer(
            token_pattern=TOKEN_PATTERN,
            lowercase=True,
            norm="l2",
            use_idf=True,
            smooth_idf=True,
            sublinear_tf=False,
            dtype=np.float64,
        )
        docs = vec.fit_transform(texts)
        cos = linear_kernel(vec.transform(queries), docs)
        out = []
        for qi, q in enumerate(queries):
            hits = [(ids[d], float(cos[qi, d])) for d in range(len(ids)) if cos[qi, d] > 0.0]
            hits.sort(key=lambda h: h[0], reverse=True)
            hits.sort(key=lambda h: h[1], reverse=True)
            out.append({"query": q, "results": [{"id": i, "score": s} for i, s in hits]})
        states.append({"docs": len(ids), "vocabulary": len(vec.vocabulary_), "queries": out})
    ref = {
        "generated_by": "tests/data/reference_sparse/make_reference.py",
        "scikit_learn": sklearn.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "states": states,
    }
    (HERE / "tfidf_reference.json").write_text(json.dumps(ref, indent=1) + "\n")


if __name__ == "__main__":
    main()
