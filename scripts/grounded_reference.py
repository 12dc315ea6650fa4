"""Reference scores for raglab's grounded answer metrics (src/core/grounded.rs),
computed by the ragas package's own scoring code, never from raglab's output.

For fixed verdicts (what a judge model would return), each case is scored by:
- faithfulness: `Faithfulness()._compute_score(NLIStatementOutput)`;
- context precision: `LLMContextPrecisionWithReference()._calculate_average_precision`;
- context recall: `LLMContextRecall()._compute_score`;
- answer correctness: `AnswerCorrectness()._compute_statement_presence` (ragas'
  `fbeta_score` over TP/FP/FN), then the lines of `AnswerCorrectness._ascore` that
  follow the LLM calls, reproduced here because `_ascore` calls a model first: an F1
  of 1.0 when neither text has a statement, then `np.average([f1, similarity],
  weights)`; the similarity is `AnswerSimilarity._ascore`'s arithmetic on fixed
  vectors (each normalised, then their dot product).
NaN (ragas' "undefined") is written as null.

Regenerate (from the repository root; Python 3.11 and ragas 0.4.3 were used):
    python3 -m venv /tmp/ragasenv
    /tmp/ragasenv/bin/pip install ragas==0.4.3 "langchain-community<0.4"  # 0.3.31 was used: ragas 0.4.3 imports a module later versions removed
    /tmp/ragasenv/bin/python scripts/grounded_reference.py
"""

import json
import math
from importlib.metadata import version
from pathlib import Path

import numpy as np
from ragas.metrics._answer_correctness import AnswerCorrectness, ClassificationWithReason, StatementsWithReason
from ragas.metrics._context_precision import LLMContextPrecisionWithReference, Verification
from ragas.metrics._context_recall import ContextRecallClassification, LLMContextRecall
from ragas.metrics._faithfulness import Faithfulness, NLIStatementOutput, StatementFaithfulnessAnswer

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "grounded" / "reference.json"


def num(x):
    x = float(x)
    return None if math.isnan(x) else x


def faithfulness(verdicts):
    out = NLIStatementOutput(
        statements=[StatementFaithfulnessAnswer(statement=f"s{i}", reason="", verdict=v) for i, v in enumerate(verdicts)]
    )
    return num(Faithfulness()._compute_score(out))


def context_precision(useful):
    ver = [Verification(reason="", verdict=v) for v in useful]
    return num(LLMContextPrecisionWithReference()._calculate_average_precision(ver))


def context_recall(attributed):
    rows = [ContextRecallClassification(statement=f"r{i}", reason="", attributed=v) for i, v in enumerate(attributed)]
    return num(LLMContextRecall()._compute_score(rows))


def similarity(a, b):
    e1 = np.array(a, dtype=float)
    e2 = np.array(b, dtype=float)
    e1 = e1 / np.linalg.norm(e1, keepdims=True)
    e2 = e2 / np.linalg.norm(e2, keepdims=True)
    return float((e1 @ e2.T).flatten().item())


def answer_correctness(n_answer, n_reference, tp, fp, fn, vec_a, vec_b, weights):
    metric = AnswerCorrectness(weights=weights)
    st = lambda n, p: [StatementsWithReason(statement=f"{p}{i}", reason="") for i in range(n)]
    if n_answer == 0 and n_reference == 0:
        # `_ascore`: when neither text has a statement it classifies nothing and sets
        # the F1 to 1.0.
        f1 = 1.0
    else:
        f1 = metric._compute_statement_presence(ClassificationWithReason(TP=st(tp, "t"), FP=st(fp, "f"), FN=st(fn, "n")))
    sim = 0.0 if weights[1] == 0 else similarity(vec_a, vec_b)
    return {"f1": num(f1), "similarity": num(sim), "score": num(np.average([f1, sim], weights=weights))}


VERDICTS = [[], [1], [0], [1, 0, 1], [0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 1, 1], [1, 0, 0, 0, 0, 0, 1]]
# (answer statements, reference statements, TP, FP, FN, answer vector, reference
# vector, weights). TP + FP is the answer's statements and TP + FN at most the
# reference's, as a classification of them gives.
CORRECTNESS = [
    (0, 0, 0, 0, 0, [0.1, 0.2, 0.3], [0.1, 0.2, 0.3], [0.75, 0.25]),
    (4, 5, 3, 1, 2, [1.0, 0.0, 0.5], [0.5, 0.5, 0.5], [0.75, 0.25]),
    (2, 3, 0, 2, 3, [1.0, 2.0, -1.0], [-1.0, 0.5, 2.0], [0.75, 0.25]),
    (2, 2, 2, 0, 0, [0.3, -0.2, 0.9], [0.2, -0.1, 0.7], [0.75, 0.25]),
    (4, 1, 1, 3, 0, [0.3, -0.2, 0.9], [0.2, -0.1, 0.7], [0.5, 0.5]),
    (5, 5, 4, 1, 1, [0.3, 0.4, 0.1], [0.9, 0.1, 0.2], [1.0, 0.0]),
    (0, 4, 0, 0, 4, [0.3, 0.4, 0.1], [0.9, 0.1, 0.2], [0.6, 0.4]),
    # Statements on both sides, none classified (a degenerate reply): F-beta 0, not 1.
    (2, 3, 0, 0, 0, [0.3, 0.4, 0.1], [0.9, 0.1, 0.2], [0.75, 0.25]),
]


def main():
    out = {
        "ragas": version("ragas"),
        "numpy": version("numpy"),
        "verdict_cases": [
            {
                "verdicts": v,
                "faithfulness": faithfulness(v),
                "context_precision": context_precision(v),
                "context_recall": context_recall(v),
            }
            for v in VERDICTS
        ],
        "correctness_cases": [
            {"answer_statements": na, "reference_statements": nr, "tp": tp, "fp": fp, "fn": fn, "answer_vector": a, "reference_vector": b, "weights": w, **answer_correctness(na, nr, tp, fp, fn, a, b, w)}
            for na, nr, tp, fp, fn, a, b, w in CORRECTNESS
        ],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
