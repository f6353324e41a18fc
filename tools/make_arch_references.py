#!/usr/bin/python3
"""Writes small random models of the architectures beyond the Llama family (Qwen3, Gemma 2,
Gemma 3, Phi-3 with LongRoPE) and a Mistral whose sliding window is shorter than the test
sequences, as Hugging Face folders with PyTorch goldens (golden.json as
testdata/reference/README.md describes it):

  OUT/<name>/config.json, model.safetensors, tokenizer.model, golden.json
  OUT/phi4-longrope/golden-short.json   (the same model run with a context of 32: short factors)

(Not "phi3-...": llama.cpp sets token attributes by general.name, the folder's name, and for a
name holding "phi3" looks up "<|endoftext|>", which this SentencePiece vocabulary lacks.)

The references are tools/llama_reference.py (Qwen3, Mistral), tools/gemma_reference.py and
tools/phi3_reference.py; weights come from make_reference_models.py's seeded generator, so a
second run gives byte-identical files. tests/arch_reference_test.cpp runs this at test time
(about 10 s) instead of committing the weights:

  /usr/bin/python3 tools/make_arch_references.py --out DIR
"""

import argparse
import dataclasses
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemma_reference as gref  # noqa: E402
import llama_reference as lref  # noqa: E402
import make_reference_models as mrm  # noqa: E402
import phi3_reference as pref  # noqa: E402

TOKENIZER = os.path.join(mrm.ROOT, "testdata", "reference", "llama-gqa", "tokenizer.model")
PHI3_SHORT_CONTEXT = 32


def specs(vocab: int):
  """(name, model, storage dtype, seed, norm center, model builder, purpose). Gemma's norms
  multiply by 1 + w: stored weights 1 ± 0.2 make each block's output (2 ± 0.2) · unit; with
  the tied embedding scaled down 4x more (gemma_weights), the √hidden-scaled input does not
  dominate the residual stream and greedy decoding does not just repeat the input token."""
  qwen3 = lref.LlamaConfig(
      vocab_size=vocab, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
      num_attention_heads=4, num_key_value_heads=2, head_dim=32,
      architecture="Qwen3ForCausalLM", rms_norm_eps=1e-6, rope_theta=1e6,
      max_position_embeddings=128)
  gemma2 = gref.GemmaConfig(
      vocab_size=vocab, hidden_size=64, intermediate_size=160, num_hidden_layers=3,
      num_attention_heads=4, num_key_value_heads=2, head_dim=16,
      architecture="Gemma2ForCausalLM", max_position_embeddings=128,
      query_pre_attn_scalar=16, attn_logit_softcapping=5.0, final_logit_softcapping=30.0,
      sliding_window=6, sliding_window_pattern=2)
  # As Gemma 2 27B's (144 with head_dim 128): a query_pre_attn_scalar other than head_dim, which
  # llama.cpp does not read (it derives the scale from the layer count).
  gemma2_scalar = dataclasses.replace(gemma2, num_hidden_layers=2, query_pre_attn_scalar=24)
  gemma3 = gref.GemmaConfig(
      vocab_size=vocab, hidden_size=64, intermediate_size=160, num_hidden_layers=6,
      num_attention_heads=4, num_key_value_heads=1, head_dim=16,
      architecture="Gemma3ForCausalLM", rope_theta=1e6, rope_local_base_freq=10000.0,
      rope_scaling={"rope_type": "linear", "factor": 4.0}, max_position_embeddings=128,
      query_pre_attn_scalar=16, sliding_window=5, sliding_window_pattern=6)
  phi3 = pref.Phi3Config(
      vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
      num_attention_heads=4, num_key_value_heads=2, partial_rotary_factor=0.75,
      rope_scaling={"type": "longrope",
                    "short_factor": [1.0, 1.05, 1.3, 2.0, 3.5, 6.0],
                    "long_factor": [1.0, 1.6, 4.0, 11.0, 27.0, 48.0]},
      max_position_embeddings=128, original_max_position_embeddings=PHI3_SHORT_CONTEXT,
      tie_word_embeddings=True)
  mistral = lref.LlamaConfig(
      vocab_size=vocab, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
      num_attention_heads=4, num_key_value_heads=2, head_dim=16,
      architecture="MistralForCausalLM", max_position_embeddings=128, sliding_window=5)
  return [
      ("qwen3", lref.LlamaForCausalLM(qwen3), torch.bfloat16, 201, 1.0, None,
       "Qwen3: RMSNorm over each q and k head before RoPE, head_dim 32 with hidden 64 "
       "(q is 128 wide), GQA 2:1, rope_theta 1e6; BF16 weights"),
      ("gemma2", gref.GemmaForCausalLM(gemma2), torch.bfloat16, 202, 1.0, gref.model_for,
       "Gemma 2: (1 + w) norms before and after attention and MLP, embeddings x sqrt(64), "
       "GeGLU (tanh), attention soft-cap 5 and final soft-cap 30, window 6 on layers 0 and 2; "
       "BF16 weights"),
      ("gemma2-scalar", gref.GemmaForCausalLM(gemma2_scalar), torch.float32, 206, 1.0,
       gref.model_for, "Gemma 2 with query_pre_attn_scalar 24 (head_dim 16): the attention "
       "scale is 24^-1/2; F32 weights"),
      ("gemma3", gref.GemmaForCausalLM(gemma3), torch.bfloat16, 203, 1.0, gref.model_for,
       "Gemma 3 text: q/k norms, layers 0-4 slide over 5 positions with RoPE base 10000, "
       "layer 5 is global with base 1e6 and linear scaling 4, MQA; BF16 weights"),
      ("phi4-longrope", pref.Phi3ForCausalLM(phi3), torch.float16, 204, 1.0, pref.model_for,
       "Phi-3: fused qkv and gate_up, partial rotary (12 of 16 dims), LongRoPE from an "
       "original context of 32 to 128 (golden.json: context 128, long factors; "
       "golden-short.json: context 32, short factors; attention factor 1.09), tied; F16"),
      ("mistral-window", lref.LlamaForCausalLM(mistral), torch.float32, 205, 1.0, None,
       "Mistral with sliding_window 5, shorter than the 13-token prompt: every layer sees only "
       "its last 5 positions; F32"),
  ]


def gemma_weights(model) -> None:
  """Gemma fixtures: embedding rows 4x smaller, final norm 1 + w around 3 (see specs)."""
  if isinstance(model, gref.GemmaForCausalLM):
    with torch.no_grad():
      model.model.embed_tokens.weight.mul_(0.25)
      model.model.norm.weight.add_(1.0)


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True)
  args = parser.parse_args()
  torch.set_num_threads(1)
  import sentencepiece as spm
  sp = spm.SentencePieceProcessor(model_file=TOKENIZER)
  generator = "tools/make_arch_references.py"
  for name, model, dtype, seed, norm_center, model_for, purpose in specs(sp.get_piece_size()):
    folder = os.path.join(args.out, name)
    model = model.double()
    mrm.random_weights(model, seed, norm_center)
    gemma_weights(model)
    lref.write_hf_folder(folder, model, dtype)
    shutil.copy(TOKENIZER, os.path.join(folder, "tokenizer.model"))
    g = mrm.golden(folder, name, purpose, dtype, sp, model_for, with_sensitivity=False,
                   generator=generator)
    mrm.dump_json(g, os.path.join(folder, "golden.json"))
    print(f"{name}: greedy {g['greedy']['new_tokens']}, min margin "
          f"{min(g['greedy']['margins']):.3f}")
    if name == "phi4-longrope":
      short = mrm.golden(folder, name, purpose + " (context 32)", dtype, sp, model_for,
                         with_sensitivity=False, generator=generator,
                         context=PHI3_SHORT_CONTEXT)
      mrm.dump_json(short, os.path.join(folder, "golden-short.json"))
  return 0


if __name__ == "__main__":
  sys.exit(main())
