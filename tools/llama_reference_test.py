#!/usr/bin/python3
"""Checks of tools/llama_reference.py: properties that must hold whatever the weights are,
and small cases worked out by hand. Run: /usr/bin/python3 tools/llama_reference_test.py"""

import dataclasses
import json
import math
import os
import struct
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_reference import (LlamaConfig, LlamaForCausalLM, apply_rope,  # noqa: E402
                             load_hf_folder, permute_for_interleaved_rope, read_safetensors,
                             rms_norm, rope_angles, rope_inv_freq, write_hf_folder,
                             write_safetensors)


def _random_model(cfg: LlamaConfig, seed: int) -> LlamaForCausalLM:
  torch.manual_seed(seed)
  model = LlamaForCausalLM(cfg).double()
  with torch.no_grad():
    for p in model.parameters():
      p.normal_(0, 0.3)
  return model.eval()


def main() -> int:
  failures = []

  def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
    if not ok:
      failures.append(name)

  base = LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                     architecture="Qwen2ForCausalLM")
  ids = torch.tensor([[1, 7, 3, 9, 22, 41, 5, 5, 13]])

  # 1. Interleaved RoPE with permuted q/k weights and biases equals rotate-half RoPE.
  m = _random_model(base, 0)
  inter = LlamaForCausalLM(dataclasses.replace(base, rope_interleaved=True)).double().eval()
  sd = m.hf_state_dict()
  for i in range(base.num_hidden_layers):
    for proj, heads in (("q_proj", base.num_attention_heads), ("k_proj", base.num_key_value_heads)):
      for part in ("weight", "bias"):
        key = f"model.layers.{i}.self_attn.{proj}.{part}"
        sd[key] = permute_for_interleaved_rope(sd[key], heads)
  inter.load_hf_state_dict(sd)
  with torch.no_grad():
    diff = (m(ids) - inter(ids)).abs().max().item()
  check("interleaved rope == rotate-half rope on permuted weights", diff < 1e-10, f"{diff:.2e}")

  # 2. GQA equals MHA whose k/v heads are the GQA heads repeated.
  mha = LlamaForCausalLM(dataclasses.replace(base, num_key_value_heads=4)).double().eval()
  sd = m.hf_state_dict()
  for i in range(base.num_hidden_layers):
    for proj in ("k_proj", "v_proj"):
      for part in ("weight", "bias"):
        key = f"model.layers.{i}.self_attn.{proj}.{part}"
        t = sd[key]
        sd[key] = t.reshape(2, 8, *t.shape[1:]).repeat_interleave(2, dim=0).reshape(32, *t.shape[1:])
  mha.load_hf_state_dict(sd)
  with torch.no_grad():
    diff = (m(ids) - mha(ids)).abs().max().item()
  check("GQA == MHA with repeated kv heads", diff < 1e-10, f"{diff:.2e}")

  # 3. Causality: logits of a prefix do not depend on later tokens.
  with torch.no_grad():
    full = m(ids)
    prefix = m(ids[:, :5])
  diff = (full[:, :5] - prefix).abs().max().item()
  check("causal mask", diff < 1e-12, f"{diff:.2e}")

  # 4. A sliding window as long as the sequence changes nothing; a short one changes late
  # positions only.
  mis = dataclasses.replace(base, architecture="MistralForCausalLM")
  m_mis = _random_model(mis, 1)
  short = LlamaForCausalLM(dataclasses.replace(mis, sliding_window=3)).double().eval()
  longw = LlamaForCausalLM(dataclasses.replace(mis, sliding_window=9)).double().eval()
  short.load_hf_state_dict(m_mis.hf_state_dict())
  longw.load_hf_state_dict(m_mis.hf_state_dict())
  with torch.no_grad():
    a, b, c = m_mis(ids), short(ids), longw(ids)
  check("sliding window >= length is a no-op", (a - c).abs().max().item() < 1e-12)
  check("sliding window 3 keeps positions 0..2, changes later ones",
        (a[:, :3] - b[:, :3]).abs().max().item() < 1e-12
        and (a[:, 3:] - b[:, 3:]).abs().max().item() > 1e-6)

  # 5. llama3 scaling: with factor 1 it is the identity; otherwise long wavelengths are
  # divided by the factor, short ones kept, the middle band between the two.
  cfg3 = dataclasses.replace(base, head_dim=16, rope_scaling={
      "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 32})
  plain = rope_inv_freq(dataclasses.replace(cfg3, rope_scaling=None))
  scaled = rope_inv_freq(cfg3)
  one = rope_inv_freq(dataclasses.replace(cfg3, rope_scaling=dict(cfg3.rope_scaling, factor=1.0)))
  check("llama3 factor 1 is identity", torch.allclose(one, plain, rtol=0, atol=1e-15))
  wl = 2 * math.pi / plain  # wavelengths 6.3, 19.9, 62.8, ...: high, medium, low x6
  ratio = (plain / scaled).tolist()
  check("llama3 bands", wl[0] < 8 and 8 < wl[1] < 32 and wl[2] > 32 and ratio[0] == 1.0
        and 1.0 < ratio[1] < 8.0 and all(abs(r - 8.0) < 1e-12 for r in ratio[2:]),
        f"ratios {[round(r, 4) for r in ratio]}")
  # Middle band by hand: blend = (32 / wl - 1) / 3, f = (1 - blend) * f0 / 8 + blend * f0.
  blend = (32 / wl[1] - 1) / 3
  want = (1 - blend) * plain[1] / 8 + blend * plain[1]
  check("llama3 medium band value", abs(scaled[1] - want) < 1e-15)

  # 6. Linear scaling equals evaluating rope at positions / factor.
  lin = dataclasses.replace(base, rope_scaling={"rope_type": "linear", "factor": 4.0})
  got = rope_angles(lin, torch.arange(8))
  want = rope_angles(base, torch.arange(8)) / 4.0
  check("linear scaling divides positions", torch.allclose(got, want, rtol=1e-15, atol=0))

  # 7. RoPE by hand for one pair: position 3, theta 10000, d 8, pair 1 -> angle 3 * 10000^-0.25.
  x = torch.zeros(1, 4, 1, 8, dtype=torch.float64)
  x[0, 3, 0, 1], x[0, 3, 0, 5] = 1.0, 2.0  # rotate-half pair 1 = (x[1], x[5])
  y = apply_rope(x, rope_angles(base, torch.arange(4)), interleaved=False)
  ang = 3 * 10000 ** -0.25
  ok = (abs(y[0, 3, 0, 1] - (math.cos(ang) - 2 * math.sin(ang))) < 1e-14
        and abs(y[0, 3, 0, 5] - (math.sin(ang) + 2 * math.cos(ang))) < 1e-14)
  check("rotate-half rope by hand", ok)
  x = torch.zeros(1, 4, 1, 8, dtype=torch.float64)
  x[0, 3, 0, 2], x[0, 3, 0, 3] = 1.0, 2.0  # interleaved pair 1 = (x[2], x[3])
  y = apply_rope(x, rope_angles(base, torch.arange(4)), interleaved=True)
  ok = (abs(y[0, 3, 0, 2] - (math.cos(ang) - 2 * math.sin(ang))) < 1e-14
        and abs(y[0, 3, 0, 3] - (math.sin(ang) + 2 * math.cos(ang))) < 1e-14)
  check("interleaved rope by hand", ok)

  # 8. RMSNorm by hand.
  v = torch.tensor([3.0, 4.0])
  got = rms_norm(v, torch.tensor([1.0, 2.0]), 0.0)
  r = math.sqrt(12.5)
  check("rmsnorm by hand", torch.allclose(got, torch.tensor([3 / r, 8 / r]), atol=1e-7))

  # 9. safetensors round trip in every float dtype, and the header layout.
  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "t.safetensors")
    ts = {"a": torch.tensor([1.0, -2.5, 3.0e-3]), "b": torch.tensor([[1.5, 2.0]]).half(),
          "c": torch.tensor([1.0, 3.140625, -0.5]).bfloat16()}
    write_safetensors(path, ts)
    back = read_safetensors(path)
    ok = all(back[k].dtype == ts[k].dtype and torch.equal(back[k], ts[k]) for k in ts)
    check("safetensors round trip F32/F16/BF16", ok)
    with open(path, "rb") as f:
      raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + n])
    # BF16 3.140625 = 0x4049; stored little-endian.
    c0 = hdr["c"]["data_offsets"][0]
    ok = n % 8 == 0 and raw[8 + n + c0 + 2:8 + n + c0 + 4] == b"\x49\x40"
    check("safetensors header aligned, BF16 bytes little-endian", ok)

    # 10. HF folder round trip keeps the logits (tied embeddings, Qwen2 biases).
    tied = dataclasses.replace(base, tie_word_embeddings=True)
    mt = _random_model(tied, 2).float()
    write_hf_folder(tmp, mt, torch.float32)
    back = load_hf_folder(tmp, torch.float32)
    with torch.no_grad():
      diff = (mt(ids) - back(ids)).abs().max().item()
    names = set(read_safetensors(os.path.join(tmp, "model.safetensors")))
    check("HF folder round trip", diff == 0.0 and "lm_head.weight" not in names
          and "model.layers.0.self_attn.q_proj.bias" in names
          and "model.layers.0.self_attn.o_proj.bias" not in names, f"{diff:.2e}")

  print(f"{len(failures)} failure(s)")
  return 1 if failures else 0


if __name__ == "__main__":
  sys.exit(main())
