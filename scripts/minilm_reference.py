#!/usr/bin/env python3
"""Reference embeddings for all-MiniLM-L6-v2, computed independently of llama.cpp.

A float64 numpy forward pass of the original safetensors weights (BERT encoder, GELU,
post-layer-norm), mean pooling over all tokens, L2 normalisation: what
sentence-transformers computes. Tokenisation uses the HuggingFace `tokenizers` package
with the model's own tokenizer.json. The test `tests/embed_reference.rs` compares
raglab's llama.cpp embeddings of the same sentences against these vectors, so a silently
wrong GGUF conversion cannot pass.

Usage: minilm_reference.py MODEL_DIR OUT.json
"""
import json
import math
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

SENTENCES = [
    "How is measles spread?",
    "Who should get vaccinated against influenza each year?",
    "Wash your hands often with soap and water for at least 20 seconds.",
    "Acanthamoeba keratitis is most common in people who wear contact lenses.",
    "Les symptômes incluent fièvre, toux et éruption cutanée.",
    "结核病是一种由细菌引起的传染病。",
    "Ticks 🐛 can carry Rocky Mountain spotted fever (RMSF)!",
    "Prevention > Travel: boil it, cook it, peel it, or forget it.",
]


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def main() -> None:
    model_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    cfg = json.loads((model_dir / "config.json").read_text())
    w = {k: v.astype(np.float64) for k, v in load_file(str(model_dir / "model.safetensors")).items()}
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()  # tokenizer.json pads to 128; sentence-transformers does not
    tok.enable_truncation(256)  # the model's max_seq_length
    heads, eps = cfg["num_attention_heads"], cfg["layer_norm_eps"]
    records = []
    for text in SENTENCES:
        ids = tok.encode(text).ids
        n = len(ids)
        x = w["embeddings.word_embeddings.weight"][ids]
        x = x + w["embeddings.position_embeddings.weight"][:n]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        d = x.shape[1]
        hd = d // heads
        for i in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            lin = lambda h, name: h @ w[p + name + ".weight"].T + w[p + name + ".bias"]
            q = lin(x, "attention.self.query").reshape(n, heads, hd).transpose(1, 0, 2)
            k = lin(x, "attention.self.key").reshape(n, heads, hd).transpose(1, 0, 2)
            v = lin(x, "attention.self.value").reshape(n, heads, hd).transpose(1, 0, 2)
            s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
            s = np.exp(s - s.max(-1, keepdims=True))
            s = s / s.sum(-1, keepdims=True)
            a = (s @ v).transpose(1, 0, 2).reshape(n, d)
            a = lin(a, "attention.output.dense")
            x = layer_norm(x + a, w[p + "attention.output.LayerNorm.weight"],
                           w[p + "attention.output.LayerNorm.bias"], eps)
            f = lin(gelu(lin(x, "intermediate.dense")), "output.dense")
            x = layer_norm(x + f, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
        pooled = x.mean(0)
        pooled /= np.linalg.norm(pooled)
        records.append({"text": text, "token_ids": ids, "embedding": pooled.tolist()})
    out.write_text(json.dumps({"model": "all-MiniLM-L6-v2", "pooling": "mean",
                               "normalised": True, "sentences": records}, ensure_ascii=False))
    print(f"wrote {out} ({len(records)} sentences)")


if __name__ == "__main__":
    main()
