#!/usr/bin/python3
"""Checks of tools/gemma_reference.py and tools/phi3_reference.py against each other and
tools/llama_reference.py: where two architectures coincide, their references must agree; each
new part must change the output. Run: /usr/bin/python3 tools/arch_reference_test.py"""

import dataclasses
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemma_reference as gref  # noqa: E402
import llama_reference as lref  # noqa: E402
import phi3_reference as pref  # noqa: E402


def randomize(model, seed: int):
  torch.manual_seed(seed)
  with torch.no_grad():
    for p in model.parameters():
      p.normal_(0, 0.3)
  return model.eval()


def max_diff(a, b, ids) -> float:
  with torch.no_grad():
    return (a(ids) - b(ids)).abs().max().item()


def main() -> int:
  failures = []

  def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
    if not ok:
      failures.append(name)

  torch.manual_seed(0)
  ids = torch.randint(0, 50, (1, 12))

  # Phi-3 without its own parts is Mistral without a window: the fused projections split by
  # rows must give the separate ones.
  phi = pref.Phi3Config(vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2)
  p = randomize(pref.Phi3ForCausalLM(phi).double(), 1)
  llama = lref.LlamaForCausalLM(lref.LlamaConfig(
      vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
      num_attention_heads=4, num_key_value_heads=2, head_dim=8,
      architecture="MistralForCausalLM")).double().eval()
  sd = {}
  for name, t in p.hf_state_dict().items():
    if "qkv_proj" in name:
      q, k, v = t.split([32, 16, 16])
      for part, value in (("q", q), ("k", k), ("v", v)):
        sd[name.replace("qkv_proj", f"{part}_proj")] = value
    elif "gate_up_proj" in name:
      gate, up = t.chunk(2)
      sd[name.replace("gate_up_proj", "gate_proj")] = gate
      sd[name.replace("gate_up_proj", "up_proj")] = up
    else:
      sd[name] = t
  llama.load_hf_state_dict(sd)
  diff = max_diff(p, llama, ids)
  check("phi3 fused qkv / gate_up == llama's separate projections", diff < 1e-10, f"{diff:.2e}")

  # Partial rotary: the dims past rotary_dim do not move with position; LongRoPE's factors and
  # attention factor change the output, and factors of 1 with no stretch change nothing.
  partial = pref.Phi3ForCausalLM(dataclasses.replace(phi, partial_rotary_factor=0.5)).double()
  partial.load_hf_state_dict(p.hf_state_dict())
  check("partial rotary changes the output", max_diff(p, partial.eval(), ids) > 1e-3)
  x = torch.randn(1, 3, 2, 8, dtype=torch.float64)
  angles, _ = pref.rope_tables(dataclasses.replace(phi, partial_rotary_factor=0.5), 3, 3)
  rotated = pref.apply_partial_rope(x, angles, 1.0, 4)
  check("partial rotary passes dims 4..7 through", torch.equal(rotated[..., 4:], x[..., 4:]))
  ones = {"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [1.0] * 4}
  unit = pref.Phi3ForCausalLM(dataclasses.replace(phi, rope_scaling=ones)).double()
  unit.load_hf_state_dict(p.hf_state_dict())
  diff = max_diff(p, unit.eval(), ids)
  check("longrope with factors 1 and no stretch is plain rope", diff < 1e-12, f"{diff:.2e}")
  stretched = dataclasses.replace(phi, rope_scaling=ones, max_position_embeddings=16384)
  scaled = pref.Phi3ForCausalLM(stretched).double()
  scaled.load_hf_state_dict(p.hf_state_dict())
  _, factor = pref.rope_tables(stretched, 1, 16)
  check("longrope attention factor sqrt(1 + ln 4 / ln 4096)",
        abs(factor - (1 + torch.log(torch.tensor(4.0)) / torch.log(torch.tensor(4096.0))) ** 0.5)
        < 1e-6, f"{factor:.6f}")
  check("longrope attention factor changes the output", max_diff(p, scaled.eval(), ids) > 1e-3)

  # Gemma: each of its parts matters, and the window and caps vanish where they should.
  gemma = gref.GemmaConfig(vocab_size=50, hidden_size=32, intermediate_size=48,
                           num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                           head_dim=8, query_pre_attn_scalar=8, sliding_window=4)
  g = randomize(gref.GemmaForCausalLM(gemma).double(), 2)

  def variant(**over):
    other = gref.GemmaForCausalLM(dataclasses.replace(gemma, **over)).double()
    other.load_hf_state_dict(g.hf_state_dict())
    return other.eval()

  check("gemma window past the sequence == global",
        max_diff(variant(sliding_window=64), variant(sliding_window=12), ids) < 1e-12)
  check("gemma window 4 changes the output", max_diff(g, variant(sliding_window=64), ids) > 1e-3)
  check("gemma huge soft-caps change nothing",
        max_diff(g, variant(attn_logit_softcapping=1e9, final_logit_softcapping=1e9), ids) < 1e-6)
  check("gemma soft-caps change the output",
        max_diff(g, variant(attn_logit_softcapping=1.0, final_logit_softcapping=2.0), ids) > 1e-3)
  check("gemma query_pre_attn_scalar matters",
        max_diff(g, variant(query_pre_attn_scalar=24), ids) > 1e-3)
  with torch.no_grad():
    logits = variant(final_logit_softcapping=2.0)(ids)
  check("gemma final soft-cap bounds the logits", logits.abs().max().item() < 2.0)
  norm = gref.GemmaRmsNorm(8, 1e-6).double()
  v = torch.randn(3, 8, dtype=torch.float64)
  check("gemma norm with w = 0 is a plain rms norm",
        torch.allclose(norm(v), lref.rms_norm(v, torch.ones(8, dtype=torch.float64), 1e-6)))
  g3 = gref.GemmaConfig(**{**dataclasses.asdict(gemma), "architecture": "Gemma3ForCausalLM",
                           "sliding_window_pattern": 2})
  m3 = randomize(gref.GemmaForCausalLM(g3).double(), 3)
  other = gref.GemmaForCausalLM(dataclasses.replace(g3, rope_local_base_freq=500.0)).double()
  other.load_hf_state_dict(m3.hf_state_dict())
  check("gemma3 local rope base matters", max_diff(m3, other.eval(), ids) > 1e-3)
  check("gemma3 layer 1 global, layer 0 sliding", g3.is_sliding(0) and not g3.is_sliding(1))

  print(f"{len(failures)} failure(s)")
  return 1 if failures else 0


if __name__ == "__main__":
  sys.exit(main())
