#!/usr/bin/python3
"""Small Llama-shaped ONNX exports for Kite's ONNX import tests, made at test time.

  make_onnx_fixture.py OUT_FOLDER [--hidden 64 --layers 2 ...]

writes into OUT_FOLDER (next to each other, as a user would have them):
  config.json, model.safetensors     the weights as a Hugging Face folder (tools/llama_reference.py)
  tokenizer.json ...                 copied from --tokenizer (default: models/demo)
  model.onnx                         torch.onnx.export of the model without a KV cache:
                                     input_ids [batch, sequence] -> logits
  with_past/model.onnx (+ tokenizer) the Optimum-style export: input_ids, attention_mask,
                                     position_ids, past_key_values.N.key/.value [b, kv, past, d]
                                     -> logits, present.N.key/.value (one graph serves the
                                     prompt, with past = 0, and every decode step)
  ort/model.onnx (+ tokenizer)       with_past with RoPE as ONNX Runtime's com.microsoft
                                     RotaryEmbedding over half-width cos/sin caches
  gqa/model.onnx (+ tokenizer)       with_past with attention as ONNX Runtime's com.microsoft
                                     GroupQueryAttention (cache and RoPE inside it)
  genai/model.onnx (+ tokenizer)     gqa with every residual fused into the next norm (ONNX
                                     Runtime's SimplifiedLayerNormalization and
                                     SkipSimplifiedLayerNormalization): ORT GenAI's layout
  int4/model.onnx (+ tokenizer)      with_past with its projections in ONNX Runtime's 4-bit
                                     com.microsoft MatMulNBits (ORT GenAI's int4 form)
  sdpa/model.onnx (+ tokenizer)      the same interface written as newer stacks export it:
                                     q and k each scaled by d^-1/4 before their product (torch
                                     2's decomposition of scaled_dot_product_attention), the
                                     causal mask from torch.triu (Trilu), cos/sin gathered from
                                     cached tables by position_ids (transformers 4.31-4.35)
  external/model.onnx + model.onnx.data   the no-cache export with its weights in an external
                                     data file (as torch writes models over 2 GB)

The modules below are written from the description of Hugging Face's LlamaForCausalLM (eager
attention): RMSNorm as pow/mean/rsqrt, rotate-half RoPE from an inv_freq buffer and
position_ids, repeat_kv by expand + reshape, an additive causal mask built from attention_mask,
softmax in float32. That is what makes the exported graph decomposed the way real exports are:
Kite must fuse it back. The weights are random (seeded), from tools/llama_reference.py's model.
"""

import argparse
import math
import os
import shutil
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_reference as ref  # noqa: E402
from onnx_protobuf import move_to_external_data, quantize_to_matmulnbits  # noqa: E402


class RmsNorm(nn.Module):

  def __init__(self, weight: torch.Tensor, eps: float):
    super().__init__()
    self.weight = nn.Parameter(weight.clone())
    self.eps = eps

  def forward(self, x):
    variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(variance + self.eps)
    return self.weight * x


def rotate_half(x):
  half = x.shape[-1] // 2
  return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class OrtRotary(torch.autograd.Function):
  """Rotate-half RoPE from half-width cos/sin caches indexed by position_ids, exported as ONNX
  Runtime's com.microsoft RotaryEmbedding (as ORT GenAI's models use it)."""

  @staticmethod
  def forward(ctx, x, position_ids, cos_cache, sin_cache):
    cos = torch.cat((cos_cache[position_ids],) * 2, dim=-1).unsqueeze(1)  # [b, 1, t, d]
    sin = torch.cat((sin_cache[position_ids],) * 2, dim=-1).unsqueeze(1)
    return x * cos + rotate_half(x) * sin

  @staticmethod
  def symbolic(g, x, position_ids, cos_cache, sin_cache):
    return g.op("com.microsoft::RotaryEmbedding", x, position_ids, cos_cache, sin_cache,
                interleaved_i=0)


class OrtGroupQueryAttention(torch.autograd.Function):
  """Causal GQA with the cache and rotate-half RoPE inside, exported as ONNX Runtime's
  com.microsoft GroupQueryAttention (ORT GenAI's form): q [b, t, h*d], k and v [b, t, kv*d], the
  past [b, kv, past, d], seqlens_k [b] = total - 1, the total length, half-width cos/sin caches."""

  @staticmethod
  def forward(ctx, q, k, v, past_k, past_v, seqlens_k, total, cos_cache, sin_cache, h, kv):
    b, t, _ = q.shape
    d = q.shape[-1] // h
    past = past_k.shape[2]
    positions = torch.arange(past, past + t)
    cos = torch.cat((cos_cache[positions],) * 2, dim=-1)  # [t, d]
    sin = torch.cat((sin_cache[positions],) * 2, dim=-1)
    q = q.view(b, t, h, d).transpose(1, 2)
    k = k.view(b, t, kv, d).transpose(1, 2)
    v = v.view(b, t, kv, d).transpose(1, 2)
    q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
    s = k.shape[2]
    rk = k.repeat_interleave(h // kv, dim=1)
    rv = v.repeat_interleave(h // kv, dim=1)
    scores = torch.matmul(q, rk.transpose(2, 3)) / math.sqrt(d)
    allowed = torch.arange(s)[None, :] <= (past + torch.arange(t))[:, None]
    scores = scores.masked_fill(~allowed, float("-inf"))
    out = torch.matmul(torch.softmax(scores, dim=-1), rv).transpose(1, 2).reshape(b, t, h * d)
    return out, k, v

  @staticmethod
  def symbolic(g, q, k, v, past_k, past_v, seqlens_k, total, cos_cache, sin_cache, h, kv):
    return g.op("com.microsoft::GroupQueryAttention", q, k, v, past_k, past_v, seqlens_k, total,
                cos_cache, sin_cache, num_heads_i=h, kv_num_heads_i=kv, do_rotary_i=1,
                rotary_interleaved_i=0, outputs=3)


class OrtNorm(torch.autograd.Function):
  """RMSNorm exported as ONNX Runtime's SimplifiedLayerNormalization (its default domain)."""

  @staticmethod
  def forward(ctx, x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight

  @staticmethod
  def symbolic(g, x, weight, eps):
    return g.op("SimplifiedLayerNormalization", x, weight, epsilon_f=eps, axis_i=-1)


class OrtSkipNorm(torch.autograd.Function):
  """RMSNorm of x + skip, with the sum (the new residual stream) as a fourth output: ONNX
  Runtime's com.microsoft SkipSimplifiedLayerNormalization, as ORT GenAI fuses each residual."""

  @staticmethod
  def forward(ctx, x, skip, weight, eps):
    total = x + skip
    inv = torch.rsqrt(total.pow(2).mean(-1, keepdim=True) + eps)
    return total * inv * weight, torch.zeros_like(inv), inv, total

  @staticmethod
  def symbolic(g, x, skip, weight, eps):
    return g.op("com.microsoft::SkipSimplifiedLayerNormalization", x, skip, weight,
                epsilon_f=eps, outputs=4)


class Attention(nn.Module):

  def __init__(self, cfg: ref.LlamaConfig, src: ref.Attention, style: str):
    super().__init__()
    self.cfg = cfg
    self.style = style
    self.q_proj, self.k_proj, self.v_proj, self.o_proj = (src.q_proj, src.k_proj, src.v_proj,
                                                          src.o_proj)

  def forward(self, x, rope, mask, past_k=None, past_v=None):
    cfg = self.cfg
    b, t, _ = x.shape
    h, kv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    if self.style in ("gqa", "genai"):  # `mask`: seqlens_k, the total length and the caches
      out, pk, pv = OrtGroupQueryAttention.apply(self.q_proj(x), self.k_proj(x), self.v_proj(x),
                                                 past_k, past_v, *mask, h, kv)
      return self.o_proj(out), (pk, pv)
    q = self.q_proj(x).view(b, t, h, d).transpose(1, 2)  # [b, h, t, d]
    k = self.k_proj(x).view(b, t, kv, d).transpose(1, 2)  # [b, kv, t, d]
    v = self.v_proj(x).view(b, t, kv, d).transpose(1, 2)
    q, k = rope(q), rope(k)
    if past_k is not None:
      k = torch.cat([past_k, k], dim=2)  # [b, kv, past + t, d]
      v = torch.cat([past_v, v], dim=2)
    present = (k, v)
    rep = h // kv
    s = k.shape[2]
    k = k[:, :, None, :, :].expand(b, kv, rep, s, d).reshape(b, h, s, d)
    v = v[:, :, None, :, :].expand(b, kv, rep, s, d).reshape(b, h, s, d)
    if self.style == "sdpa":
      scale = math.sqrt(1 / math.sqrt(d))
      scores = torch.matmul(q * scale, k.transpose(2, 3) * scale)
    else:
      scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d)  # [b, h, t, s]
    scores = scores + mask
    probs = nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    out = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, h * d)
    return self.o_proj(out), present


class Layer(nn.Module):

  def __init__(self, cfg: ref.LlamaConfig, src: ref.DecoderLayer, act: str, style: str):
    super().__init__()
    self.act = nn.functional.silu if act == "silu" else nn.functional.gelu
    self.input_layernorm = RmsNorm(src.input_layernorm.weight.detach(), cfg.rms_norm_eps)
    self.self_attn = Attention(cfg, src.self_attn, style)
    self.post_attention_layernorm = RmsNorm(src.post_attention_layernorm.weight.detach(),
                                            cfg.rms_norm_eps)
    self.mlp = src.mlp  # gate/up/down Linear; silu(gate) * up exports as Sigmoid, Mul, Mul

  def forward(self, x, rope, mask, past_k=None, past_v=None):
    a, present = self.self_attn(self.input_layernorm(x), rope, mask, past_k, past_v)
    x = x + a
    n = self.post_attention_layernorm(x)
    g, u = self.mlp.gate_proj(n), self.mlp.up_proj(n)
    return x + self.mlp.down_proj(self.act(g) * u), present


class HfStyleLlama(nn.Module):
  """forward(input_ids[, attention_mask, position_ids, past k0, v0, k1, v1, ...])."""

  def __init__(self, model: ref.LlamaForCausalLM, with_past: bool, act: str = "silu",
               style: str = "eager"):
    super().__init__()
    cfg = model.cfg
    self.cfg = cfg
    self.with_past = with_past
    self.embed_tokens = model.model.embed_tokens
    self.style = style
    self.layers = nn.ModuleList(Layer(cfg, l, act, style) for l in model.model.layers)
    self.norm = RmsNorm(model.model.norm.weight.detach(), cfg.rms_norm_eps)
    self.lm_head = model.lm_head
    d = cfg.head_dim
    inv_freq = 1.0 / (cfg.rope_theta**(torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    self.register_buffer("inv_freq", inv_freq, persistent=False)
    angles = torch.outer(torch.arange(cfg.max_position_embeddings).float(), inv_freq)
    emb = torch.cat((angles, angles), dim=-1)  # [max_positions, d]
    self.register_buffer("cos_cached", emb.cos(), persistent=False)
    self.register_buffer("sin_cached", emb.sin(), persistent=False)
    self.register_buffer("cos_half", angles.cos(), persistent=False)  # [max_positions, d / 2]
    self.register_buffer("sin_half", angles.sin(), persistent=False)

  def causal_mask(self, attention_mask, t, past):
    # [b, 1, t, past + t]: 0 where a query may look, the dtype's minimum elsewhere.
    low = torch.finfo(torch.float32).min
    if self.style == "sdpa":
      mask = torch.triu(torch.full((t, t + past), low), diagonal=past + 1)
      b = attention_mask.shape[0]
      padding = attention_mask[:, None, None, :].expand(b, 1, t, t + past).eq(0)
      return mask[None, None, :, :].expand(b, 1, t, t + past).masked_fill(padding, low)
    mask = torch.full((t, t), low)
    cond = torch.arange(t)
    mask = mask.masked_fill(cond < (cond + 1).view(t, 1), 0.0)
    mask = torch.cat([torch.zeros(t, past), mask], dim=-1)
    b = attention_mask.shape[0]
    mask = mask[None, None, :, :].expand(b, 1, t, t + past)
    padding = 1.0 - attention_mask[:, None, None, :].expand(b, 1, t, t + past).to(torch.float32)
    padding = padding.masked_fill(padding.to(torch.bool), low)
    return mask + padding

  def forward(self, input_ids, attention_mask=None, position_ids=None, *past):
    b, t = input_ids.shape
    past_len = past[0].shape[2] if past else 0
    if attention_mask is None:
      attention_mask = torch.ones(b, t + past_len, dtype=torch.int64)
    if position_ids is None:
      position_ids = torch.arange(past_len, past_len + t).unsqueeze(0).expand(b, t)
    if self.style in ("ort", "gqa", "genai"):
      rope = lambda z: OrtRotary.apply(z, position_ids, self.cos_half, self.sin_half)
    elif self.style == "sdpa":
      cos, sin = self.cos_cached[position_ids], self.sin_cached[position_ids]  # [b, t, d]
    else:
      freqs = (self.inv_freq[None, :, None].expand(b, -1, 1) @ position_ids[:, None, :].float())
      emb = torch.cat((freqs.transpose(1, 2), freqs.transpose(1, 2)), dim=-1)  # [b, t, d]
      cos, sin = emb.cos(), emb.sin()
    if self.style not in ("ort", "gqa", "genai"):
      cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # [b, 1, t, d]
      rope = lambda z: z * cos + rotate_half(z) * sin
    mask = self.causal_mask(attention_mask, t, past_len)
    if self.style in ("gqa", "genai"):
      seqlens_k = (attention_mask.sum(-1) - 1).to(torch.int32)
      total = attention_mask[0].sum().to(torch.int32)
      mask = (seqlens_k, total, self.cos_half, self.sin_half)
    x = self.embed_tokens(input_ids)
    presents = []
    if self.style == "genai":
      return self.genai_blocks(x, rope, mask, past)
    for i, layer in enumerate(self.layers):
      pk, pv = (past[2 * i], past[2 * i + 1]) if past else (None, None)
      x, present = layer(x, rope, mask, pk, pv)
      presents += present
    logits = self.lm_head(self.norm(x))
    return (logits, *presents) if self.with_past else logits


  def genai_blocks(self, x, rope, mask, past):
    """The blocks as ORT GenAI lays them out: each residual Add fused into the next norm."""
    eps = self.cfg.rms_norm_eps
    residual, pending, presents = x, None, []
    for i, layer in enumerate(self.layers):
      w = layer.input_layernorm.weight
      if pending is None:
        normed = OrtNorm.apply(residual, w, eps)
      else:
        normed, _, _, residual = OrtSkipNorm.apply(pending, residual, w, eps)
      a, present = layer.self_attn(normed, rope, mask, past[2 * i], past[2 * i + 1])
      presents += present
      normed, _, _, residual = OrtSkipNorm.apply(a, residual, layer.post_attention_layernorm.weight, eps)
      pending = layer.mlp.down_proj(nn.functional.silu(layer.mlp.gate_proj(normed)) * layer.mlp.up_proj(normed))
    normed, _, _, _ = OrtSkipNorm.apply(pending, residual, self.norm.weight, eps)
    return (self.lm_head(normed), *presents)


def export(model: ref.LlamaForCausalLM, path: str, with_past: bool, act: str = "silu",
           style: str = "eager") -> None:
  cfg = model.cfg
  wrapper = HfStyleLlama(model, with_past, act, style).eval()
  t = 3
  ids = torch.tensor([[1, 5, 9]])
  if not with_past:
    names, outputs = ["input_ids"], ["logits"]
    args = (ids,)
    axes = {"input_ids": {0: "batch_size", 1: "sequence_length"},
            "logits": {0: "batch_size", 1: "sequence_length"}}
  else:
    past = 2
    names = ["input_ids", "attention_mask", "position_ids"]
    outputs = ["logits"]
    axes = {"input_ids": {0: "batch_size", 1: "sequence_length"},
            "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
            "position_ids": {0: "batch_size", 1: "sequence_length"},
            "logits": {0: "batch_size", 1: "sequence_length"}}
    kv = torch.zeros(1, cfg.num_key_value_heads, past, cfg.head_dim)
    args = [ids, torch.ones(1, past + t, dtype=torch.int64), torch.arange(past, past + t)[None]]
    for i in range(cfg.num_hidden_layers):
      for part in ("key", "value"):
        names.append(f"past_key_values.{i}.{part}")
        outputs.append(f"present.{i}.{part}")
        axes[names[-1]] = {0: "batch_size", 2: "past_sequence_length"}
        axes[outputs[-1]] = {0: "batch_size", 2: "past_sequence_length + sequence_length"}
        args.append(kv)
    args = tuple(args)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with torch.no_grad():
    try:
      torch.onnx.export(wrapper, args, path, input_names=names, output_names=outputs,
                        dynamic_axes=axes, opset_version=17, do_constant_folding=True,
                        custom_opsets={"com.microsoft": 1})
    except torch.onnx.errors.CheckerError:
      # ONNX Runtime registers SimplifiedLayerNormalization in the default domain, where the
      # ONNX checker does not know it; torch has written the file before checking it.
      if style != "genai":
        raise


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("out")
  parser.add_argument("--vocab", type=int, default=0, help="0: the tokenizer's size")
  parser.add_argument("--hidden", type=int, default=64)
  parser.add_argument("--ffn", type=int, default=160)
  parser.add_argument("--layers", type=int, default=2)
  parser.add_argument("--heads", type=int, default=4)
  parser.add_argument("--kv-heads", type=int, default=2)
  parser.add_argument("--theta", type=float, default=10000.0)
  parser.add_argument("--eps", type=float, default=1e-5)
  parser.add_argument("--seed", type=int, default=7)
  parser.add_argument("--tokenizer", default=os.path.join(
      os.path.dirname(os.path.abspath(__file__)), "..", "models", "demo"))
  parser.add_argument("--only", choices=("all", "nokv", "past"), default="all",
                      help="which exports to write (a 1B shape: nokv alone)")
  parser.add_argument("--tied", action="store_true",
                      help="lm_head shares the embedding's weights (tie_word_embeddings)")
  parser.add_argument("--onnx-only", action="store_true",
                      help="no HF folder or tokenizer beside the export (a 1B shape in /tmp)")
  parser.add_argument("--act", choices=("silu", "gelu"), default="silu",
                      help="gelu: a model Kite's Llama import must refuse (GeGLU)")
  args = parser.parse_args()

  tokenizer_files = [f for f in ("tokenizer.json", "tokenizer_config.json",
                                 "special_tokens_map.json", "tokenizer.model")
                     if os.path.exists(os.path.join(args.tokenizer, f))]
  vocab = args.vocab
  if vocab == 0:
    with open(os.path.join(args.tokenizer, "config.json")) as f:
      vocab = ref.json.load(f)["vocab_size"]
  cfg = ref.LlamaConfig(vocab_size=vocab, hidden_size=args.hidden, intermediate_size=args.ffn,
                        num_hidden_layers=args.layers, num_attention_heads=args.heads,
                        num_key_value_heads=args.kv_heads, head_dim=args.hidden // args.heads,
                        rms_norm_eps=args.eps, rope_theta=args.theta,
                        tie_word_embeddings=args.tied)
  torch.manual_seed(args.seed)
  model = ref.LlamaForCausalLM(cfg)
  with torch.no_grad():
    for name, p in model.named_parameters():
      if name.endswith("norm.weight"):
        p.copy_(1.0 + 0.1 * torch.randn_like(p))
      else:
        p.copy_(torch.randn_like(p) * (0.5 / math.sqrt(p.shape[-1])))
  model.eval()

  def with_tokenizer(folder):
    os.makedirs(folder, exist_ok=True)
    for name in tokenizer_files:
      shutil.copy(os.path.join(args.tokenizer, name), os.path.join(folder, name))

  if args.onnx_only:
    tokenizer_files = []
  else:
    ref.write_hf_folder(args.out, model, torch.float32)
  with_tokenizer(args.out)
  if args.only in ("all", "nokv"):
    export(model, os.path.join(args.out, "model.onnx"), with_past=False, act=args.act)
  if args.only == "all":
    with_tokenizer(os.path.join(args.out, "external"))
    move_to_external_data(os.path.join(args.out, "model.onnx"),
                          os.path.join(args.out, "external", "model.onnx"), "model.onnx.data")
  if args.only in ("all", "past"):
    folder = os.path.join(args.out, "with_past")
    with_tokenizer(folder)
    export(model, os.path.join(folder, "model.onnx"), with_past=True, act=args.act)
  if args.only == "all":
    folder = os.path.join(args.out, "int4")
    with_tokenizer(folder)
    quantize_to_matmulnbits(os.path.join(args.out, "with_past", "model.onnx"),
                            os.path.join(folder, "model.onnx"))
    for style in ("sdpa", "ort", "gqa", "genai"):
      folder = os.path.join(args.out, style)
      with_tokenizer(folder)
      export(model, os.path.join(folder, "model.onnx"), with_past=True, style=style)


if __name__ == "__main__":
  main()
