#!/usr/bin/python3
"""Gives a trained Llama the outlier channels real LLMs have, without changing what it computes,
so quantizers can be tested and compared on the failure they exist to fix.

Trained LLMs carry a few activation channels tens of times larger than the rest (in the inputs
of q/k/v, gate/up and down), and their weights carry matching structure; RTN quantization of
such a model loses far more than of a small model without them (the bundled demo model has
none). Every transformation here is function-preserving in exact arithmetic:

  residual channels  RMSNorm weight[c] *= s and the columns c of the linears reading that norm
                     (q, k, v after input_layernorm; gate, up after post_attention_layernorm;
                     lm_head after the final norm) /= s: the norm outputs get outlier channels,
                     the weights tiny columns.
  MLP channels       up_proj row i *= s and down_proj column i /= s (swiglu is linear in up):
                     outliers in down_proj's input.
  value channels     v_proj row j *= s and o_proj's columns reading it /= s (for each query
                     head of the KV group): outliers in o_proj's input.
  padding            the MLP width padded with zero channels to a multiple of --pad (silu(0)·0
                     = 0), so k-quants' 256-wide blocks fit every linear (the demo model's 688
                     does not).

The model is checked after the change: logits on a fixed token sequence agree with the
original's within --check-tol (relative to the logits' spread), computed in float64.

Example:
  /usr/bin/python3 tools/make_outlier_model.py models/demo /tmp/demo-outliers
"""

import argparse
import dataclasses
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_reference as ref  # noqa: E402


def pick(generator: torch.Generator, n: int, k: int) -> torch.Tensor:
  return torch.randperm(n, generator=generator)[:k]


def spread(generator: torch.Generator, k: int, low: float, high: float) -> torch.Tensor:
  """k scales log-uniform in [low, high]: outliers of several sizes, as trained models have."""
  u = torch.rand(k, generator=generator, dtype=torch.float64)
  return torch.exp(torch.log(torch.tensor(low)) + u * (torch.log(torch.tensor(high)) -
                                                       torch.log(torch.tensor(low))))


def add_outliers(sd: dict, cfg: ref.LlamaConfig, args) -> dict:
  g = torch.Generator().manual_seed(args.seed)
  sd = {k: v.to(torch.float64).clone() for k, v in sd.items()}
  hidden, heads, kv_heads, d = (cfg.hidden_size, cfg.num_attention_heads,
                                cfg.num_key_value_heads, cfg.head_dim)
  # The same residual channels in every layer, as in real models (massive activations live in
  # fixed dimensions of the residual stream).
  channels = pick(g, hidden, args.residual_channels)
  scales = spread(g, len(channels), args.residual_scale / 4, args.residual_scale)
  for layer in range(cfg.num_hidden_layers):
    p = f"model.layers.{layer}."
    for norm, readers in (("input_layernorm", ("self_attn.q_proj", "self_attn.k_proj",
                                               "self_attn.v_proj")),
                          ("post_attention_layernorm", ("mlp.gate_proj", "mlp.up_proj"))):
      sd[p + norm + ".weight"][channels] *= scales
      for r in readers:
        sd[p + r + ".weight"][:, channels] /= scales
    mlp = pick(g, cfg.intermediate_size, args.mlp_channels)
    mlp_scales = spread(g, len(mlp), args.mlp_scale / 4, args.mlp_scale)
    sd[p + "mlp.up_proj.weight"][mlp] *= mlp_scales[:, None]
    sd[p + "mlp.down_proj.weight"][:, mlp] /= mlp_scales
    v_rows = pick(g, kv_heads * d, args.value_channels)
    v_scales = spread(g, len(v_rows), args.value_scale / 4, args.value_scale)
    sd[p + "self_attn.v_proj.weight"][v_rows] *= v_scales[:, None]
    group = heads // kv_heads
    for row, s in zip(v_rows.tolist(), v_scales.tolist()):
      kv_head, j = divmod(row, d)
      for q_head in range(kv_head * group, (kv_head + 1) * group):
        sd[p + "self_attn.o_proj.weight"][:, q_head * d + j] /= s
  sd["model.norm.weight"][channels] *= scales
  head = "model.embed_tokens.weight" if cfg.tie_word_embeddings else "lm_head.weight"
  if cfg.tie_word_embeddings:
    raise ValueError("tied embeddings: the head's columns are the embedding's; not supported")
  sd[head][:, channels] /= scales
  return sd


def pad_mlp(sd: dict, cfg: ref.LlamaConfig, multiple: int):
  width = -(-cfg.intermediate_size // multiple) * multiple
  extra = width - cfg.intermediate_size
  if extra:
    for layer in range(cfg.num_hidden_layers):
      p = f"model.layers.{layer}.mlp."
      for name in ("gate_proj", "up_proj"):
        w = sd[p + name + ".weight"]
        sd[p + name + ".weight"] = torch.cat([w, w.new_zeros(extra, w.shape[1])])
      w = sd[p + "down_proj.weight"]
      sd[p + "down_proj.weight"] = torch.cat([w, w.new_zeros(w.shape[0], extra)], dim=1)
  return sd, dataclasses.replace(cfg, intermediate_size=width)


def logits(cfg: ref.LlamaConfig, sd: dict, ids: torch.Tensor) -> torch.Tensor:
  model = ref.LlamaForCausalLM(cfg).to(torch.float64)
  model.load_hf_state_dict(sd)
  with torch.no_grad():
    return model(ids)[0]


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("source", help="Hugging Face Llama folder (e.g. models/demo)")
  ap.add_argument("out", help="folder to write (config.json, model.safetensors, tokenizer)")
  ap.add_argument("--residual-channels", type=int, default=4)
  ap.add_argument("--residual-scale", type=float, default=60.0,
                  help="largest residual-channel factor (others log-uniform down to 1/4 of it)")
  ap.add_argument("--mlp-channels", type=int, default=6)
  ap.add_argument("--mlp-scale", type=float, default=40.0)
  ap.add_argument("--value-channels", type=int, default=3)
  ap.add_argument("--value-scale", type=float, default=20.0)
  ap.add_argument("--pad", type=int, default=256, help="pad the MLP width to a multiple of this")
  ap.add_argument("--dtype", choices=("float32", "float16"), default="float32")
  ap.add_argument("--seed", type=int, default=1)
  ap.add_argument("--check-tol", type=float, default=1e-6)
  args = ap.parse_args()

  torch.set_num_threads(1)
  model = ref.load_hf_folder(args.source, torch.float64)
  cfg, sd = model.cfg, model.hf_state_dict()
  ids = torch.tensor([[cfg.bos_token_id] + [(7 * i + 3) % cfg.vocab_size for i in range(47)]])
  before = logits(cfg, sd, ids)
  sd, cfg = pad_mlp(sd, cfg, args.pad)
  sd = add_outliers(sd, cfg, args)
  after = logits(cfg, sd, ids)
  err = float((after - before).abs().max() / before.std())
  if err > args.check_tol:
    sys.exit(f"make_outlier_model: the transformed model computes something else "
             f"(max |Δlogit| / std = {err:.3g} > {args.check_tol})")

  dtype = {"float32": torch.float32, "float16": torch.float16}[args.dtype]
  out_model = ref.LlamaForCausalLM(cfg).to(dtype)
  out_model.load_hf_state_dict(sd)
  ref.write_hf_folder(args.out, out_model, dtype)
  for name in os.listdir(args.source):
    if name.startswith("tokenizer") or name in ("generation_config.json", "heldout.txt",
                                                 "LICENSE"):
      shutil.copy(os.path.join(args.source, name), os.path.join(args.out, name))
  norm_in = sd["model.layers.0.input_layernorm.weight"].abs()
  print(f"{args.out}: intermediate {cfg.intermediate_size}, residual outliers up to "
        f"{float(norm_in.max() / norm_in.median()):.0f}x the median norm weight; "
        f"function preserved to {err:.2g} (max |Δlogit| / std, float64)")


if __name__ == "__main__":
  main()
