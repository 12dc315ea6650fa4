#!/usr/bin/env python3
"""Convert the all-MiniLM-L6-v2 safetensors checkpoint into a llama.cpp BERT GGUF.

No torch needed: the PyPI packages `gguf`, `safetensors` and `numpy` are enough.
The metadata and tensor names follow llama.cpp's own BERT conversion:
architecture `bert`, mean pooling, non-causal attention, WordPiece vocabulary written in
llama.cpp's "phantom space" form, token-type count 2, and the position/token-type
embeddings kept in F32. 2-D weight matrices are stored as F16 (default) or Q8_0
(`q8_0`: llama.cpp's 8-bit blocks of 32 with one F16 scale, quantised by the `gguf`
package's numpy code), everything else F32.

Usage: convert_minilm.py MODEL_DIR OUT.gguf [f16|q8_0]
"""
import json
import sys
from pathlib import Path

import gguf
import numpy as np
from safetensors.numpy import load_file


def phantom(token: str) -> str:
    """llama.cpp's WPM tokenizer matches word starts prefixed with U+2581."""
    if token.startswith("[") and token.endswith("]"):
        return token
    if token.startswith("##"):
        return token[2:]
    return "\u2581" + token


def main() -> None:
    model_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    kind = sys.argv[3] if len(sys.argv) > 3 else "f16"
    if kind not in ("f16", "q8_0"):
        sys.exit(f"unknown weight type {kind!r}: f16 or q8_0")
    cfg = json.loads((model_dir / "config.json").read_text())
    pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
    if not pooling.get("pooling_mode_mean_tokens"):
        sys.exit("expected a mean-pooling sentence-transformers model")
    vocab = (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    special = json.loads((model_dir / "special_tokens_map.json").read_text())
    ids = {tok: i for i, tok in enumerate(vocab)}

    arch = gguf.MODEL_ARCH.BERT
    writer = gguf.GGUFWriter(str(out), gguf.MODEL_ARCH_NAMES[arch])
    writer.add_name("all-MiniLM-L6-v2")
    writer.add_context_length(cfg["max_position_embeddings"])
    writer.add_embedding_length(cfg["hidden_size"])
    writer.add_feed_forward_length(cfg["intermediate_size"])
    writer.add_block_count(cfg["num_hidden_layers"])
    writer.add_head_count(cfg["num_attention_heads"])
    writer.add_layer_norm_eps(cfg["layer_norm_eps"])
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_file_type(
        gguf.LlamaFileType.MOSTLY_F16 if kind == "f16" else gguf.LlamaFileType.MOSTLY_Q8_0
    )

    writer.add_tokenizer_model("bert")
    writer.add_token_list([phantom(t) for t in vocab])
    special_ids = {ids[v] for v in special.values()}
    types = []
    for i, tok in enumerate(vocab):
        if i in special_ids:
            types.append(gguf.TokenType.CONTROL)
        elif tok.startswith("[unused"):
            types.append(gguf.TokenType.UNUSED)
        else:
            types.append(gguf.TokenType.NORMAL)
    writer.add_token_types(types)
    writer.add_token_type_count(cfg["type_vocab_size"])
    writer.add_bos_token_id(ids[special["cls_token"]])
    writer.add_eos_token_id(ids[special["sep_token"]])
    writer.add_sep_token_id(ids[special["sep_token"]])
    writer.add_pad_token_id(ids[special["pad_token"]])
    writer.add_unk_token_id(ids[special["unk_token"]])
    writer.add_mask_token_id(ids[special["mask_token"]])
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(True)

    tensors = load_file(str(model_dir / "model.safetensors"))
    names = gguf.get_tensor_name_map(arch, cfg["num_hidden_layers"])
    keep_f32 = ("position_embd", "token_types")
    written = 0
    for hf_name, data in sorted(tensors.items()):
        if hf_name.endswith("position_ids") or hf_name.startswith("pooler."):
            continue
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if name is None:
            sys.exit(f"no GGUF name for tensor {hf_name}")
        data = data.astype(np.float32)
        if data.ndim == 2 and not name.startswith(keep_f32):
            if kind == "q8_0":
                qtype = gguf.GGMLQuantizationType.Q8_0
                writer.add_tensor(
                    name, gguf.quants.quantize(data, qtype), raw_dtype=qtype
                )
                written += 1
                continue
            data = data.astype(np.float16)
        writer.add_tensor(name, data)
        written += 1

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"wrote {out} ({written} tensors, vocabulary {len(vocab)})")


if __name__ == "__main__":
    main()
