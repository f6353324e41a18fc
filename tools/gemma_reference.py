#!/usr/bin/python3
"""PyTorch reference for Gemma 2 and Gemma 3 (text), written from the Gemma 2 and Gemma 3
technical reports and the model cards' config fields; the safetensors / HF folder I/O and greedy
generation are llama_reference.py's.

What differs from Llama, each below in one place:
  - RMSNorm multiplies by (1 + w), in float32 (checkpoints store w);
  - the embedding output is scaled by sqrt(hidden_size);
  - every block has a norm before and after attention and before and after the MLP;
  - the MLP is GeGLU with the tanh approximation of GELU (gelu_pytorch_tanh);
  - attention scores are scaled by query_pre_attn_scalar^-1/2 and (Gemma 2) soft-capped,
    s -> cap * tanh(s / cap); the final logits are soft-capped too (Gemma 2);
  - sliding-window layers (a query sees keys with pos > q_pos - sliding_window) interleave
    with global ones: Gemma 2 every other layer, Gemma 3 five of six (layer i is global when
    (i + 1) % pattern == 0);
  - Gemma 3: an RMSNorm (1 + w) over each q and k head before RoPE, and the sliding layers'
    RoPE base is rope_local_base_freq (10000) while global layers use rope_theta (and
    rope_scaling, linear, when given).
"""

import dataclasses
import math
import sys
import os
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_reference as lref  # noqa: E402

ARCHITECTURES = ("Gemma2ForCausalLM", "Gemma3ForCausalLM")


@dataclasses.dataclass
class GemmaConfig:
  vocab_size: int
  hidden_size: int
  intermediate_size: int
  num_hidden_layers: int
  num_attention_heads: int
  num_key_value_heads: int
  head_dim: int
  architecture: str = "Gemma2ForCausalLM"
  rms_norm_eps: float = 1e-6
  rope_theta: float = 10000.0
  rope_local_base_freq: float = 10000.0  # Gemma 3 sliding layers
  rope_scaling: Optional[dict] = None  # Gemma 3 global layers: {"rope_type": "linear", ...}
  max_position_embeddings: int = 8192
  query_pre_attn_scalar: float = 256
  attn_logit_softcapping: Optional[float] = None
  final_logit_softcapping: Optional[float] = None
  sliding_window: int = 4096
  sliding_window_pattern: int = 2
  tie_word_embeddings: bool = True
  bos_token_id: int = 1
  eos_token_id: int = 2
  torch_dtype: str = "float32"

  @property
  def gemma3(self) -> bool:
    return self.architecture == "Gemma3ForCausalLM"

  def is_sliding(self, layer: int) -> bool:
    return (layer + 1) % self.sliding_window_pattern != 0

  def to_hf_dict(self) -> dict:
    d = {
        "architectures": [self.architecture],
        "model_type": "gemma3_text" if self.gemma3 else "gemma2",
        "vocab_size": self.vocab_size,
        "hidden_size": self.hidden_size,
        "intermediate_size": self.intermediate_size,
        "num_hidden_layers": self.num_hidden_layers,
        "num_attention_heads": self.num_attention_heads,
        "num_key_value_heads": self.num_key_value_heads,
        "head_dim": self.head_dim,
        "hidden_act": "gelu_pytorch_tanh",
        "hidden_activation": "gelu_pytorch_tanh",
        "rms_norm_eps": self.rms_norm_eps,
        "rope_theta": self.rope_theta,
        "rope_scaling": self.rope_scaling,
        "max_position_embeddings": self.max_position_embeddings,
        "query_pre_attn_scalar": self.query_pre_attn_scalar,
        "attn_logit_softcapping": self.attn_logit_softcapping,
        "final_logit_softcapping": self.final_logit_softcapping,
        "sliding_window": self.sliding_window,
        "attention_bias": False,
        "tie_word_embeddings": self.tie_word_embeddings,
        "bos_token_id": self.bos_token_id,
        "eos_token_id": self.eos_token_id,
        "torch_dtype": self.torch_dtype,
    }
    if self.gemma3:
      d["rope_local_base_freq"] = self.rope_local_base_freq
      d["sliding_window_pattern"] = self.sliding_window_pattern
    return d

  @staticmethod
  def from_hf_dict(d: dict) -> "GemmaConfig":
    arch = d["architectures"][0]
    if arch not in ARCHITECTURES:
      raise ValueError(f"config.json: architectures[0] is {arch!r}, expected one of "
                       f"{ARCHITECTURES}")
    gemma3 = arch == "Gemma3ForCausalLM"
    return GemmaConfig(
        vocab_size=d["vocab_size"], hidden_size=d["hidden_size"],
        intermediate_size=d["intermediate_size"], num_hidden_layers=d["num_hidden_layers"],
        num_attention_heads=d["num_attention_heads"],
        num_key_value_heads=d["num_key_value_heads"], head_dim=d["head_dim"], architecture=arch,
        rms_norm_eps=d["rms_norm_eps"], rope_theta=d["rope_theta"],
        rope_local_base_freq=d.get("rope_local_base_freq", 10000.0),
        rope_scaling=d.get("rope_scaling"),
        max_position_embeddings=d["max_position_embeddings"],
        query_pre_attn_scalar=d["query_pre_attn_scalar"],
        attn_logit_softcapping=d.get("attn_logit_softcapping"),
        final_logit_softcapping=d.get("final_logit_softcapping"),
        sliding_window=d["sliding_window"],
        sliding_window_pattern=d.get("sliding_window_pattern", 6) if gemma3 else 2,
        tie_word_embeddings=d.get("tie_word_embeddings", True),
        bos_token_id=d.get("bos_token_id", 1), eos_token_id=d.get("eos_token_id", 2),
        torch_dtype=d.get("torch_dtype", "float32"))


class GemmaRmsNorm(nn.Module):
  """x / sqrt(mean(x^2) + eps) * (1 + w), in float32 at least."""

  def __init__(self, size: int, eps: float):
    super().__init__()
    self.weight = nn.Parameter(torch.zeros(size))
    self.eps = eps

  def forward(self, x: torch.Tensor) -> torch.Tensor:
    return lref.rms_norm(x, 1.0 + self.weight.to(torch.promote_types(x.dtype, torch.float32)),
                         self.eps).to(x.dtype)


def softcap(x: torch.Tensor, cap: Optional[float]) -> torch.Tensor:
  return x if cap is None else cap * torch.tanh(x / cap)


def rope_angles(theta: float, d: int, positions: torch.Tensor,
                linear_factor: float = 1.0) -> torch.Tensor:
  """[T, d/2] angles (pos / factor) * theta^(-2i/d), in float64."""
  inv_freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
  return (positions.to(torch.float64) / linear_factor)[:, None] * inv_freq[None, :]


class Attention(nn.Module):

  def __init__(self, cfg: GemmaConfig, layer: int):
    super().__init__()
    self.cfg, self.layer = cfg, layer
    h, d, kv = cfg.num_attention_heads, cfg.head_dim, cfg.num_key_value_heads
    self.q_proj = nn.Linear(cfg.hidden_size, h * d, bias=False)
    self.k_proj = nn.Linear(cfg.hidden_size, kv * d, bias=False)
    self.v_proj = nn.Linear(cfg.hidden_size, kv * d, bias=False)
    self.o_proj = nn.Linear(h * d, cfg.hidden_size, bias=False)
    if cfg.gemma3:
      self.q_norm = GemmaRmsNorm(d, cfg.rms_norm_eps)
      self.k_norm = GemmaRmsNorm(d, cfg.rms_norm_eps)

  def angles(self, t: int) -> torch.Tensor:
    cfg, pos = self.cfg, torch.arange(t)
    if cfg.gemma3 and cfg.is_sliding(self.layer):
      return rope_angles(cfg.rope_local_base_freq, cfg.head_dim, pos)
    factor = 1.0
    if cfg.rope_scaling is not None:
      kind = cfg.rope_scaling.get("rope_type", cfg.rope_scaling.get("type"))
      if kind != "linear":
        raise ValueError(f"rope_scaling {kind!r} is not in this reference")
      factor = cfg.rope_scaling["factor"]
    return rope_angles(cfg.rope_theta, cfg.head_dim, pos, factor)

  def forward(self, x: torch.Tensor) -> torch.Tensor:
    cfg = self.cfg
    b, t, _ = x.shape  # [B, T, hidden]
    h, kv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    q = self.q_proj(x).view(b, t, h, d)
    k = self.k_proj(x).view(b, t, kv, d)
    v = self.v_proj(x).view(b, t, kv, d)
    if cfg.gemma3:
      q, k = self.q_norm(q), self.k_norm(k)
    angles = self.angles(t)
    q = lref.apply_rope(q, angles, interleaved=False)
    k = lref.apply_rope(k, angles, interleaved=False)
    k, v = lref.repeat_kv(k, v, h)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * cfg.query_pre_attn_scalar ** -0.5
    scores = softcap(scores, cfg.attn_logit_softcapping)
    window = cfg.sliding_window if cfg.is_sliding(self.layer) else None
    return self.o_proj(lref.causal_attention(scores, v, window))


class Mlp(nn.Module):

  def __init__(self, cfg: GemmaConfig):
    super().__init__()
    self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
    self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
    self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

  def forward(self, x: torch.Tensor) -> torch.Tensor:
    return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class DecoderLayer(nn.Module):

  def __init__(self, cfg: GemmaConfig, layer: int):
    super().__init__()
    eps = cfg.rms_norm_eps
    self.input_layernorm = GemmaRmsNorm(cfg.hidden_size, eps)
    self.self_attn = Attention(cfg, layer)
    self.post_attention_layernorm = GemmaRmsNorm(cfg.hidden_size, eps)
    self.pre_feedforward_layernorm = GemmaRmsNorm(cfg.hidden_size, eps)
    self.mlp = Mlp(cfg)
    self.post_feedforward_layernorm = GemmaRmsNorm(cfg.hidden_size, eps)

  def forward(self, x: torch.Tensor) -> torch.Tensor:
    x = x + self.post_attention_layernorm(self.self_attn(self.input_layernorm(x)))
    return x + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))


class Backbone(nn.Module):

  def __init__(self, cfg: GemmaConfig):
    super().__init__()
    self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
    self.layers = nn.ModuleList(DecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers))
    self.norm = GemmaRmsNorm(cfg.hidden_size, cfg.rms_norm_eps)


class GemmaForCausalLM(lref.HfWeights, nn.Module):

  def __init__(self, cfg: GemmaConfig):
    super().__init__()
    self.cfg = cfg
    self.model = Backbone(cfg)
    self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
    if cfg.tie_word_embeddings:
      self.lm_head.weight = self.model.embed_tokens.weight

  def forward(self, input_ids: torch.Tensor, hidden_states: Optional[list] = None):
    """input_ids [B, T] at positions 0..T-1 -> logits [B, T, vocab]; `hidden_states` as in
    llama_reference."""
    x = self.model.embed_tokens(input_ids)
    # The normalizer is a tensor of the activations' dtype, as in the reference code.
    x = x * torch.tensor(self.cfg.hidden_size ** 0.5, dtype=x.dtype)
    x = lref.run_backbone(self.model, x, hidden_states)
    return softcap(self.lm_head(x), self.cfg.final_logit_softcapping)


def model_for(config: dict) -> GemmaForCausalLM:
  return GemmaForCausalLM(GemmaConfig.from_hf_dict(config))
