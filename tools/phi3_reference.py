#!/usr/bin/python3
"""PyTorch reference for Phi-3 / Phi-3.5-mini / Phi-4-mini, written from the Phi-3 technical
report, the LongRoPE paper and the model cards' config fields; the safetensors / HF folder I/O
and greedy generation are llama_reference.py's.

What differs from Llama:
  - q, k and v come from one projection (self_attn.qkv_proj: q rows, then k, then v) and gate
    and up from another (mlp.gate_up_proj: gate rows, then up);
  - partial rotary embedding: the first int(partial_rotary_factor * head_dim) dims of each
    head rotate (rotate-half over those dims), the rest pass through;
  - LongRoPE (rope_scaling type "longrope" / "su"): inv_freq[i] = 1 / (factor[i] *
    theta^(2i / rotary_dim)) with the short factors, or the long ones when the run's context is
    longer than original_max_position_embeddings; cos and sin are multiplied by
    sqrt(1 + ln(s) / ln(original)), s = max_position_embeddings / original (1 when s <= 1).
    Which factors a run uses is decided by the context it reserves (`context` below), as
    llama.cpp decides by its n_ctx;
  - a sliding window on every layer when the config gives one.
"""

import dataclasses
import math
import os
import sys
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_reference as lref  # noqa: E402


@dataclasses.dataclass
class Phi3Config:
  vocab_size: int
  hidden_size: int
  intermediate_size: int
  num_hidden_layers: int
  num_attention_heads: int
  num_key_value_heads: int
  rms_norm_eps: float = 1e-5
  rope_theta: float = 10000.0
  partial_rotary_factor: float = 1.0
  # None or {"type": "longrope", "short_factor": [...], "long_factor": [...]}
  rope_scaling: Optional[dict] = None
  max_position_embeddings: int = 4096
  original_max_position_embeddings: int = 4096
  sliding_window: Optional[int] = None
  tie_word_embeddings: bool = False
  bos_token_id: int = 1
  eos_token_id: int = 2
  torch_dtype: str = "float32"

  @property
  def head_dim(self) -> int:
    return self.hidden_size // self.num_attention_heads

  @property
  def rotary_dim(self) -> int:
    return int(self.partial_rotary_factor * self.head_dim)

  def to_hf_dict(self) -> dict:
    return {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3",
        "vocab_size": self.vocab_size, "hidden_size": self.hidden_size,
        "intermediate_size": self.intermediate_size,
        "num_hidden_layers": self.num_hidden_layers,
        "num_attention_heads": self.num_attention_heads,
        "num_key_value_heads": self.num_key_value_heads, "hidden_act": "silu",
        "rms_norm_eps": self.rms_norm_eps, "rope_theta": self.rope_theta,
        "partial_rotary_factor": self.partial_rotary_factor, "rope_scaling": self.rope_scaling,
        "max_position_embeddings": self.max_position_embeddings,
        "original_max_position_embeddings": self.original_max_position_embeddings,
        "sliding_window": self.sliding_window,
        "tie_word_embeddings": self.tie_word_embeddings, "bos_token_id": self.bos_token_id,
        "eos_token_id": self.eos_token_id, "torch_dtype": self.torch_dtype,
    }

  @staticmethod
  def from_hf_dict(d: dict) -> "Phi3Config":
    if d["architectures"][0] != "Phi3ForCausalLM":
      raise ValueError(f"config.json: architectures[0] is {d['architectures'][0]!r}")
    return Phi3Config(
        vocab_size=d["vocab_size"], hidden_size=d["hidden_size"],
        intermediate_size=d["intermediate_size"], num_hidden_layers=d["num_hidden_layers"],
        num_attention_heads=d["num_attention_heads"],
        num_key_value_heads=d.get("num_key_value_heads") or d["num_attention_heads"],
        rms_norm_eps=d["rms_norm_eps"], rope_theta=d.get("rope_theta", 10000.0),
        partial_rotary_factor=d.get("partial_rotary_factor", 1.0),
        rope_scaling=d.get("rope_scaling"),
        max_position_embeddings=d["max_position_embeddings"],
        original_max_position_embeddings=d.get("original_max_position_embeddings",
                                               d["max_position_embeddings"]),
        sliding_window=d.get("sliding_window"),
        tie_word_embeddings=d.get("tie_word_embeddings", False),
        bos_token_id=d.get("bos_token_id", 1), eos_token_id=d.get("eos_token_id", 2),
        torch_dtype=d.get("torch_dtype", "float32"))


def rope_tables(cfg: Phi3Config, t: int, context: int):
  """(angles [T, rotary/2] f64, attention factor) for positions 0..t-1 of a run reserving
  `context` positions."""
  r = cfg.rotary_dim
  inv_freq = cfg.rope_theta ** (-torch.arange(0, r, 2, dtype=torch.float64) / r)
  factor = 1.0
  if cfg.rope_scaling is not None:
    kind = cfg.rope_scaling.get("rope_type", cfg.rope_scaling.get("type"))
    if kind not in ("longrope", "su"):
      raise ValueError(f"rope_scaling {kind!r} is not in this reference")
    original = cfg.original_max_position_embeddings
    key = "long_factor" if context > original else "short_factor"
    inv_freq = inv_freq / torch.tensor(cfg.rope_scaling[key], dtype=torch.float64)
    scale = cfg.max_position_embeddings / original
    factor = 1.0 if scale <= 1.0 else math.sqrt(1 + math.log(scale) / math.log(original))
  return torch.arange(t, dtype=torch.float64)[:, None] * inv_freq[None, :], factor


def apply_partial_rope(x: torch.Tensor, angles: torch.Tensor, factor: float,
                       rotary: int) -> torch.Tensor:
  """Rotate-half over x[..., :rotary] with cos and sin times `factor`; the rest unchanged."""
  half = rotary // 2
  cos = (torch.cos(angles) * factor).to(x.dtype)[None, :, None, :]  # [1, T, 1, r/2]
  sin = (torch.sin(angles) * factor).to(x.dtype)[None, :, None, :]
  a, b, rest = x[..., :half], x[..., half:rotary], x[..., rotary:]
  return torch.cat((a * cos - b * sin, a * sin + b * cos, rest), dim=-1)


class Attention(nn.Module):

  def __init__(self, cfg: Phi3Config):
    super().__init__()
    self.cfg = cfg
    h, d, kv = cfg.num_attention_heads, cfg.head_dim, cfg.num_key_value_heads
    self.qkv_proj = nn.Linear(cfg.hidden_size, (h + 2 * kv) * d, bias=False)
    self.o_proj = nn.Linear(h * d, cfg.hidden_size, bias=False)

  def forward(self, x: torch.Tensor, angles: torch.Tensor, factor: float) -> torch.Tensor:
    cfg = self.cfg
    b, t, _ = x.shape
    h, kv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    qkv = self.qkv_proj(x)  # [B, T, (H + 2 KV) d]
    q = qkv[..., :h * d].reshape(b, t, h, d)
    k = qkv[..., h * d:(h + kv) * d].reshape(b, t, kv, d)
    v = qkv[..., (h + kv) * d:].reshape(b, t, kv, d)
    q = apply_partial_rope(q, angles, factor, cfg.rotary_dim)
    k = apply_partial_rope(k, angles, factor, cfg.rotary_dim)
    k, v = lref.repeat_kv(k, v, h)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d)
    return self.o_proj(lref.causal_attention(scores, v, cfg.sliding_window))


class Mlp(nn.Module):

  def __init__(self, cfg: Phi3Config):
    super().__init__()
    self.gate_up_proj = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=False)
    self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

  def forward(self, x: torch.Tensor) -> torch.Tensor:
    gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
    return self.down_proj(F.silu(gate) * up)


class DecoderLayer(nn.Module):

  def __init__(self, cfg: Phi3Config):
    super().__init__()
    self.input_layernorm = lref.RmsNorm(cfg.hidden_size, cfg.rms_norm_eps)
    self.self_attn = Attention(cfg)
    self.post_attention_layernorm = lref.RmsNorm(cfg.hidden_size, cfg.rms_norm_eps)
    self.mlp = Mlp(cfg)

  def forward(self, x, angles, factor):
    x = x + self.self_attn(self.input_layernorm(x), angles, factor)
    return x + self.mlp(self.post_attention_layernorm(x))


class Backbone(nn.Module):

  def __init__(self, cfg: Phi3Config):
    super().__init__()
    self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
    self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
    self.norm = lref.RmsNorm(cfg.hidden_size, cfg.rms_norm_eps)


class Phi3ForCausalLM(lref.HfWeights, nn.Module):

  def __init__(self, cfg: Phi3Config):
    super().__init__()
    self.cfg = cfg
    # The context a run reserves (picks LongRoPE's factors); the model's own by default.
    self.context = cfg.max_position_embeddings
    self.model = Backbone(cfg)
    self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
    if cfg.tie_word_embeddings:
      self.lm_head.weight = self.model.embed_tokens.weight

  def forward(self, input_ids: torch.Tensor, hidden_states: Optional[list] = None):
    t = input_ids.shape[1]
    angles, factor = rope_tables(self.cfg, t, self.context)
    x = self.model.embed_tokens(input_ids)
    return self.lm_head(lref.run_backbone(self.model, x, hidden_states, angles, factor))


def model_for(config: dict) -> Phi3ForCausalLM:
  return Phi3ForCausalLM(Phi3Config.from_hf_dict(config))
