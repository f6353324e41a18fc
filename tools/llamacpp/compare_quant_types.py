#!/usr/bin/env python3
"""Compares the type `kite quantize` gives each tensor with the type llama.cpp's own quantizer
gives it, for llama.cpp's file types, on any GGUF (no data is quantized: llama.cpp runs with
dry_run, Kite with --dry-run). llama.cpp is the pinned node-llama-cpp's libllama (v0.4.0),
called through its C API; the struct below is its llama_model_quantize_params.

  python3 tools/llamacpp/compare_quant_types.py MODEL.gguf [KITE_BINARY]

Prints one line per file type: tensors compared and the first mismatches (none expected).
"""
import ctypes
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIBLLAMA = os.path.join(HERE, "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.4.0.so")
FTYPES = [(15, "q4_k_m"), (14, "q4_k_s"), (17, "q5_k_m"), (16, "q5_k_s"), (12, "q3_k_m"),
          (11, "q3_k_s"), (13, "q3_k_l"), (10, "q2_k"), (18, "q6_k"), (2, "q4_0"), (3, "q4_1"),
          (7, "q8_0")]


class Params(ctypes.Structure):
    _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int32),
                ("output_tensor_type", ctypes.c_int32), ("token_embedding_type", ctypes.c_int32),
                ("allow_requantize", ctypes.c_bool), ("quantize_output_tensor", ctypes.c_bool),
                ("only_copy", ctypes.c_bool), ("pure", ctypes.c_bool), ("keep_split", ctypes.c_bool),
                ("dry_run", ctypes.c_bool), ("imatrix", ctypes.c_void_p),
                ("kv_overrides", ctypes.c_void_p), ("tensor_types", ctypes.c_void_p),
                ("prune_layers", ctypes.c_void_p), ("max_buf_size", ctypes.c_size_t)]


def llama_types(lib, model, ftype):
    """The type llama.cpp's quantizer logs for each tensor ("... -> 0.56 MiB (q4_K)")."""
    lines = []
    log = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)(
        lambda level, text, data: lines.append(text.decode(errors="replace")))
    lib.llama_log_set(log, None)
    params = lib.llama_model_quantize_default_params()
    params.nthread, params.ftype, params.dry_run = 1, ftype, True
    assert lib.llama_model_quantize(model.encode(), b"/dev/null", ctypes.byref(params)) == 0
    types = {}
    for m in re.finditer(r"\] (\S+)\s+- \[.*?type =\s+(\S+), size =[^\n]*?(?:\((\S+)\))?\n", "".join(lines)):
        types[m.group(1)] = (m.group(3) or m.group(2)).lower()
    return types


def main():
    model = sys.argv[1]
    kite = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "../../build/kite")
    lib = ctypes.CDLL(LIBLLAMA)
    lib.llama_model_quantize_default_params.restype = Params
    lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(Params)]
    for ftype, name in FTYPES:
        theirs = llama_types(lib, model, ftype)
        report = subprocess.run([kite, "quantize", model, "--dry-run", "--json", "--type", name],
                                capture_output=True, text=True, check=True).stdout
        ours = {t["name"]: t["type"].lower() for t in json.loads(report)["tensors"]}
        mismatches = [(k, theirs.get(k), v) for k, v in ours.items() if theirs.get(k) != v]
        print(f"{name}: {len(ours)} tensors (llama.cpp {len(theirs)}), mismatches: {mismatches[:5]}")


if __name__ == "__main__":
    main()
