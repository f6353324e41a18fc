#!/usr/bin/python3
"""The npusim numerics (docs/npusim.md, "npusim numerics v1.1") in plain numpy and Python integers,
written from the specification's text, not from the C++ backend: the golden the backend's op
tests compare against bit for bit.

  npusim_reference.py --cases DIR   writes DIR/cases.json: for every op, random inputs on
                                    awkward shapes (K not a multiple of 32, one token, odd head
                                    counts) and the output codes this file computes
  npusim_reference.py --bounds      prints the measured error of each table against double

Integer arithmetic uses Python ints (numpy object arrays), which never overflow: the spec
states exact sums and 128-bit products, and that is what the C++ must reproduce.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

import npusim_fp16_reference  # §11, the FP16 path

# ----------------------------------------------------------------------------- §3 fixed point


def multiplier(M):
    """§3.1: (m, r) with M ≈ m · 2^-r, |m| in [2^30, 2^31); M = 0 -> (0, 0)."""
    if M == 0.0:
        return 0, 0
    f, e = math.frexp(M)
    m = round_half_even(f * 2.0**31)
    if abs(m) == 2**31:
        m = 2**30 if m > 0 else -(2**30)
        e += 1
    r = 31 - e
    if not 0 <= r <= 120:
        raise ValueError(f"multiplier {M} out of range")
    return m, r


def round_half_even(x):
    """rne of a double, exactly (Python's round is ties to even)."""
    return int(round(x))


def round_shift(a, r):
    """§3.2: floor((a + 2^(r-1)) / 2^r); Python's >> on ints is floor."""
    return a if r == 0 else (a + (1 << (r - 1))) >> r


def div_round(a, b):
    """§3.4: floor((2a + b) / (2b)), b > 0."""
    return (2 * a + b) // (2 * b)


def clamp(q, bits, signed=False):
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return max(lo, min(hi, q))


def requantize(acc, M, offset_y, bits):
    """§3.3 on one integer."""
    m, r = multiplier(M)
    return clamp(round_shift(acc * m, r) - offset_y, bits)


# ----------------------------------------------------------------------------- §2 codes


def quantize(x, scale, offset, bits):
    """§2.5: rne_f32(x / scale) - offset in f32, clamped (NaN -> q_min)."""
    q = np.rint(np.float32(x) / np.float32(scale)).astype(np.float32) - np.float32(offset)
    q = np.where(np.isnan(q), 0.0, q)
    return np.clip(q, 0, (1 << bits) - 1).astype(np.int64)


def dequantize(q, scale, offset):
    return (np.float32(scale) * (np.asarray(q) + offset).astype(np.float32)).astype(np.float32)


# ----------------------------------------------------------------------------- §4 matmul


def matmul(x, w, sx, ox, sw, sy, oy, bits, bias=None, lpbq=None):
    """§4.1 / §4.2. x [T, K] codes, w [N, K] signed codes, sw [N] (LPBQ: channel scales),
    lpbq = (mult [N, K / B], B) or None; bias [N] float or None."""
    T, K = x.shape
    N = w.shape[0]
    wq = w.astype(object)
    if lpbq is not None:
        mult, B = lpbq
        wq = wq * np.repeat(np.asarray(mult, dtype=object), B, axis=1)
    out = np.zeros((T, N), dtype=np.int64)
    xc = x.astype(object) + ox
    for n in range(N):
        b = 0
        if bias is not None:
            b = clamp(round_half_even(float(bias[n]) / (float(sx) * float(sw[n]))), 32, True)
        M = float(sx) * float(sw[n]) / float(sy)
        for t in range(T):
            acc = int(np.dot(xc[t], wq[n])) + b
            out[t, n] = requantize(acc, M, oy, bits)
    return out


# ----------------------------------------------------------------------------- §5 element-wise


def add(a, b, sa, oa, sb, ob, sy, oy, bits):
    Ma, Mb = float(sa) / float(sy), float(sb) / float(sy)
    _, r = multiplier(max(Ma, Mb))
    ma, mb = round_half_even(Ma * 2.0**r), round_half_even(Mb * 2.0**r)
    a, b = np.broadcast_arrays(a, b)
    out = np.zeros(a.shape, dtype=np.int64)
    for i in np.ndindex(a.shape):
        acc = (int(a[i]) + oa) * ma + (int(b[i]) + ob) * mb
        out[i] = clamp(round_shift(acc, r) - oy, bits)
    return out


def mul(a, b, sa, oa, sb, ob, sy, oy, bits):
    M = float(sa) * float(sb) / float(sy)
    a, b = np.broadcast_arrays(a, b)
    out = np.zeros(a.shape, dtype=np.int64)
    for i in np.ndindex(a.shape):
        out[i] = requantize((int(a[i]) + oa) * (int(b[i]) + ob), M, oy, bits)
    return out


# ----------------------------------------------------------------------------- §6 tables


def silu(x):
    return x / (1.0 + math.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def gelu_erf(x):
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


FUNCTIONS = {"silu": silu, "gelu_tanh": gelu_tanh, "gelu_erf": gelu_erf}


def activation_table(f, s_in, o_in, bits):
    """§6.1: L[q] = rne(f(s_in (q + o_in)) / s_L), s_L = s_in / 256."""
    s_L = float(s_in) / 256.0
    return [round_half_even(f(float(s_in) * (q + o_in)) / s_L) for q in range(1 << bits)], s_L


def activation(x, fname, s_in, o_in, in_bits, sy, oy, bits):
    L, s_L = activation_table(FUNCTIONS[fname], s_in, o_in, in_bits)
    M = s_L / float(sy)
    return np.vectorize(lambda q: requantize(L[q], M, oy, bits), otypes=[np.int64])(x)


def gated(g, u, fname, sg, og, g_bits, su, ou, sy, oy, bits):
    """swiglu (silu) and geglu (gelu_tanh): L[g] · (u + o_u), §6.1."""
    L, s_L = activation_table(FUNCTIONS[fname], sg, og, g_bits)
    M = s_L * float(su) / float(sy)
    out = np.zeros(g.shape, dtype=np.int64)
    for i in np.ndindex(g.shape):
        out[i] = requantize(L[int(g[i])] * (int(u[i]) + ou), M, oy, bits)
    return out


EXP_TABLE = None


def exp_table():
    """§6.2: E[z] = rne(2^16 exp(-z / 4096)), z in [0, 65535]."""
    global EXP_TABLE
    if EXP_TABLE is None:
        EXP_TABLE = [round_half_even(65536.0 * math.exp(-z / 4096.0)) for z in range(65536)]
    return EXP_TABLE


def rsqrt_fixed(V):
    """§6.3: (R, p) with rsqrt(V) ≈ R · 2^-30 · 2^(-p/2)."""
    p = (V.bit_length() - 1) & ~1
    j = round_shift(V << 14, p)
    i = j - (1 << 14)
    return round_half_even(2.0**30 / math.sqrt((2**14 + i) / 2.0**14)), p


def rope_cos_sin(p, inv_freq):
    """§6.4."""
    angle = p * inv_freq
    return round_half_even(2.0**30 * math.cos(angle)), round_half_even(2.0**30 * math.sin(angle))


# ----------------------------------------------------------------------------- §7 attention


def attention(q, k, v, positions, scale, window, sq, oq, sk, ok, sv, ov, sy, oy, bits):
    """q [T, Hq, D] codes; k, v [P, Hkv, D]: the whole cache of one sequence (codes), position
    j at row j; positions [T]."""
    T, Hq, D = q.shape
    Hkv = k.shape[1]
    group = Hq // Hkv
    E = exp_table()
    mz, rz = multiplier(float(scale) * float(sq) * float(sk) * 4096.0)
    mo, ro = multiplier(float(sv) / float(sy))
    out = np.zeros(q.shape, dtype=np.int64)
    qc = q.astype(object) + oq
    kc = k.astype(object) + ok
    vc = v.astype(object) + ov
    for t in range(T):
        pos = int(positions[t])
        first = pos - window + 1 if window > 0 and pos >= window else 0
        for h in range(Hq):
            kv = h // group
            a = [int(np.dot(qc[t, h], kc[j, kv])) for j in range(first, pos + 1)]
            top = max(a)
            e = [E[min(round_shift((top - aj) * mz, rz), 65535)] for aj in a]
            S = sum(e)
            for d in range(D):
                n = sum(ej * int(vc[first + i, kv, d]) for i, ej in enumerate(e))
                out[t, h, d] = clamp(div_round(n * mo, S << ro) - oy, bits)
    return out


# ----------------------------------------------------------------------------- §8 RMSNorm


def rms_norm(x, w, eps, sx, ox, sy, oy, bits):
    D = x.shape[-1]
    eps_c = round_half_even(float(np.float32(eps)) / (float(sx) * float(sx)))
    mults = [multiplier(math.sqrt(D) * float(wd) / float(sy) * 2.0**-30) for wd in w]
    rows = x.reshape(-1, D)
    out = np.zeros(rows.shape, dtype=np.int64)
    for row in range(rows.shape[0]):
        xc = [int(q) + ox for q in rows[row]]
        V = sum(c * c for c in xc) + D * eps_c
        if V == 0:
            out[row, :] = clamp(-oy, bits)
            continue
        R, p = rsqrt_fixed(V)
        for d in range(D):
            m, r = mults[d]
            out[row, d] = clamp(round_shift(xc[d] * R * m, r + p // 2) - oy, bits)
    return out.reshape(x.shape)


# ----------------------------------------------------------------------------- §9 RoPE


def rope(x, positions, theta, rotary_dim, neox, sx, ox, sy, oy, bits):
    T, H, D = x.shape
    M = float(sx) / float(sy) * 2.0**-30
    out = np.zeros(x.shape, dtype=np.int64)
    half = rotary_dim // 2
    inv = [math.pow(float(np.float32(theta)), -2.0 * i / rotary_dim) for i in range(half)]
    for t in range(T):
        for i in range(half):
            C, S = rope_cos_sin(int(positions[t]), inv[i])
            i0, i1 = (i, i + half) if neox else (2 * i, 2 * i + 1)
            for h in range(H):
                x0, x1 = int(x[t, h, i0]) + ox, int(x[t, h, i1]) + ox
                out[t, h, i0] = requantize(x0 * C - x1 * S, M, oy, bits)
                out[t, h, i1] = requantize(x0 * S + x1 * C, M, oy, bits)
        for d in range(rotary_dim, D):
            for h in range(H):
                out[t, h, d] = requantize((int(x[t, h, d]) + ox) << 30, M, oy, bits)
    return out


# ----------------------------------------------------------------------------- cases


def encoding(rng, bits, low, high):
    """A calibrated-looking u8/u16 encoding of [low, high] (offset <= 0, 0 exact)."""
    scale = np.float32((high - low) / ((1 << bits) - 1))
    offset = int(np.rint(low / scale))
    return {"scale": float(scale), "offset": min(0, offset), "bits": bits}


def codes(rng, shape, bits):
    return rng.integers(0, 1 << bits, size=shape, dtype=np.int64)


def make_cases(rng):
    cases = []
    enc = lambda bits, lo=-4.0, hi=4.0: encoding(rng, bits, lo, hi)

    # matmul: per-axis s8 and s4, LPBQ, a8 and a16, K not a multiple of 32, one token, a bias.
    for name, bits, wbits, T, K, N, lpbq_block, with_bias in [
        ("a16w8_k77", 16, 8, 3, 77, 5, 0, False),
        ("a8w8_one_token", 8, 8, 1, 300, 7, 0, True),
        ("a16w4_k33", 16, 4, 2, 33, 9, 0, False),
        ("a16_lpbq16", 16, 4, 2, 64, 6, 16, False),
        ("a8_lpbq32_bias", 8, 4, 4, 96, 3, 32, True),
        ("a16w8_k1100", 16, 8, 2, 1100, 3, 0, False),
        ("a16w8_t70_prefill", 16, 8, 70, 40, 37, 0, False),  # two token chunks, an odd tile
        ("a16w8_k5000", 16, 8, 1, 5000, 2, 0, False),  # past one int32 chunk of AVX-512
        ("a16w8_extremes_k9000", 16, 8, 2, 9000, 2, 0, False),  # every product at its largest
    ]:
        ex, ey = enc(bits), enc(bits, -20.0, 30.0)
        lo, hi = -(1 << (wbits - 1)), (1 << (wbits - 1)) - 1
        w = rng.integers(lo, hi + 1, size=(N, K))
        sw = (rng.uniform(0.5, 2.0, N) / (hi * 8)).astype(np.float32)
        x = codes(rng, (T, K), bits)
        if "extremes" in name:  # |x - 32768| = 2^15 and |w| = 2^7: the partial sums' worst case
            x[:] = 0
            w[:] = lo
        mult = rng.integers(1, 16, size=(N, K // lpbq_block)) if lpbq_block else None
        bias = rng.normal(0, 1, N).astype(np.float32) if with_bias else None
        y = matmul(x, w, ex["scale"], ex["offset"], sw, ey["scale"], ey["offset"], bits, bias,
                   (mult, lpbq_block) if lpbq_block else None)
        cases.append({"op": "matmul", "name": name, "x": x.tolist(), "x_enc": ex,
                      "w": w.tolist(), "w_bits": wbits, "w_scales": sw.tolist(),
                      "lpbq_block": lpbq_block, "mult": mult.tolist() if lpbq_block else [],
                      "bias": bias.tolist() if with_bias else [],
                      "y_enc": ey, "shape": [T, K, N], "expect": y.tolist()})

    # add / mul with broadcasting ([T, D] + [D]) and saturation.
    for name, op, bits, ashape, bshape in [
        ("add_a16", "add", 16, (3, 37), (3, 37)), ("add_broadcast_a8", "add", 8, (2, 19), (19,)),
        ("mul_a16", "mul", 16, (5, 11), (5, 11)), ("mul_broadcast_a8", "mul", 8, (1, 40), (40,))]:
        ea, eb, ey = enc(bits), enc(bits, -1.0, 3.0), enc(bits, -3.0, 5.0)
        a, b = codes(rng, ashape, bits), codes(rng, bshape, bits)
        f = add if op == "add" else mul
        y = f(a, b, ea["scale"], ea["offset"], eb["scale"], eb["offset"], ey["scale"],
              ey["offset"], bits)
        cases.append({"op": op, "name": name, "a": a.ravel().tolist(), "a_shape": list(ashape),
                      "b": b.ravel().tolist(), "b_shape": list(bshape), "a_enc": ea,
                      "b_enc": eb, "y_enc": ey, "expect": y.ravel().tolist()})

    # element-wise activations and gated ones.
    for name, fname, bits in [("silu_a16", "silu", 16), ("gelu_tanh_a8", "gelu_tanh", 8),
                              ("gelu_erf_a16", "gelu_erf", 16)]:
        ex, ey = enc(bits, -8.0, 6.0), enc(bits, -0.5, 6.0)
        x = codes(rng, (3, 29), bits)
        y = activation(x, fname, ex["scale"], ex["offset"], bits, ey["scale"], ey["offset"], bits)
        cases.append({"op": "activation", "name": name, "function": fname, "x": x.ravel().tolist(),
                      "x_enc": ex, "y_enc": ey, "expect": y.ravel().tolist()})
    for name, fname, bits in [("swiglu_a16", "silu", 16), ("swiglu_a8", "silu", 8),
                              ("geglu_a16", "gelu_tanh", 16)]:
        eg, eu, ey = enc(bits, -8.0, 6.0), enc(bits, -3.0, 3.0), enc(bits, -10.0, 10.0)
        g, u = codes(rng, (2, 45), bits), codes(rng, (2, 45), bits)
        y = gated(g, u, fname, eg["scale"], eg["offset"], bits, eu["scale"], eu["offset"],
                  ey["scale"], ey["offset"], bits)
        cases.append({"op": "gated", "name": name, "function": fname, "g": g.ravel().tolist(),
                      "u": u.ravel().tolist(), "g_enc": eg, "u_enc": eu, "y_enc": ey,
                      "expect": y.ravel().tolist()})

    # RMSNorm: odd D, one row, an all-zero row (V = eps only), negative weights.
    for name, bits, rows, D, zero_row in [("rms_a16_d37", 16, 3, 37, False),
                                          ("rms_a8_one_row", 8, 1, 64, False),
                                          ("rms_a16_zero_row", 16, 2, 24, True)]:
        ex, ey = enc(bits, -6.0, 6.0), enc(bits, -8.0, 8.0)
        x = codes(rng, (rows, D), bits)
        if zero_row:
            x[0, :] = -ex["offset"]
        w = rng.normal(1.0, 0.5, D).astype(np.float32)
        y = rms_norm(x, w, 1e-5, ex["scale"], ex["offset"], ey["scale"], ey["offset"], bits)
        cases.append({"op": "rms_norm", "name": name, "x": x.ravel().tolist(), "shape": [rows, D],
                      "w": w.tolist(), "eps": 1e-5, "x_enc": ex, "y_enc": ey,
                      "expect": y.ravel().tolist()})

    # RoPE: neox and interleaved, partial rotary, odd heads, a large position.
    for name, bits, T, H, D, rot, neox, pos in [
        ("rope_neox_a16", 16, 3, 3, 32, 32, True, [0, 7, 30000]),
        ("rope_interleaved_a8", 8, 1, 5, 16, 16, False, [123]),
        ("rope_partial_a16", 16, 2, 1, 24, 16, True, [5, 4096])]:
        ex, ey = enc(bits, -5.0, 5.0), enc(bits, -5.0, 5.0)
        x = codes(rng, (T, H, D), bits)
        y = rope(x, pos, 10000.0, rot, neox, ex["scale"], ex["offset"], ey["scale"],
                 ey["offset"], bits)
        cases.append({"op": "rope", "name": name, "x": x.ravel().tolist(), "shape": [T, H, D],
                      "positions": pos, "theta": 10000.0, "rotary_dim": rot, "neox": neox,
                      "x_enc": ex, "y_enc": ey, "expect": y.ravel().tolist()})

    # Attention: GQA with odd head counts, one token and a prefill chunk, a window, 8/16-bit KV.
    for name, bits, kv_bits, T, Hq, Hkv, D, positions, window in [
        ("attn_a16_kv8_decode", 16, 8, 1, 6, 3, 16, [9], 0),
        ("attn_a16_kv16_prefill", 16, 16, 4, 3, 1, 8, [0, 1, 2, 3], 0),
        ("attn_a8_kv8_window", 8, 8, 2, 4, 2, 32, [10, 11], 4)]:
        eq, ek, ev = enc(bits, -3.0, 3.0), enc(kv_bits, -4.0, 4.0), enc(kv_bits, -2.0, 2.0)
        ey = enc(bits, -2.0, 2.0)
        P = max(positions) + 1
        q = codes(rng, (T, Hq, D), bits)
        k, v = codes(rng, (P, Hkv, D), kv_bits), codes(rng, (P, Hkv, D), kv_bits)
        scale = float(np.float32(1.0 / math.sqrt(D)))  # the graph's attrs hold f32
        y = attention(q, k, v, positions, scale, window, eq["scale"], eq["offset"], ek["scale"],
                      ek["offset"], ev["scale"], ev["offset"], ey["scale"], ey["offset"], bits)
        cases.append({"op": "attention", "name": name, "q": q.ravel().tolist(),
                      "q_shape": [T, Hq, D], "k": k.ravel().tolist(), "v": v.ravel().tolist(),
                      "kv_shape": [P, Hkv, D], "positions": positions, "scale": scale,
                      "window": window, "q_enc": eq, "k_enc": ek, "v_enc": ev, "y_enc": ey,
                      "expect": y.ravel().tolist()})

    # quantize (f32 -> code) with ties, saturation and NaN.
    for name, bits in [("quantize_a16", 16), ("quantize_a8", 8)]:
        e = enc(bits, -2.0, 2.0)
        x = rng.normal(0, 1.5, 50).astype(np.float32)
        x[:4] = [np.float32(e["scale"]) * np.float32(2.5), 100.0, -100.0, np.nan]
        y = quantize(x, e["scale"], e["offset"], bits)
        cases.append({"op": "quantize", "name": name,
                      "x": [None if np.isnan(v) else float(v) for v in x], "y_enc": e,
                      "expect": y.tolist()})
    return cases + npusim_fp16_reference.cases(rng)


def bounds():
    """§13: each table's largest error against double."""
    s_in, o_in = 2.0**-10, -32768
    L, s_L = activation_table(silu, s_in, o_in, 16)
    err = max(abs(L[q] * s_L - silu(s_in * (q + o_in))) for q in range(65536))
    print(f"silu table, u16 input, s_in=2^-10: max |error| = {err:.3g} = s_in/{s_in / err:.0f}")
    E = exp_table()
    err = max(abs(E[z] - 65536.0 * math.exp(-z / 4096.0)) for z in range(65536))
    print(f"exp table E: max |error| = {err:.3g} (units of 2^-16)")
    rng = np.random.default_rng(0)
    worst = 0.0
    for V in list(range(1, 5000)) + [int(v) for v in rng.integers(1, 2**40, 20000)]:
        R, p = rsqrt_fixed(V)
        worst = max(worst, abs(R * 2.0**-30 * 2.0**(-p / 2) * math.sqrt(V) - 1.0))
    print(f"rsqrt: max relative error = {worst:.3g} (2^{math.log2(worst):.2f})")
    worst = 0.0
    for p in range(0, 32768, 7):
        for i in range(16):
            inv = math.pow(10000.0, -2.0 * i / 32)
            C, S = rope_cos_sin(p, inv)
            worst = max(worst, abs(C * 2.0**-30 - math.cos(p * inv)),
                        abs(S * 2.0**-30 - math.sin(p * inv)))
    print(f"cos/sin tables, p < 32768: max |error| = {worst:.3g} (2^{math.log2(worst):.2f})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", metavar="DIR", help="write DIR/cases.json")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--bounds", action="store_true", help="print each table's error")
    args = parser.parse_args()
    if args.bounds:
        bounds()
    if args.cases:
        cases = make_cases(np.random.default_rng(args.seed))
        os.makedirs(args.cases, exist_ok=True)
        path = os.path.join(args.cases, "cases.json")
        with open(path + ".tmp", "w") as f:
            json.dump({"version": "npusim numerics v1.1", "cases": cases}, f)
        os.replace(path + ".tmp", path)
    if not args.bounds and not args.cases:
        parser.error("give --cases DIR or --bounds")


if __name__ == "__main__":
    sys.exit(main())
