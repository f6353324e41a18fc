#!/usr/bin/env python3
"""An independent writer and reader of llama.cpp's importance-matrix files, from the GGUF spec
(ggml docs/gguf.md) and llama-imatrix's layout, for tests of Kite's quant/imatrix_file.

  imatrix_files.py write-gguf OUT.gguf ENTRIES.json   # {"name": {"sums": [...], "count": N}, ...}
  imatrix_files.py write-dat OUT.dat ENTRIES.json     # legacy: values = sums / count * ncall
  imatrix_files.py dump FILE.gguf                     # the entries and keys as JSON on stdout

GGUF imatrix: general.type "imatrix"; keys imatrix.datasets (string array), imatrix.chunk_count
and imatrix.chunk_size (uint32); per weight W, tensors "W.in_sum2" F32 ne=[columns, 1] and
"W.counts" F32 ne=[1, 1], sorted by name, data aligned to 32 bytes.
"""
import json
import struct
import sys

ALIGN = 32
T_UINT32, T_STRING, T_ARRAY = 4, 8, 9
F32 = 0


def gguf_string(text):
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def write_gguf(path, entries):
    kv = [
        (b"general.type", struct.pack("<I", T_STRING) + gguf_string("imatrix")),
        (b"imatrix.datasets", struct.pack("<IIQ", T_ARRAY, T_STRING, 1) + gguf_string("calib.txt")),
        (b"imatrix.chunk_count", struct.pack("<II", T_UINT32, 7)),
        (b"imatrix.chunk_size", struct.pack("<II", T_UINT32, 512)),
    ]
    tensors = []  # (name, ne, float values)
    for name in sorted(entries):
        sums = entries[name]["sums"]
        tensors.append((name + ".in_sum2", [len(sums), 1], sums))
        tensors.append((name + ".counts", [1, 1], [float(entries[name]["count"])]))
    header = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, value in kv:
        header += struct.pack("<Q", len(key)) + key + value
    offset = 0
    blobs = []
    for name, ne, values in tensors:
        header += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        header += struct.pack("<IQ", F32, offset)
        blob = struct.pack("<%df" % len(values), *values)
        blob += b"\0" * ((-len(blob)) % ALIGN)
        blobs.append(blob)
        offset += len(blob)
    header += b"\0" * ((-len(header)) % ALIGN)
    with open(path, "wb") as out:
        out.write(header + b"".join(blobs))


def write_dat(path, entries, ncall=3):
    out = struct.pack("<i", len(entries))
    for name in sorted(entries):
        sums, count = entries[name]["sums"], entries[name]["count"]
        data = name.encode()
        out += struct.pack("<i", len(data)) + data + struct.pack("<ii", ncall, len(sums))
        out += struct.pack("<%df" % len(sums), *[s / count * ncall for s in sums])
    dataset = b"calib.txt"
    out += struct.pack("<i", 7) + struct.pack("<i", len(dataset)) + dataset
    with open(path, "wb") as f:
        f.write(out)


def dump(path):
    data = open(path, "rb").read()
    at = 0

    def take(fmt):
        nonlocal at
        values = struct.unpack_from("<" + fmt, data, at)
        at += struct.calcsize("<" + fmt)
        return values

    def string():
        nonlocal at
        (n,) = take("Q")
        text = data[at:at + n].decode()
        at += n
        return text

    def value(kind):
        if kind == T_STRING:
            return string()
        if kind == T_UINT32:
            return take("I")[0]
        if kind == T_ARRAY:
            item, n = take("IQ")
            return [value(item) for _ in range(n)]
        raise ValueError("unexpected metadata type %d" % kind)

    assert data[:4] == b"GGUF", "not a GGUF file"
    at = 4
    _, n_tensors, n_kv = take("IQQ")
    keys = {}
    for _ in range(n_kv):
        key = string()
        keys[key] = value(take("I")[0])
    infos = []
    for _ in range(n_tensors):
        name = string()
        (dims,) = take("I")
        ne = list(take("%dQ" % dims))
        kind, offset = take("IQ")
        assert kind == F32, name
        infos.append((name, ne, offset))
    base = at + (-at) % ALIGN
    tensors = {}
    for name, ne, offset in infos:
        count = 1
        for n in ne:
            count *= n
        tensors[name] = {"ne": ne, "values": list(struct.unpack_from("<%df" % count, data, base + offset))}
    print(json.dumps({"keys": keys, "tensors": tensors}))


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "dump":
        dump(sys.argv[2])
    else:
        entries = json.load(open(sys.argv[3]))
        (write_gguf if command == "write-gguf" else write_dat)(sys.argv[2], entries)
