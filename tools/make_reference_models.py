#!/usr/bin/python3
"""Writes small random Llama-family models as Hugging Face folders with PyTorch goldens, for
testing Kite's model import and forward pass end to end:

  testdata/reference/<name>/config.json, model.safetensors, tokenizer.model, golden.json

Everything is deterministic: weights come from a seeded float64 generator, are rounded to the
folder's storage dtype, and the goldens are computed in float64 from the rounded weights read
back from the folder. Run:

  /usr/bin/python3 tools/make_reference_models.py [--out testdata/reference]

The tokenizer is testdata/spm-oracle/tokenizer.model when that file exists, else a 1000-piece
SentencePiece BPE trained here on Debian's fortunes (apt-get install fortunes).
"""

import argparse
import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_reference as ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPM_ORACLE = os.path.join(ROOT, "testdata", "spm-oracle", "tokenizer.model")
PROMPT = "Kite flies: 42 figs!"
NEW_TOKENS = 16
LAST_POSITIONS = 4  # full logits are stored for this many final positions


def small(vocab: int, **over) -> ref.LlamaConfig:
  base = dict(vocab_size=vocab, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=4, head_dim=16, rms_norm_eps=1e-5,
              rope_theta=10000.0, max_position_embeddings=128)
  base.update(over)
  return ref.LlamaConfig(**base)


def model_specs(vocab: int):
  """(name, config, storage dtype, seed, what the model is there to test)."""
  return [
      ("llama-gqa", small(vocab, num_key_value_heads=2), torch.float32, 101,
       "GQA (4 query heads share 2 KV heads), untied lm_head, F32 weights"),
      ("qwen2-bias", small(vocab, architecture="Qwen2ForCausalLM", num_key_value_heads=2,
                           tie_word_embeddings=True, rms_norm_eps=1e-6, rope_theta=1e6),
       torch.float16, 102,
       "Qwen2: bias on q, k, v (not o), tied embeddings (no lm_head.weight in the file), "
       "use_sliding_window false, rope_theta 1e6, eps 1e-6; F16 weights"),
      ("llama3-rope", small(vocab, rope_scaling={
          "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 32}),
       torch.float16, 103,
       "Llama 3.1 rope scaling with original context 32: pair 0 kept, pair 1 blended, pairs "
       "2..7 slowed 8x, so it changes logits from position 1 on; F16 weights"),
      ("mistral", small(vocab, architecture="MistralForCausalLM", num_hidden_layers=3,
                        num_key_value_heads=1, sliding_window=4096),
       torch.bfloat16, 104,
       "MistralForCausalLM, 3 layers, multi-query attention (1 KV head), sliding_window "
       "4096 (longer than any test sequence), BF16 weights"),
      ("llama-bias-linear", small(vocab, attention_bias=True, mlp_bias=True,
                                  tie_word_embeddings=True, rope_scaling={
                                      "type": "linear", "factor": 4.0}),
       torch.float16, 105,
       "Llama attention_bias (q, k, v and o) and mlp_bias, linear rope scaling (positions / "
       "4, written with the older \"type\" key), tied embeddings, F16 weights"),
  ]


def random_weights(model, seed: int, norm_center: float = 1.0) -> None:
  """Scales chosen so every part matters: logits spread ~2, attention fairly sharp (so RoPE
  changes the output), biases and norm weights far from 0 and 1. Norm weights are
  norm_center ± 0.2 (Gemma's norms multiply by 1 + w: center 0)."""
  g = torch.Generator().manual_seed(seed)
  cfg = model.cfg

  def randn(*shape):
    return torch.randn(*shape, generator=g, dtype=torch.float64)

  with torch.no_grad():
    for name, p in sorted(model.named_parameters()):
      if name.endswith("norm.weight"):
        value = norm_center + 0.2 * randn(*p.shape)
      elif name.endswith("q_proj.bias") or name.endswith("k_proj.bias"):
        value = 0.5 * randn(*p.shape)
      elif name.endswith(".bias"):
        # v, o and MLP biases add the same vector at every position; kept small so the
        # greedy continuation does not collapse to one repeated token.
        value = 0.1 * randn(*p.shape)
      elif name == "model.embed_tokens.weight":
        value = randn(*p.shape) * (0.25 if cfg.tie_word_embeddings else 1.0)
      elif name == "lm_head.weight":
        value = randn(*p.shape) * 2.0 / p.shape[1] ** 0.5
      else:
        gain = 1.5 if (".q_proj." in name or ".k_proj." in name or ".qkv_proj." in name) else 1.0
        value = randn(*p.shape) * gain / p.shape[1] ** 0.5
      p.copy_(value)


def tokenizer_path(work: str) -> str:
  if os.path.exists(SPM_ORACLE):
    return SPM_ORACLE
  import sentencepiece as spm
  import train_demo_model
  fortunes, _ = train_demo_model.read_fortunes()
  lines = sorted({line for f in fortunes for line in f.split("\n") if line.strip()})
  model = io.BytesIO()  # not a model_prefix: that path would be recorded in the file
  spm.SentencePieceTrainer.train(
      sentence_iterator=iter(lines), model_writer=model, model_type="bpe", vocab_size=1000,
      byte_fallback=True, split_digits=True, character_coverage=1.0,
      normalization_rule_name="identity", add_dummy_prefix=True, remove_extra_whitespaces=False,
      unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=1, shuffle_input_sentence=False,
      input_sentence_size=0, minloglevel=2)
  path = os.path.join(work, "tokenizer.model")
  with open(path, "wb") as f:
    f.write(model.getvalue())
  return path


def checksum(t: torch.Tensor) -> dict:
  t = t.to(torch.float64)
  return {"sum": float(t.sum()), "sum_sq": float((t * t).sum()), "max_abs": float(t.abs().max())}


def num(x: float) -> float:
  return float(f"{x:.9g}")


def row_summary(row: torch.Tensor) -> dict:
  """A logits row [vocab] in a few numbers: the top 5, logsumexp, sum and sum of squares."""
  top = torch.topk(row, 5)
  return {"top5_ids": top.indices.tolist(), "top5_logits": [num(v) for v in top.values.tolist()],
          "logsumexp": num(float(torch.logsumexp(row, 0))), "sum": num(float(row.sum())),
          "sum_sq": num(float((row * row).sum()))}


def max_abs_diff(model, variant_cfg, ids, sd=None, act_round=None) -> float:
  """Largest |logit| change when the model is run with another config (or rounding)."""
  other = ref.LlamaForCausalLM(variant_cfg).double().eval()
  other.load_hf_state_dict(sd if sd is not None else model.hf_state_dict())
  with torch.no_grad():
    return num((model(ids) - other(ids, act_round=act_round)).abs().max().item())


def sensitivity(model: ref.LlamaForCausalLM, ids: torch.Tensor) -> dict:
  """How far the logits move under common implementation mistakes, so a reader can see that
  the tolerances below would catch each of them."""
  cfg = model.cfg
  out = {"rope_interleaved_instead_of_rotate_half":
         max_abs_diff(model, dataclasses.replace(cfg, rope_interleaved=True), ids)}
  if cfg.rope_scaling is not None:
    out["rope_scaling_ignored"] = max_abs_diff(
        model, dataclasses.replace(cfg, rope_scaling=None), ids)
  if cfg.qkv_bias:
    sd = model.hf_state_dict()
    for k in sd:
      if k.endswith("_proj.bias"):
        sd[k] = torch.zeros_like(sd[k])
    out["biases_ignored"] = max_abs_diff(model, cfg, ids, sd)
  h, kv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
  if 1 < kv < h:
    # Query head j read with kv head j % KV instead of j // (H / KV): the same as the correct
    # grouping after reordering query heads (q rows and o columns) by `perm`.
    perm = [j for k in range(kv) for j in range(k, h, kv)]
    sd = model.hf_state_dict()
    for i in range(cfg.num_hidden_layers):
      prefix = f"model.layers.{i}.self_attn."
      for key in (prefix + "q_proj.weight", prefix + "q_proj.bias"):
        if key in sd:
          sd[key] = sd[key].reshape(h, d, -1)[perm].reshape(sd[key].shape)
      o = sd[prefix + "o_proj.weight"]  # [hidden, H * d]
      sd[prefix + "o_proj.weight"] = o.reshape(o.shape[0], h, d)[:, perm].reshape(o.shape)
    out["gqa_heads_grouped_modulo"] = max_abs_diff(model, cfg, ids, sd)
  out["activations_rounded_to_f16"] = max_abs_diff(
      model, cfg, ids, act_round=lambda y: y.to(torch.float16).to(y.dtype))
  out["activations_rounded_to_bf16"] = max_abs_diff(
      model, cfg, ids, act_round=lambda y: y.to(torch.bfloat16).to(y.dtype))
  return out


def golden(folder: str, name: str, purpose: str, dtype: torch.dtype, sp, model_for=None,
           with_sensitivity: bool = True, generator: str = "tools/make_reference_models.py "
           "(tools/llama_reference.py)", context: int = 0) -> dict:
  """The golden of the model in `folder` (built by `model_for`, default Llama); `context`: the
  positions the run reserves, for models whose RoPE depends on it (Phi-3's LongRoPE)."""

  def load(compute_dtype):
    model = ref.load_hf_folder(folder, compute_dtype, model_for)
    if context:
      model.context = context
    return model

  model = load(torch.float64)
  cfg = model.cfg
  ids = [cfg.bos_token_id] + sp.encode(PROMPT)
  x = torch.tensor([ids])
  hidden = []
  with torch.no_grad():
    logits = model(x, hidden_states=hidden)[0]  # [T, vocab]
  t = len(ids)
  per_position = []
  for p in range(t):
    top = torch.topk(logits[p], 2)
    per_position.append({"argmax": int(top.indices[0]),
                         "margin": num(float(top.values[0] - top.values[1])),
                         **row_summary(logits[p])})
  names = ["embed"] + [f"layer.{i}" for i in range(cfg.num_hidden_layers)] + ["final_norm"]
  hidden_sums = [dict(name=n, **{k: num(v) for k, v in checksum(h[0]).items()})
                 for n, h in zip(names, hidden)]
  new, margins = ref.greedy_generate(model, ids, NEW_TOKENS)
  # By causality one pass over prompt + continuation gives every decode step's logits.
  with torch.no_grad():
    steps = model(torch.tensor([ids + new[:-1]]))[0, t - 1:]  # [NEW_TOKENS, vocab]
  step_summaries = [row_summary(row) for row in steps]
  f32 = load(torch.float32)
  with torch.no_grad():
    f32_diff = (f32(x)[0].double() - logits).abs().max().item()
  return {
      "model": name,
      "purpose": purpose,
      "generator": generator,
      "weights_dtype": {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}[dtype],
      "compute_dtype": "float64 from the stored weights",
      "prompt": PROMPT,
      "input_ids": ids,
      "input_note": "BOS + SentencePiece ids of prompt; positions 0..len-1",
      "logits": {"positions": list(range(t - LAST_POSITIONS, t)),
                 "values": [[num(v) for v in logits[p].tolist()]
                            for p in range(t - LAST_POSITIONS, t)]},
      "per_position": per_position,
      "hidden_checksums": {
          "note": "over all positions of the prompt: embed = embedding output, layer.i = "
                  "residual stream after layer i, final_norm = input of lm_head",
          "values": hidden_sums},
      "greedy": {"new_tokens": new, "margins": [num(m) for m in margins],
                 "text": sp.decode(new), "steps": step_summaries,
                 "note": "argmax continuation of input_ids, recomputed from scratch each step; "
                         "compare tokens up to the first step whose margin is below the "
                         "tolerance, since a near-tie may flip and change everything after it; "
                         "steps[i] summarizes the logits that chose new_tokens[i] (position "
                         "len(input_ids) - 1 + i), for checking a KV-cache decode loop by value"},
      "float32_compute_max_abs_logit_diff": num(f32_diff),
      **({"sensitivity_max_abs_logit_diff": sensitivity(model, x)} if with_sensitivity else {}),
  }


def dump_json(value, path: str) -> None:
  """Indented JSON with each list of numbers on one line, so a golden stays readable."""
  text = json.dumps(value, indent=1)
  text = re.sub(r"\[\s+([-+0-9.eE,\s]+?)\s+\]",
                lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
  with open(path, "w") as f:
    f.write(text + "\n")


def file_sha256(path: str) -> str:
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default=os.path.join(ROOT, "testdata", "reference"))
  args = parser.parse_args()
  torch.set_num_threads(1)
  import sentencepiece as spm
  with tempfile.TemporaryDirectory() as work:
    tok = tokenizer_path(work)
    sp = spm.SentencePieceProcessor(model_file=tok)
    vocab = sp.get_piece_size()
    print(f"tokenizer {os.path.relpath(tok, ROOT) if tok == SPM_ORACLE else 'trained here'}: "
          f"{vocab} pieces; prompt -> {len(sp.encode(PROMPT)) + 1} ids")
    index = []
    for name, cfg, dtype, seed, purpose in model_specs(vocab):
      folder = os.path.join(args.out, name)
      model = ref.LlamaForCausalLM(cfg).double()
      random_weights(model, seed)
      ref.write_hf_folder(folder, model, dtype)
      shutil.copy(tok, os.path.join(folder, "tokenizer.model"))
      g = golden(folder, name, purpose, dtype, sp)
      dump_json(g, os.path.join(folder, "golden.json"))
      size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
      print(f"{name}: {size // 1024} KiB, greedy {g['greedy']['new_tokens']}, min margin "
            f"{min(g['greedy']['margins']):.3f}, f32 diff "
            f"{g['float32_compute_max_abs_logit_diff']:.2e}, sensitivity "
            f"{g['sensitivity_max_abs_logit_diff']}")
      index.append({"name": name, "tokenizer_sha256": file_sha256(tok),
                    "model_sha256": file_sha256(os.path.join(folder, "model.safetensors"))})
    dump_json({"tokenizer": "testdata/spm-oracle/tokenizer.model" if tok == SPM_ORACLE
               else "trained by make_reference_models.py on Debian fortunes",
               "models": index}, os.path.join(args.out, "index.json"))
  return 0


if __name__ == "__main__":
  sys.exit(main())
