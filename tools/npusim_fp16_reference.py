"""The FP16 path of the npusim numerics (docs/npusim.md §11, "npusim numerics v1.1") in numpy and
Python floats, written from the specification's text: the golden of npusim_ops_test's Fp16*
tests. Imported by npusim_reference.py, whose --cases output carries these cases too.

§11's rule: inputs are f16 values; each op is computed in f64 in the stated order, sums of f16
values times integer weight codes (or of f16 products) exactly, in Python ints of units 2^-24
(or 2^-48 for products of two f16 values); the result is rounded f64 -> f32 -> f16, ties to even.
Transcendentals are Python's math functions (the platform libm, as the C++ std:: ones).
"""
import math

import numpy as np


def f16(y):
    """§11's output rounding: f64 -> f32 -> f16, each ties to even (overflow: ±inf)."""
    with np.errstate(over="ignore"):
        return float(np.float16(np.float32(y)))


def fixed24(x):
    """An f16 value times 2^24: an exact integer."""
    return int(math.ldexp(float(x), 24))


def matmul(x, codes, scales, bias=None, lpbq=None):
    """x [T, K] f16; codes [N, K] signed ints; scales [N] f32 (LPBQ: channel scales, lpbq =
    (block, mult [N, K / block]))."""
    T, K = x.shape
    N = codes.shape[0]
    w = [[int(codes[n, k]) * (int(lpbq[1][n, k // lpbq[0]]) if lpbq else 1) for k in range(K)]
         for n in range(N)]
    y = np.zeros((T, N))
    for t in range(T):
        xf = [fixed24(v) for v in x[t]]
        for n in range(N):
            acc = sum(a * b for a, b in zip(xf, w[n]))
            v = math.ldexp(float(acc), -24) * float(scales[n])
            if bias is not None:
                v += float(bias[n])
            y[t, n] = f16(v)
    return y


def add_mul(op, a, b):
    """NumPy broadcasting; the f64 sum or product of two f16 values."""
    a64, b64 = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    out = a64 + b64 if op == "add" else a64 * b64
    return np.vectorize(f16)(out)


def act(f, x):
    if f == "silu":
        return x / (1.0 + math.exp(-x))
    if f == "gelu_tanh":
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + math.tanh(c * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


def activation(f, x):
    return np.array([f16(act(f, float(v))) for v in x.ravel()]).reshape(x.shape)


def gated(f, g, u):
    return np.array([f16(act(f, float(a)) * float(b))
                     for a, b in zip(g.ravel(), u.ravel())]).reshape(g.shape)


def rms_norm(x, w, eps):
    D = x.shape[-1]
    rows = x.reshape(-1, D)
    out = np.zeros(rows.shape)
    for r in range(rows.shape[0]):
        squares = sum(fixed24(v) * fixed24(v) for v in rows[r])
        mean = math.ldexp(float(squares), -48) / float(D)
        rs = 1.0 / math.sqrt(mean + float(np.float32(eps)))
        for d in range(D):
            out[r, d] = f16(float(rows[r, d]) * rs * float(w[d]))
    return out.reshape(x.shape)


def rope(x, positions, inv_freq, neox, factor=1.0):
    T, H, D = x.shape
    half = len(inv_freq)
    out = x.astype(np.float64).copy()
    for t in range(T):
        for i in range(half):
            angle = float(positions[t]) * inv_freq[i]
            # The decomposed form (decompose_rope): f16 table entries, products and sum in f16.
            c, s = f16(math.cos(angle) * factor), f16(math.sin(angle) * factor)
            i0, i1 = (i, i + half) if neox else (2 * i, 2 * i + 1)
            for h in range(H):
                x0, x1 = float(x[t, h, i0]), float(x[t, h, i1])
                out[t, h, i0] = f16(f16(x0 * c) - f16(x1 * s))
                out[t, h, i1] = f16(f16(x1 * c) + f16(x0 * s))
    return out


def attention(q, k, v, positions, scale, window):
    """q [T, Hq, D] f16; k, v [P, Hkv, D]: one sequence's cache, position j at row j."""
    T, Hq, D = q.shape
    group = Hq // k.shape[1]
    out = np.zeros(q.shape)
    for t in range(T):
        pos = int(positions[t])
        first = pos - window + 1 if window > 0 and pos >= window else 0
        for h in range(Hq):
            kv = h // group
            qf = [fixed24(a) for a in q[t, h]]
            s = [math.ldexp(float(sum(a * fixed24(b) for a, b in zip(qf, k[j, kv]))), -48) *
                 float(scale) for j in range(first, pos + 1)]
            top = max(s)
            e = [math.exp(sj - top) for sj in s]
            total = 0.0
            for ej in e:
                total += ej
            for d in range(D):
                acc = 0.0
                for i, ej in enumerate(e):
                    acc += ej * float(v[first + i, kv, d])
                out[t, h, d] = f16(acc / total)
    return out


def values(rng, shape, spread=1.0):
    """Random f16 values (normal), with a few of f16's awkward ones mixed in."""
    x = (rng.standard_normal(shape) * spread).astype(np.float16)
    flat = x.reshape(-1)
    awkward = [0.0, -0.0, 6.1035e-05, 5.96e-08, 1000.0, -0.33325]
    for i, a in enumerate(awkward[: flat.size // 4]):
        flat[(i * 7) % flat.size] = a
    return x


def cases(rng):
    """§11's cases for npusim_ops_test: awkward shapes (K odd, one token, odd heads)."""
    out = []
    # JSON has no infinity: an f16 overflow (|y| past 65504) is written "inf" or "-inf".
    L = lambda a: [float(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")
                   for v in np.asarray(a, dtype=np.float64).ravel()]
    for name, wbits, T, K, N, block, with_bias in [
        ("fp16_w8_k77", 8, 3, 77, 5, 0, False), ("fp16_w4_k33_bias", 4, 1, 33, 9, 0, True),
        ("fp16_lpbq16", 4, 2, 64, 6, 16, False), ("fp16_w8_k3000", 8, 2, 3000, 3, 0, True)]:
        lo, hi = -(1 << (wbits - 1)), (1 << (wbits - 1)) - 1
        codes = rng.integers(lo, hi + 1, size=(N, K))
        scales = (rng.uniform(0.5, 2.0, N) / (hi * 8)).astype(np.float32)
        mult = rng.integers(1, 16, size=(N, K // block)) if block else None
        bias = rng.normal(0, 1, N).astype(np.float32) if with_bias else None
        x = values(rng, (T, K), 2.0)
        y = matmul(x, codes, scales, bias, (block, mult) if block else None)
        out.append({"op": "fp16_matmul", "name": name, "x": L(x), "shape": [T, K, N],
                    "codes": codes.ravel().tolist(), "scales": L(scales), "block": block,
                    "mults": mult.ravel().tolist() if block else [],
                    "bias": L(bias) if with_bias else [], "expect": L(y)})
    for name, op, ashape, bshape in [("fp16_add_rows", "add", [3, 17], [3, 17]),
                                     ("fp16_add_broadcast", "add", [2, 5, 7], [5, 1]),
                                     ("fp16_mul_broadcast", "mul", [4, 9], [1, 9]),
                                     ("fp16_mul_big", "mul", [3, 11], [3, 11])]:
        a, b = values(rng, ashape, 40.0 if "big" in name else 1.0), values(rng, bshape, 8.0)
        out.append({"op": "fp16_" + op, "name": name, "a": L(a), "a_shape": ashape, "b": L(b),
                    "b_shape": bshape, "expect": L(add_mul(op, a, b))})
    for f in ["silu", "gelu_tanh", "gelu_erf"]:
        x = values(rng, [301], 4.0)
        out.append({"op": "fp16_activation", "name": "fp16_" + f, "function": f, "x": L(x),
                    "expect": L(activation(f, x))})
    for f in ["silu", "gelu_tanh"]:
        g, u = values(rng, [3, 37], 3.0), values(rng, [3, 37], 2.0)
        out.append({"op": "fp16_gated", "name": "fp16_gated_" + f, "function": f, "g": L(g),
                    "u": L(u), "expect": L(gated(f, g, u))})
    for name, rows, D, spread in [("fp16_rms_d64", 3, 64, 1.0), ("fp16_rms_d129_big", 2, 129, 300.0),
                                  ("fp16_rms_tiny", 1, 16, 1e-3)]:
        x = values(rng, [rows, D], spread)
        w = rng.normal(1, 0.2, D).astype(np.float32)
        eps = 1e-5
        out.append({"op": "fp16_rms_norm", "name": name, "x": L(x), "shape": [rows, D],
                    "w": L(w), "eps": eps, "expect": L(rms_norm(x, w, eps))})
    for name, T, H, D, rotary, neox, positions in [
        ("fp16_rope_neox", 2, 3, 16, 16, True, [0, 4097]),
        ("fp16_rope_interleaved_partial", 3, 1, 12, 8, False, [5, 6, 30000])]:
        x = values(rng, [T, H, D], 2.0)
        inv = [math.pow(10000.0, -2.0 * i / rotary) for i in range(rotary // 2)]
        out.append({"op": "fp16_rope", "name": name, "x": L(x), "shape": [T, H, D],
                    "rotary_dim": rotary, "neox": neox, "theta": 10000.0,
                    "positions": positions, "expect": L(rope(x, positions, inv, neox))})
    for name, T, Hq, Hkv, D, positions, window in [
        ("fp16_attn_gqa", 2, 6, 2, 16, [7, 8], 0), ("fp16_attn_one", 1, 3, 3, 9, [0], 0),
        ("fp16_attn_window", 2, 4, 2, 32, [10, 11], 4)]:
        P = max(positions) + 1
        q, k, v = values(rng, [T, Hq, D], 2.0), values(rng, [P, Hkv, D], 2.0), values(rng, [P, Hkv, D])
        scale = float(np.float32(1.0 / math.sqrt(D)))
        out.append({"op": "fp16_attention", "name": name, "q": L(q), "q_shape": [T, Hq, D],
                    "k": L(k), "v": L(v), "kv_shape": [P, Hkv, D], "positions": positions,
                    "scale": scale, "window": window,
                    "expect": L(attention(q, k, v, positions, scale, window))})
    return out
