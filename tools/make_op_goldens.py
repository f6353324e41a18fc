#!/usr/bin/python3
"""Writes the op goldens that the `ref` backend is tested against (backends/ref/golden_test.cpp).

Each op's expected output is computed with PyTorch in float64, written from the op's definition
in src/graph/ops.h (not from Kite's code), on random inputs with awkward shapes: K not a
multiple of 32 where the dtype allows, one row, odd sizes, T = 1 and T = 13, GQA ratios 1/2/4,
both rope modes with every scaling, attention over a cache that already holds earlier positions.

Output, per op: testdata/op_goldens/<op>.json (cases: attributes, tensor shapes and dtypes,
offsets into the blob) and <op>.bin (the tensors, little-endian). A case has one or more steps;
each step is one graph run whose inputs and expected output are listed. Run with Debian's
PyTorch:  /usr/bin/python3 tools/make_op_goldens.py
"""

import json
import math
import os
import re

import numpy as np
import torch

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "op_goldens")
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


class Blob:
    """Collects tensors for one op's .bin file and describes them for its .json file."""

    def __init__(self):
        self.parts = []
        self.size = 0

    def add(self, name, tensor, dtype="f32", quantize_to=None):
        tensor = tensor.detach()
        if dtype == "f32":
            raw = tensor.to(torch.float32).numpy().astype("<f4").tobytes()
        elif dtype == "f16":
            raw = tensor.to(torch.float16).numpy().astype("<f2").tobytes()
        elif dtype == "bf16":
            raw = tensor.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
        elif dtype == "i32":
            raw = tensor.to(torch.int32).numpy().astype("<i4").tobytes()
        else:
            raise ValueError(dtype)
        padding = -self.size % 16  # every tensor starts 16-byte aligned, as f32 reads need
        self.parts.append(bytes(padding))
        self.size += padding
        entry = {"name": name, "dtype": dtype, "shape": list(tensor.shape),
                 "offset": self.size, "bytes": len(raw)}
        if quantize_to:
            # The test quantizes this f32 tensor to `quantize_to` before running; the values are
            # chosen to be exactly representable, so the expected output needs no change.
            entry["quantize_to"] = quantize_to
        self.parts.append(raw)
        self.size += len(raw)
        return entry

    def stored(self, tensor, dtype):
        """The values as the C++ side reads them back (rounded to the stored dtype)."""
        if dtype == "f16":
            return tensor.to(torch.float16).to(torch.float64)
        if dtype == "bf16":
            return tensor.to(torch.bfloat16).to(torch.float64)
        return tensor.to(torch.float32).to(torch.float64)


def write(op, cases, blob):
    os.makedirs(OUT_DIR, exist_ok=True)
    manifest = {"op": op, "generator": "tools/make_op_goldens.py", "tolerance": TOLERANCE,
                "cases": cases}
    # One tensor description per line keeps the manifests short and readable.
    text = json.dumps(manifest, indent=1)
    text = re.sub(r"\{\s+(\"name\": [^{}]*?)\s+\}",
                  lambda m: "{" + " ".join(m.group(1).split()) + "}", text)
    text = re.sub(r"\[\s+([-0-9.,\s]*?)\s+\]",
                  lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
    with open(os.path.join(OUT_DIR, op + ".json"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(OUT_DIR, op + ".bin"), "wb") as f:
        for part in blob.parts:
            f.write(part)


def rand(*shape, scale=1.0):
    return (torch.rand(*shape, dtype=torch.float64) * 2 - 1) * scale


def f32(t):
    """Rounds to f32 (what the C++ side stores), kept in float64 for the computation."""
    return t.to(torch.float32).to(torch.float64)


def representable_q8_0(rows, cols):
    """Values a Q8_0 block (32 int8 · one f16 scale) holds exactly, with |q| = 127 in every block
    so the quantizer recovers the scale: quantize(w) then dequantize(w) gives w back."""
    q = torch.randint(-127, 128, (rows, cols // 32, 32))
    q[:, :, 0] = 127 * torch.where(torch.rand(rows, cols // 32) < 0.5, -1, 1)
    d = 2.0 ** torch.randint(-9, -5, (rows, cols // 32, 1))
    return (q * d).reshape(rows, cols).to(torch.float64)


def representable_q4_0(rows, cols):
    """Values a Q4_0 block holds exactly: d · (q - 8), q in 0..15, the block's largest magnitude
    being -8·d (the quantizer takes d = max / -8), d a power of two so 1/d is exact."""
    q = torch.randint(0, 16, (rows, cols // 32, 32))
    q[:, :, 0] = 0
    d = 2.0 ** torch.randint(-6, -2, (rows, cols // 32, 1))
    return ((q - 8) * d).reshape(rows, cols).to(torch.float64)


def step(inputs, output):
    return {"inputs": inputs, "output": output}


def embedding_goldens():
    blob, cases = Blob(), []
    specs = [("f32_t13", 37, 19, 13, "f32", None), ("f16_t1", 37, 24, 1, "f16", None),
             ("bf16_t13", 11, 8, 13, "bf16", None), ("q8_0_t13", 9, 64, 13, "f32", "q8_0")]
    for name, vocab, dim, tokens, dtype, quantize_to in specs:
        table = representable_q8_0(vocab, dim) if quantize_to else rand(vocab, dim)
        ids = torch.randint(0, vocab, (tokens,))
        ids[0] = vocab - 1
        if tokens > 1:
            ids[1] = 0
        expected = blob.stored(table, dtype)[ids]
        cases.append({"name": name, "attrs": {}, "steps": [step(
            [blob.add("table", table, dtype, quantize_to), blob.add("ids", ids, "i32")],
            blob.add("out", expected))]})
    write("embedding", cases, blob)


def matmul_goldens():
    blob, cases = Blob(), []
    # name, x shape, N, weight dtype, bias dtype, quantize_to
    specs = [("f32_k67", (13, 67), 45, "f32", None, None),
             ("f16_k67_one_row_bias", (1, 67), 45, "f16", "f32", None),
             ("bf16_k33_3d_bias_f16", (2, 5, 33), 7, "bf16", "f16", None),
             ("q8_0_k64_bias", (13, 64), 9, "f32", "f32", "q8_0"),
             ("q4_0_k96", (3, 96), 5, "f32", None, "q4_0"),
             # Not exactly representable: the test quantizes w to each quantized dtype and checks
             # ref against x · dequantize(w)ᵀ, and loosely against this output.
             ("roundtrip_k256", (3, 256), 6, "f32", None, None)]
    for name, x_shape, n, w_dtype, bias_dtype, quantize_to in specs:
        k = x_shape[-1]
        x = rand(*x_shape)
        if quantize_to == "q8_0":
            w = representable_q8_0(n, k)
        elif quantize_to == "q4_0":
            w = representable_q4_0(n, k)
        else:
            w = rand(n, k, scale=0.5)
        inputs = [blob.add("x", x), blob.add("w", w, w_dtype, quantize_to)]
        expected = f32(x) @ blob.stored(w, w_dtype).T
        if bias_dtype:
            bias = rand(n)
            inputs.append(blob.add("bias", bias, bias_dtype))
            expected = expected + blob.stored(bias, bias_dtype)
        cases.append({"name": name, "attrs": {},
                      "steps": [step(inputs, blob.add("out", expected))]})
    write("matmul", cases, blob)


def binary_goldens(op, fn):
    blob, cases = Blob(), []
    shapes = [("same_13x7", (13, 7), (13, 7)), ("row_broadcast", (13, 7), (7,)),
              ("one_row", (1, 5), (1, 5)), ("both_broadcast", (2, 1, 5), (3, 1))]
    for name, a_shape, b_shape in shapes:
        a, b = rand(*a_shape, scale=3), rand(*b_shape, scale=3)
        cases.append({"name": name, "attrs": {}, "steps": [step(
            [blob.add("a", a), blob.add("b", b)], blob.add("out", fn(f32(a), f32(b))))]})
    write(op, cases, blob)


def rms_norm_goldens():
    blob, cases = Blob(), []
    for name, shape, eps, w_dtype in [("f32_13x67", (13, 67), 1e-5, "f32"),
                                      ("f16_weight_one_row", (1, 64), 1e-6, "f16"),
                                      ("bf16_weight_3d", (2, 3, 5), 1e-5, "bf16")]:
        x, w = rand(*shape, scale=4), rand(shape[-1]) + 1
        x64 = f32(x)
        eps32 = float(np.float32(eps))  # the attribute is stored as f32
        expected = x64 / torch.sqrt((x64 * x64).mean(-1, keepdim=True) + eps32)
        expected = expected * blob.stored(w, w_dtype)
        cases.append({"name": name, "attrs": {"eps": eps}, "steps": [step(
            [blob.add("x", x), blob.add("weight", w, w_dtype)], blob.add("out", expected))]})
    write("rms_norm", cases, blob)


def rope_inverse_frequencies(attrs):
    r = attrs["rotary_dim"]
    theta = float(np.float32(attrs["theta"]))
    inv_freq = theta ** (-torch.arange(0, r, 2, dtype=torch.float64) / r)
    scaling = attrs["scaling"]
    if scaling == "linear":
        return inv_freq / attrs["factor"]
    if scaling == "llama3":
        # As in Hugging Face's _compute_llama3_parameters.
        factor, low, high = attrs["factor"], attrs["low_freq_factor"], attrs["high_freq_factor"]
        old = attrs["original_max_position"]
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > old / low, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        return torch.where(medium, smoothed, scaled)
    return inv_freq


def rope_reference(x, positions, attrs):
    """x [T, H, D] float64; rotates the first rotary_dim dims of each head."""
    r = attrs["rotary_dim"]
    angles = positions.to(torch.float64)[:, None] * rope_inverse_frequencies(attrs)[None, :]
    cos, sin = torch.cos(angles)[:, None, :], torch.sin(angles)[:, None, :]  # [T, 1, r/2]
    out = x.clone()
    if attrs["mode"] == "neox":
        first, second = x[..., : r // 2], x[..., r // 2 : r]
        out[..., : r // 2] = first * cos - second * sin
        out[..., r // 2 : r] = first * sin + second * cos
    else:
        first, second = x[..., 0:r:2], x[..., 1:r:2]
        out[..., 0:r:2] = first * cos - second * sin
        out[..., 1:r:2] = first * sin + second * cos
    return out


def rope_goldens():
    blob, cases = Blob(), []
    scalings = {"none": {"scaling": "none"},
                "linear": {"scaling": "linear", "factor": 4.0},
                # With theta 500000 and 16 dims the 8 wavelengths fall in all three llama3 bands.
                "llama3": {"scaling": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                           "high_freq_factor": 4.0, "original_max_position": 8192}}
    for mode in ["neox", "interleaved"]:
        for scaling_name, scaling in scalings.items():
            for tokens in [13, 1]:
                attrs = {"mode": mode, "theta": 500000.0 if scaling_name == "llama3" else 10000.0,
                         "rotary_dim": 16, **scaling}
                x = rand(tokens, 3, 16, scale=2)
                positions = torch.randint(0, 20000, (tokens,))
                positions[0] = 0 if tokens > 1 else 7
                inputs = [blob.add("x", x), blob.add("positions", positions, "i32")]
                out = blob.add("out", rope_reference(f32(x), positions, attrs))
                cases.append({"name": f"{mode}_{scaling_name}_t{tokens}", "attrs": attrs,
                              "steps": [step(inputs, out)]})
        # Partial rotary: 8 of 10 dims turn, the last 2 pass through.
        attrs = {"mode": mode, "theta": 10000.0, "rotary_dim": 8, "scaling": "none"}
        x = rand(5, 2, 10)
        positions = torch.arange(3, 8)
        cases.append({"name": f"{mode}_partial_rotary", "attrs": attrs,
                      "steps": [step([blob.add("x", x), blob.add("positions", positions, "i32")],
                                     blob.add("out", rope_reference(f32(x), positions, attrs)))]})
    write("rope", cases, blob)


def attention_goldens():
    """Cases run in steps over one KV cache: an optional prefix step fills positions 0..P-1,
    then T new tokens at P..P+T-1 attend to everything so far."""
    blob, cases = Blob(), []
    specs = [  # name, Hq, Hkv, D, P, T, cache dtype, page size, scale (None: 1/sqrt(D))
        ("mha_t13_empty_cache", 4, 4, 16, 0, 13, "f32", 4, None),
        ("gqa2_t1_after_21", 4, 2, 16, 21, 1, "f32", 4, None),
        ("gqa4_t13_after_5", 8, 2, 12, 5, 13, "f32", 16, 0.3),
        ("gqa2_t13_after_7_f16_cache", 4, 2, 16, 7, 13, "f16", 4, None),
        ("gqa4_t1_after_30_f16_cache", 4, 1, 8, 30, 1, "f16", 16, None),
    ]
    for name, hq, hkv, d, prefix, tokens, cache_dtype, page_size, scale in specs:
        scale = scale if scale is not None else 1 / math.sqrt(d)
        attrs = {"layer": 0, "scale": scale, "cache_dtype": cache_dtype, "page_size": page_size}
        keys, values, steps = None, None, []
        for start, count in ([(0, prefix)] if prefix else []) + [(prefix, tokens)]:
            q, k, v = rand(count, hq, d, scale=2), rand(count, hkv, d, scale=2), rand(count, hkv, d)
            positions = torch.arange(start, start + count)
            # The cache stores k and v in its dtype; attention reads them back from there.
            k_cached, v_cached = blob.stored(k, cache_dtype), blob.stored(v, cache_dtype)
            keys = k_cached if keys is None else torch.cat([keys, k_cached])
            values = v_cached if values is None else torch.cat([values, v_cached])
            group = hq // hkv
            k_heads = keys.repeat_interleave(group, dim=1)  # [S, Hq, D]
            v_heads = values.repeat_interleave(group, dim=1)
            scores = torch.einsum("thd,shd->hts", f32(q), k_heads) * float(np.float32(scale))
            mask = torch.arange(keys.shape[0])[None, :] > positions[:, None]  # [T, S]
            scores = scores.masked_fill(mask[None], float("-inf"))
            out = torch.einsum("hts,shd->thd", torch.softmax(scores, dim=-1), v_heads)
            steps.append(step([blob.add("q", q), blob.add("k", k), blob.add("v", v),
                               blob.add("positions", positions, "i32")], blob.add("out", out)))
        cases.append({"name": name, "attrs": attrs, "steps": steps})
    write("attention", cases, blob)


def unary_goldens(op, fn, attr_sets):
    blob, cases = Blob(), []
    for attrs_name, attrs in attr_sets:
        for name, shape, scale in [("13x67", (13, 67), 6), ("one_row", (1, 5), 6),
                                   ("3d", (2, 3, 7), 12)]:
            x = rand(*shape, scale=scale)
            cases.append({"name": f"{attrs_name}{name}", "attrs": attrs, "steps": [step(
                [blob.add("x", x)], blob.add("out", fn(f32(x), attrs)))]})
    write(op, cases, blob)


def gelu(x, attrs):
    if attrs["approx"] == "erf":
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def softmax_goldens():
    blob, cases = Blob(), []
    for name, shape, scale in [("13x67", (13, 67), 3), ("one_row", (1, 5), 3),
                               ("large_values", (3, 9), 80)]:
        x = rand(*shape, scale=scale)
        cases.append({"name": name, "attrs": {}, "steps": [step(
            [blob.add("x", x)], blob.add("out", torch.softmax(f32(x), dim=-1)))]})
    write("softmax", cases, blob)


def swiglu_goldens():
    blob, cases = Blob(), []
    for name, shape in [("13x67", (13, 67)), ("one_row", (1, 5)), ("3d", (2, 3, 7))]:
        gate, up = rand(*shape, scale=6), rand(*shape, scale=3)
        g = f32(gate)
        expected = g / (1 + torch.exp(-g)) * f32(up)
        cases.append({"name": name, "attrs": {}, "steps": [step(
            [blob.add("gate", gate), blob.add("up", up)], blob.add("out", expected))]})
    write("swiglu", cases, blob)


def main():
    torch.manual_seed(20240607)
    embedding_goldens()
    matmul_goldens()
    binary_goldens("add", lambda a, b: a + b)
    binary_goldens("mul", lambda a, b: a * b)
    rms_norm_goldens()
    rope_goldens()
    attention_goldens()
    unary_goldens("silu", lambda x, attrs: x / (1 + torch.exp(-x)), [("", {})])
    unary_goldens("gelu", gelu, [("tanh_", {"approx": "tanh"}), ("erf_", {"approx": "erf"})])
    swiglu_goldens()
    softmax_goldens()


if __name__ == "__main__":
    main()
