#!/usr/bin/python3
"""PyTorch reference for the Llama family (Llama 2/3, Mistral, Qwen2, Qwen3), written from the
architecture definitions, plus plain-Python safetensors and Hugging Face folder I/O that the
other references (gemma_reference.py, phi3_reference.py) share.

This is the numeric oracle Kite's C++ is tested against, so it favours clarity over speed:
one function per idea, shapes in comments, and every dtype decision explicit.

tools/llama_reference_test.py checks it: rotary forms agree, GQA equals MHA with repeated
heads, causality, sliding window, rope scaling by hand, safetensors round trip.
"""

import dataclasses
import json
import math
import os
import struct
from typing import Dict, List, Optional

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# Architectures this reference builds and how their attention biases differ.
#   Llama: "attention_bias" puts a bias on q, k, v and o; "mlp_bias" on gate, up, down.
#   Qwen2: always a bias on q, k, v; never on o or the MLP.
#   Mistral: no biases.
#   Qwen3 (Qwen3 technical report): "attention_bias" on q, k, v and o (false in every release),
#   and an RMSNorm over each q and k head (weight [head_dim]) before RoPE.
ARCHITECTURES = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",
                 "Qwen3ForCausalLM")


@dataclasses.dataclass
class LlamaConfig:
  vocab_size: int
  hidden_size: int
  intermediate_size: int
  num_hidden_layers: int
  num_attention_heads: int
  num_key_value_heads: int
  head_dim: int
  architecture: str = "LlamaForCausalLM"
  rms_norm_eps: float = 1e-5
  rope_theta: float = 10000.0
  # None, {"rope_type": "linear", "factor": f} or {"rope_type": "llama3", "factor": f,
  # "low_freq_factor": l, "high_freq_factor": h, "original_max_position_embeddings": n}.
  rope_scaling: Optional[dict] = None
  max_position_embeddings: int = 2048
  tie_word_embeddings: bool = False
  attention_bias: bool = False  # Llama only (q, k, v and o)
  mlp_bias: bool = False  # Llama only
  sliding_window: Optional[int] = None  # Mistral: a query sees keys with pos > q_pos - window
  bos_token_id: int = 1
  eos_token_id: int = 2
  torch_dtype: str = "float32"
  # Not a Hugging Face key: rotate (x[2i], x[2i+1]) pairs as Meta's original code and GGUF
  # files do, instead of HF's (x[i], x[i + d/2]). See permute_for_interleaved_rope().
  rope_interleaved: bool = False

  @property
  def qkv_bias(self) -> bool:
    if self.architecture == "Qwen2ForCausalLM":
      return True
    return self.o_bias

  @property
  def o_bias(self) -> bool:
    return self.architecture in ("LlamaForCausalLM", "Qwen3ForCausalLM") and self.attention_bias

  @property
  def qk_norm(self) -> bool:
    return self.architecture == "Qwen3ForCausalLM"

  @property
  def has_mlp_bias(self) -> bool:
    return self.architecture == "LlamaForCausalLM" and self.mlp_bias

  def to_hf_dict(self) -> dict:
    """config.json content with the key names transformers uses."""
    d = {
        "architectures": [self.architecture],
        "model_type": {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral",
                       "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3"}[self.architecture],
        "vocab_size": self.vocab_size,
        "hidden_size": self.hidden_size,
        "intermediate_size": self.intermediate_size,
        "num_hidden_layers": self.num_hidden_layers,
        "num_attention_heads": self.num_attention_heads,
        "num_key_value_heads": self.num_key_value_heads,
        "head_dim": self.head_dim,
        "hidden_act": "silu",
        "rms_norm_eps": self.rms_norm_eps,
        "rope_theta": self.rope_theta,
        "rope_scaling": self.rope_scaling,
        "max_position_embeddings": self.max_position_embeddings,
        "tie_word_embeddings": self.tie_word_embeddings,
        "bos_token_id": self.bos_token_id,
        "eos_token_id": self.eos_token_id,
        "torch_dtype": self.torch_dtype,
    }
    if self.architecture == "LlamaForCausalLM":
      d["attention_bias"] = self.attention_bias
      d["mlp_bias"] = self.mlp_bias
    if self.architecture == "Qwen3ForCausalLM":
      d["attention_bias"] = self.attention_bias
      d["use_sliding_window"] = False
      d["sliding_window"] = None
    if self.architecture == "MistralForCausalLM":
      d["sliding_window"] = self.sliding_window
    if self.architecture == "Qwen2ForCausalLM":
      # As Qwen2 releases ship it: a window size that is off unless use_sliding_window.
      d["use_sliding_window"] = False
      d["sliding_window"] = 32768
      d["max_window_layers"] = self.num_hidden_layers
    return d

  @staticmethod
  def from_hf_dict(d: dict) -> "LlamaConfig":
    arch = d["architectures"][0]
    if arch not in ARCHITECTURES:
      raise ValueError(f"config.json: architectures[0] is {arch!r}, expected one of "
                       f"{ARCHITECTURES}")
    heads = d["num_attention_heads"]
    scaling = d.get("rope_scaling")
    if scaling is not None:
      kind = scaling.get("rope_type", scaling.get("type"))
      if kind == "default":
        scaling = None
      elif kind not in ("linear", "llama3"):
        raise ValueError(f"config.json: rope_scaling type {kind!r} is not supported")
    sliding = d.get("sliding_window") if arch == "MistralForCausalLM" else None
    if arch == "Qwen2ForCausalLM" and d.get("use_sliding_window"):
      raise ValueError("config.json: use_sliding_window true is not supported for Qwen2")
    bos, eos = d.get("bos_token_id", 1), d.get("eos_token_id", 2)
    return LlamaConfig(
        vocab_size=d["vocab_size"],
        hidden_size=d["hidden_size"],
        intermediate_size=d["intermediate_size"],
        num_hidden_layers=d["num_hidden_layers"],
        num_attention_heads=heads,
        num_key_value_heads=d.get("num_key_value_heads") or heads,
        head_dim=d.get("head_dim") or d["hidden_size"] // heads,
        architecture=arch,
        rms_norm_eps=d.get("rms_norm_eps", 1e-6),
        rope_theta=d.get("rope_theta", 10000.0),
        rope_scaling=scaling,
        max_position_embeddings=d.get("max_position_embeddings", 2048),
        tie_word_embeddings=d.get("tie_word_embeddings", False),
        attention_bias=d.get("attention_bias", False),
        mlp_bias=d.get("mlp_bias", False),
        sliding_window=sliding,
        bos_token_id=bos[0] if isinstance(bos, list) else bos,
        eos_token_id=eos[0] if isinstance(eos, list) else eos,
        torch_dtype=d.get("torch_dtype", "float32"),
    )


# ----------------------------------------------------------------------------------------------
# Building blocks


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
  """x / sqrt(mean(x^2) + eps) * weight, over the last axis, in at least float32."""
  dtype = torch.promote_types(x.dtype, torch.float32)
  x = x.to(dtype)
  inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
  return x * inv_rms * weight.to(dtype)


def rope_inv_freq(cfg: LlamaConfig) -> torch.Tensor:
  """Per-pair angular frequencies theta^(-2i/d), i < d/2, after any llama3 scaling. [d/2] f64."""
  d = cfg.head_dim
  inv_freq = cfg.rope_theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
  scaling = cfg.rope_scaling
  if scaling is None or scaling.get("rope_type", scaling.get("type")) != "llama3":
    return inv_freq
  # Llama 3.1: frequencies whose wavelength fits in the original context many times (high
  # frequencies) are kept; those whose wavelength exceeds it (low frequencies) are slowed by
  # `factor`; the band between is a linear blend in (original_context / wavelength).
  factor = scaling["factor"]
  low_ff = scaling["low_freq_factor"]
  high_ff = scaling["high_freq_factor"]
  old_ctx = scaling["original_max_position_embeddings"]
  wavelen = 2 * math.pi / inv_freq
  low_freq_wavelen = old_ctx / low_ff  # longer wavelengths than this are slowed fully
  high_freq_wavelen = old_ctx / high_ff  # shorter wavelengths than this are kept
  blend = (old_ctx / wavelen - low_ff) / (high_ff - low_ff)  # 0 at the low edge, 1 at the high
  medium = (1 - blend) * inv_freq / factor + blend * inv_freq
  out = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, medium)
  return torch.where(wavelen < high_freq_wavelen, inv_freq, out)


def rope_angles(cfg: LlamaConfig, positions: torch.Tensor) -> torch.Tensor:
  """Rotation angle of pair i at each position: (pos / linear_factor) * inv_freq[i]. [T, d/2]"""
  pos = positions.to(torch.float64)
  scaling = cfg.rope_scaling
  if scaling is not None and scaling.get("rope_type", scaling.get("type")) == "linear":
    pos = pos / scaling["factor"]
  return pos[:, None] * rope_inv_freq(cfg)[None, :]


def apply_rope(x: torch.Tensor, angles: torch.Tensor, interleaved: bool) -> torch.Tensor:
  """Rotates pairs of x [B, T, H, d] by angles [T, d/2].

  Rotate-half (HF Llama, NeoX): pair i is (x[i], x[i + d/2]).
  Interleaved (GPT-J, Meta's original Llama, GGUF): pair i is (x[2i], x[2i + 1]).
  cos/sin are computed in float64 and rounded once to x's dtype (at least f32), as HF does
  in f32; the difference is far below the tolerances we test with.
  """
  dtype = x.dtype
  cos = torch.cos(angles).to(dtype)[None, :, None, :]  # [1, T, 1, d/2]
  sin = torch.sin(angles).to(dtype)[None, :, None, :]
  if interleaved:
    a, b = x[..., 0::2], x[..., 1::2]
  else:
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
  ra = a * cos - b * sin
  rb = a * sin + b * cos
  if interleaved:
    return torch.stack((ra, rb), dim=-1).flatten(-2)
  return torch.cat((ra, rb), dim=-1)


def permute_for_interleaved_rope(w: torch.Tensor, n_heads: int) -> torch.Tensor:
  """Reorders q/k projection rows (or bias entries) from HF's rotate-half layout to the
  interleaved layout, per head: new row 2i = old row i, new row 2i+1 = old row i + d/2.
  Interleaved RoPE on permuted weights gives the same attention scores as rotate-half on the
  originals (this is what GGUF converters do for Llama)."""
  rows = w.shape[0]
  d = rows // n_heads
  rest = w.shape[1:]
  return w.reshape(n_heads, 2, d // 2, *rest).transpose(1, 2).reshape(rows, *rest)


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
  return F.silu(gate) * up


# ----------------------------------------------------------------------------------------------
# The model. Module names mirror Hugging Face so state_dict() keys are the HF tensor names.


def repeat_kv(k: torch.Tensor, v: torch.Tensor, heads: int):
  """GQA: query head j reads kv head j // (H / KV). k, v [B, T, KV, d] -> [B, T, H, d]."""
  group = heads // k.shape[2]
  return k.repeat_interleave(group, dim=2), v.repeat_interleave(group, dim=2)


def causal_attention(scores: torch.Tensor, v: torch.Tensor,
                     window: Optional[int]) -> torch.Tensor:
  """scores [B, H, Tq, Tk] (scaled, capped) at positions 0..T-1, v [B, T, H, d] -> [B, T, H*d]:
  each query sees the keys at or before it, and within `window` of it when there is one;
  softmax in at least f32."""
  b, h, t, _ = scores.shape
  qpos, kpos = torch.arange(t)[:, None], torch.arange(t)[None, :]
  allowed = kpos <= qpos
  if window is not None:
    allowed = allowed & (kpos > qpos - window)
  scores = scores.masked_fill(~allowed, float("-inf"))
  probs = torch.softmax(scores.to(torch.promote_types(scores.dtype, torch.float32)), dim=-1)
  return torch.einsum("bhqk,bkhd->bqhd", probs.to(v.dtype), v).reshape(b, t, h * v.shape[3])


def run_backbone(backbone: nn.Module, x: torch.Tensor, hidden_states: Optional[list],
                 *layer_args) -> torch.Tensor:
  """The decoder layers then the final norm over x [B, T, hidden]; when `hidden_states` is a
  list, appends x, each layer's output and the final-norm output."""
  if hidden_states is not None:
    hidden_states.append(x)
  for layer in backbone.layers:
    x = layer(x, *layer_args)
    if hidden_states is not None:
      hidden_states.append(x)
  x = backbone.norm(x)
  if hidden_states is not None:
    hidden_states.append(x)
  return x


class Attention(nn.Module):

  def __init__(self, cfg: LlamaConfig):
    super().__init__()
    self.cfg = cfg
    h, d, kv = cfg.num_attention_heads, cfg.head_dim, cfg.num_key_value_heads
    self.q_proj = nn.Linear(cfg.hidden_size, h * d, bias=cfg.qkv_bias)
    self.k_proj = nn.Linear(cfg.hidden_size, kv * d, bias=cfg.qkv_bias)
    self.v_proj = nn.Linear(cfg.hidden_size, kv * d, bias=cfg.qkv_bias)
    self.o_proj = nn.Linear(h * d, cfg.hidden_size, bias=cfg.o_bias)
    if cfg.qk_norm:
      self.q_norm = RmsNorm(d, cfg.rms_norm_eps)
      self.k_norm = RmsNorm(d, cfg.rms_norm_eps)

  def forward(self, x: torch.Tensor, angles: torch.Tensor, act_round=None) -> torch.Tensor:
    cfg = self.cfg
    b, t, _ = x.shape  # x: [B, T, hidden]
    h, kv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    rnd = act_round or (lambda y: y)
    q = rnd(self.q_proj(x)).view(b, t, h, d)  # [B, T, H, d]
    k = rnd(self.k_proj(x)).view(b, t, kv, d)  # [B, T, KV, d]
    v = rnd(self.v_proj(x)).view(b, t, kv, d)  # [B, T, KV, d]
    if cfg.qk_norm:  # Qwen3: each head normalized over its d values
      q, k = self.q_norm(q), self.k_norm(k)
    q = apply_rope(q, angles, cfg.rope_interleaved)
    k = rnd(apply_rope(k, angles, cfg.rope_interleaved))  # what a KV cache would hold
    k, v = repeat_kv(k, v, h)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d)  # [B, H, Tq, Tk]
    return rnd(self.o_proj(causal_attention(scores, v, cfg.sliding_window)))  # [B, T, hidden]


class Mlp(nn.Module):

  def __init__(self, cfg: LlamaConfig):
    super().__init__()
    bias = cfg.has_mlp_bias
    self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=bias)
    self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=bias)
    self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=bias)

  def forward(self, x: torch.Tensor, act_round=None) -> torch.Tensor:
    rnd = act_round or (lambda y: y)
    return rnd(self.down_proj(swiglu(rnd(self.gate_proj(x)), rnd(self.up_proj(x)))))


class RmsNorm(nn.Module):

  def __init__(self, size: int, eps: float):
    super().__init__()
    self.weight = nn.Parameter(torch.ones(size))
    self.eps = eps

  def forward(self, x: torch.Tensor) -> torch.Tensor:
    return rms_norm(x, self.weight, self.eps).to(x.dtype)


class DecoderLayer(nn.Module):

  def __init__(self, cfg: LlamaConfig):
    super().__init__()
    self.input_layernorm = RmsNorm(cfg.hidden_size, cfg.rms_norm_eps)
    self.self_attn = Attention(cfg)
    self.post_attention_layernorm = RmsNorm(cfg.hidden_size, cfg.rms_norm_eps)
    self.mlp = Mlp(cfg)

  def forward(self, x, angles, act_round=None):
    x = x + self.self_attn(self.input_layernorm(x), angles, act_round)
    return x + self.mlp(self.post_attention_layernorm(x), act_round)


class Backbone(nn.Module):

  def __init__(self, cfg: LlamaConfig):
    super().__init__()
    self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
    self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
    self.norm = RmsNorm(cfg.hidden_size, cfg.rms_norm_eps)


class HfWeights:
  """Hugging Face tensor names for a module whose state_dict() keys are them and whose `cfg`
  says whether lm_head is tied to the embedding (every reference model here)."""

  def hf_state_dict(self) -> Dict[str, torch.Tensor]:
    """Tensors under their HF names; a tied lm_head is left out, as HF saves it."""
    sd = {k: v.detach() for k, v in self.state_dict().items()}
    if self.cfg.tie_word_embeddings:
      del sd["lm_head.weight"]
    return sd

  def load_hf_state_dict(self, sd: Dict[str, torch.Tensor]) -> None:
    """Loads tensors by HF name, converting to this model's dtype. Missing or unexpected
    names, or wrong shapes, are errors that name the tensor."""
    own = self.state_dict()
    expected = set(own)
    if self.cfg.tie_word_embeddings:
      expected.discard("lm_head.weight")
    given = set(sd)
    if self.cfg.tie_word_embeddings:
      given.discard("lm_head.weight")  # some exporters save the tied copy anyway
    if expected != given:
      raise ValueError(f"tensor names differ: missing {sorted(expected - given)}, "
                       f"unexpected {sorted(given - expected)}")
    with torch.no_grad():
      for name in expected:
        if tuple(sd[name].shape) != tuple(own[name].shape):
          raise ValueError(f"tensor {name}: shape {tuple(sd[name].shape)}, expected "
                           f"{tuple(own[name].shape)}")
        own[name].copy_(sd[name].to(own[name].dtype))


class LlamaForCausalLM(HfWeights, nn.Module):

  def __init__(self, cfg: LlamaConfig):
    super().__init__()
    self.cfg = cfg
    self.model = Backbone(cfg)
    self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
    if cfg.tie_word_embeddings:
      self.lm_head.weight = self.model.embed_tokens.weight

  def forward(self, input_ids: torch.Tensor, hidden_states: Optional[list] = None,
              act_round=None) -> torch.Tensor:
    """input_ids [B, T] at positions 0..T-1 -> logits [B, T, vocab] (parameter dtype).
    When `hidden_states` is a list, appends the embedding output, each layer's output and
    the final-norm output (each [B, T, hidden])."""
    t = input_ids.shape[1]
    angles = rope_angles(self.cfg, torch.arange(t))  # [T, d/2]
    x = self.model.embed_tokens(input_ids)  # [B, T, hidden]
    return self.lm_head(run_backbone(self.model, x, hidden_states, angles, act_round))


def greedy_generate(model: nn.Module, ids: List[int], n_new: int):
  """Greedy continuation recomputing the whole prefix each step (no KV cache, so nothing to
  get wrong). Returns (new tokens, top1 - top2 logit margin at each step)."""
  ids = list(ids)
  tokens, margins = [], []
  with torch.no_grad():
    for _ in range(n_new):
      logits = model(torch.tensor([ids]))[0, -1]
      top2 = torch.topk(logits, 2)
      tok = int(top2.indices[0])
      tokens.append(tok)
      margins.append(float(top2.values[0] - top2.values[1]))
      ids.append(tok)
  return tokens, margins


# ----------------------------------------------------------------------------------------------
# safetensors: 8-byte little-endian header length, JSON header, then raw little-endian data.

_ST_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
              torch.float64: "F64", torch.int64: "I64", torch.int32: "I32"}
_ST_NUMPY = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
             "I32": np.int32, "BF16": np.int16}


def _tensor_bytes(t: torch.Tensor) -> bytes:
  t = t.detach().contiguous().cpu()
  if t.dtype == torch.bfloat16:
    t = t.view(torch.int16)  # numpy has no bfloat16; the bits are what we store
  arr = t.numpy()
  return arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()


def write_safetensors(path: str, tensors: Dict[str, torch.Tensor],
                      metadata: Optional[Dict[str, str]] = None) -> None:
  """Writes tensors sorted by name; the header is padded with spaces to a multiple of 8 so
  the data section starts aligned."""
  header = {}
  blobs = []
  offset = 0
  for name in sorted(tensors):
    t = tensors[name]
    if t.dtype not in _ST_DTYPES:
      raise ValueError(f"{path}: tensor {name} has dtype {t.dtype}, not storable")
    data = _tensor_bytes(t)
    header[name] = {"dtype": _ST_DTYPES[t.dtype], "shape": list(t.shape),
                    "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
  header["__metadata__"] = dict(metadata or {"format": "pt"})
  text = json.dumps(header, separators=(",", ":")).encode("utf-8")
  text += b" " * (-len(text) % 8)
  with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for data in blobs:
      f.write(data)


def read_safetensors(path: str) -> Dict[str, torch.Tensor]:
  with open(path, "rb") as f:
    raw = f.read()
  if len(raw) < 8:
    raise ValueError(f"{path}: {len(raw)} bytes, shorter than the 8-byte header length")
  (n,) = struct.unpack("<Q", raw[:8])
  if 8 + n > len(raw):
    raise ValueError(f"{path}: header length {n} runs past the end ({len(raw)} bytes)")
  header = json.loads(raw[8:8 + n])
  base = 8 + n
  out = {}
  for name, info in header.items():
    if name == "__metadata__":
      continue
    if info["dtype"] not in _ST_NUMPY:
      raise ValueError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
    dtype = np.dtype(_ST_NUMPY[info["dtype"]]).newbyteorder("<")
    begin, end = info["data_offsets"]
    count = math.prod(info["shape"])
    if end - begin != count * dtype.itemsize or base + end > len(raw):
      raise ValueError(f"{path}: tensor {name} has data_offsets [{begin}, {end}], expected "
                       f"{count * dtype.itemsize} bytes within the {len(raw) - base}-byte data")
    arr = np.frombuffer(raw, dtype=dtype, count=count, offset=base + begin)
    t = torch.from_numpy(arr.astype(dtype.newbyteorder("="))).reshape(info["shape"])
    out[name] = t.view(torch.bfloat16) if info["dtype"] == "BF16" else t
  return out


# ----------------------------------------------------------------------------------------------
# Hugging Face folders

_TORCH_DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16",
                      torch.bfloat16: "bfloat16"}


def write_hf_folder(folder: str, model: nn.Module, dtype: torch.dtype,
                    extra_files: Optional[Dict[str, str]] = None) -> None:
  """config.json + model.safetensors (weights rounded to `dtype`) + any extra text files, for
  any reference model: its `cfg` is a dataclass with `torch_dtype` and to_hf_dict(), and it
  has hf_state_dict() (HfWeights)."""
  os.makedirs(folder, exist_ok=True)
  cfg = dataclasses.replace(model.cfg, torch_dtype=_TORCH_DTYPE_NAMES[dtype])
  with open(os.path.join(folder, "config.json"), "w") as f:
    json.dump(cfg.to_hf_dict(), f, indent=2)
    f.write("\n")
  tensors = {k: v.to(dtype) for k, v in model.hf_state_dict().items()}
  write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
  for name, text in (extra_files or {}).items():
    with open(os.path.join(folder, name), "w") as f:
      f.write(text)


def load_hf_folder(folder: str, compute_dtype: torch.dtype = torch.float32,
                   model_for=None) -> nn.Module:
  """Loads config.json and model.safetensors (or a sharded model.safetensors.index.json) and
  returns the model with weights converted exactly to `compute_dtype`. `model_for(config
  dict)` builds the model (default: this file's LlamaForCausalLM)."""
  with open(os.path.join(folder, "config.json")) as f:
    config = json.load(f)
  if model_for is None:
    model_for = lambda d: LlamaForCausalLM(LlamaConfig.from_hf_dict(d))
  index = os.path.join(folder, "model.safetensors.index.json")
  if os.path.exists(index):
    with open(index) as f:
      shards = sorted(set(json.load(f)["weight_map"].values()))
  else:
    shards = ["model.safetensors"]
  sd = {}
  for shard in shards:
    sd.update(read_safetensors(os.path.join(folder, shard)))
  model = model_for(config).to(compute_dtype)
  model.load_hf_state_dict(sd)
  model.eval()
  return model
