#!/usr/bin/python3
"""Edits of ONNX files without the onnx Python package (Debian's PyTorch does not bring it):
the protobuf wire format read and written by hand for the two rewrites tools/make_onnx_fixture.py
makes of a torch.onnx.export -- weights moved to an external data file, and MatMuls replaced by
ONNX Runtime's 4-bit MatMulNBits. Field numbers from onnx.proto (ONNX 1.12)."""

import os

import torch

# External data, as torch writes it for models over 2 GB, done here for a small one. Without the
# onnx Python package (not in Debian's PyTorch), by rewriting the protobuf: ModelProto.graph (7)
# -> GraphProto.initializer (5) -> TensorProto raw_data (9) replaced by external_data (13:
# location, offset, length) and data_location (14) = EXTERNAL (1).


def _varint(data: bytes, i: int):
  value, shift = 0, 0
  while True:
    b = data[i]
    i += 1
    value |= (b & 0x7F) << shift
    shift += 7
    if b < 0x80:
      return value, i


def _put_varint(value: int) -> bytes:
  out = bytearray()
  while True:
    b = value & 0x7F
    value >>= 7
    out.append(b | (0x80 if value else 0))
    if not value:
      return bytes(out)


def _fields(data: bytes):
  """(field number, wire type, payload bytes or varint value) in order."""
  i, out = 0, []
  while i < len(data):
    key, i = _varint(data, i)
    number, wire = key >> 3, key & 7
    if wire == 0:
      value, i = _varint(data, i)
    elif wire == 2:
      n, i = _varint(data, i)
      value, i = data[i:i + n], i + n
    elif wire == 5:
      value, i = data[i:i + 4], i + 4
    elif wire == 1:
      value, i = data[i:i + 8], i + 8
    else:
      raise ValueError(f"wire type {wire}")
    out.append((number, wire, value))
  return out


def _serialize(fields) -> bytes:
  out = bytearray()
  for number, wire, value in fields:
    out += _put_varint(number << 3 | wire)
    if wire == 0:
      out += _put_varint(value)
    elif wire == 2:
      out += _put_varint(len(value)) + value
    else:
      out += value
  return bytes(out)


def _entry(key: str, value: str) -> bytes:
  return _serialize([(1, 2, key.encode()), (2, 2, value.encode())])


def move_to_external_data(src: str, dst: str, location: str, min_bytes: int = 1024) -> None:
  """Writes src's model to dst with every initializer of min_bytes or more in `location`."""
  with open(src, "rb") as f:
    model = _fields(f.read())
  blob = bytearray()
  for m, (number, wire, value) in enumerate(model):
    if number != 7:
      continue
    graph = _fields(value)
    for g, (gn, gw, gv) in enumerate(graph):
      if gn != 5:
        continue
      tensor = _fields(gv)
      raw = [t for t in tensor if t[0] == 9]
      if not raw or len(raw[0][2]) < min_bytes:
        continue
      blob += b"\0" * (-len(blob) % 64)
      offset = len(blob)
      blob += raw[0][2]
      tensor = [t for t in tensor if t[0] != 9]
      tensor += [(13, 2, _entry("location", location)), (13, 2, _entry("offset", str(offset))),
                 (13, 2, _entry("length", str(len(raw[0][2])))), (14, 0, 1)]
      graph[g] = (gn, gw, _serialize(tensor))
    model[m] = (number, wire, _serialize(graph))
  os.makedirs(os.path.dirname(dst), exist_ok=True)
  with open(dst, "wb") as f:
    f.write(_serialize(model))
  with open(os.path.join(os.path.dirname(dst), location), "wb") as f:
    f.write(blob)


def _attribute_int(name: str, value: int) -> bytes:
  return _serialize([(1, 2, name.encode()), (20, 0, 2), (3, 0, value)])  # type INT


def quantize_to_matmulnbits(src: str, dst: str, block: int = 32) -> None:
  """Writes src's model to dst with each MatMul by a stored [K, N] weight replaced by ONNX
  Runtime's com.microsoft MatMulNBits (4 bits, blocks of `block` along K, a float scale per
  block, the default zero point 8), as ORT GenAI's int4 exports hold their projections:
  B [N, K / block, block / 2] uint8 (the low nibble first), scales [N * K / block]."""
  with open(src, "rb") as f:
    model = _fields(f.read())
  for m, (number, wire, value) in enumerate(model):
    if number != 7:
      continue
    graph = _fields(value)
    weights = {}
    for gn, gw, gv in graph:
      if gn == 5:
        t = _fields(gv)
        name = next(v for n, w, v in t if n == 8).decode()
        dims = [v for n, w, v in t if n == 1]
        raw = [v for n, w, v in t if n == 9]
        if len(dims) == 2 and raw:
          weights[name] = torch.frombuffer(bytearray(raw[0]), dtype=torch.float32).reshape(dims)
    added, quantized = [], set()
    for g, (gn, gw, gv) in enumerate(graph):
      if gn != 1:
        continue
      node = _fields(gv)
      op = next(v for n, w, v in node if n == 4).decode()
      inputs = [v.decode() for n, w, v in node if n == 1]
      if op != "MatMul" or inputs[1] not in weights:
        continue
      quantized.add(inputs[1])
      w = weights[inputs[1]].t().contiguous()  # [N, K]
      n_out, k = w.shape
      blocks = w.reshape(n_out, k // block, block)
      scale = blocks.abs().amax(dim=-1).clamp(min=1e-8) / 7  # [N, K / block]
      q = (torch.round(blocks / scale[..., None]) + 8).clamp(0, 15).to(torch.uint8)
      packed = q[..., 0::2] | (q[..., 1::2] << 4)  # [N, K / block, block / 2]
      base = inputs[1].replace(":", "_")
      for name, tensor, dtype in ((base + "_Q4", packed, 2), (base + "_scales", scale.reshape(-1), 1)):
        fields = [(1, 0, d) for d in tensor.shape] + [(2, 0, dtype), (8, 2, name.encode()),
                                                       (9, 2, tensor.numpy().tobytes())]
        added.append((5, 2, _serialize(fields)))
      rest = [f for f in node if f[0] not in (1, 4, 7)]
      node = ([(1, 2, inputs[0].encode()), (1, 2, (base + "_Q4").encode()),
               (1, 2, (base + "_scales").encode())] + rest +
              [(4, 2, b"MatMulNBits"), (7, 2, b"com.microsoft"),
               (5, 2, _attribute_int("K", k)), (5, 2, _attribute_int("N", n_out)),
               (5, 2, _attribute_int("bits", 4)), (5, 2, _attribute_int("block_size", block))])
      graph[g] = (gn, gw, _serialize(node))
    def unused(field):  # a float weight now held as 4-bit codes
      return field[0] == 5 and next(v for n, w, v in _fields(field[2]) if n == 8).decode() in quantized
    model[m] = (number, wire, _serialize([f for f in graph if not unused(f)] + added))
  model.append((8, 2, _serialize([(1, 2, b"com.microsoft"), (2, 0, 1)])))
  os.makedirs(os.path.dirname(dst), exist_ok=True)
  with open(dst, "wb") as f:
    f.write(_serialize(model))
