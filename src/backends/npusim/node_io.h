// How npusim's kernels meet a graph. Activations reach npusim as the values a dequantize op
// wrote (f32 on the encoding's grid, docs/npusim.md §2.4); a node's encodings are found in the
// graph: each input's behind its dequantize (through views), the output's in the quantize node
// that reads it (graph/passes/insert_qdq.cpp puts one after every encoded node). A node reads
// its inputs' codes back exactly, runs the integer kernel, and writes its output codes as the
// same grid floats, which the following quantize reads back without loss.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/shared_kernels.h"
#include "backends/npusim/fixed_point.h"
#include "base/thread_pool.h"

namespace kite::npusim {

// The encoding of the codes `value` holds: that of the dequantize it comes from, through
// views; null when it comes from anything else.
const QuantEncoding* CodesEncoding(const Graph& graph, ValueId value);
// The encoding of the quantize node reading `node`'s output, or null when there is none.
const QuantEncoding* OutputEncoding(const Graph& graph, const Node& node);

// Yes when inputs `inputs` of `node` hold codes of a u8/u16 per-tensor encoding and its output
// is quantized to one; else a reason naming the value.
SupportResult EncodedActivations(const Graph& graph, const Node& node,
                                 std::initializer_list<int> inputs);

// What a node's preparation sees when its partition is compiled.
struct NodeContext {
  const Graph& graph;
  const Node& node;
  std::span<const TensorArg> values;  // per value, weights' data bound
  ThreadPool* pool;

  Result<ActEncoding> Input(int index) const;  // of an input EncodedActivations accepted
  Result<ActEncoding> Output() const;
  const TensorArg& Arg(int input) const { return values[node.inputs[input].index]; }
};

// What runs a prepared node: inputs in node.inputs order, the output contiguous.
using Step = std::function<Status(std::span<const TensorArg> inputs, const TensorArg& output,
                                  const ExecContext& context)>;

// Takes typed slices of ExecContext::scratch in turn (64-byte aligned each).
class ScratchArena {
 public:
  explicit ScratchArena(std::span<std::byte> scratch) : rest_(scratch) {}
  template <typename T>
  std::span<T> Take(int64_t count) {
    const size_t bytes = (static_cast<size_t>(count) * sizeof(T) + 63) / 64 * 64;
    std::span<std::byte> taken = rest_.first(bytes);
    rest_ = rest_.subspan(bytes);
    return {reinterpret_cast<T*>(taken.data()), static_cast<size_t>(count)};
  }
  // The bytes Take(count) of each count takes, for ScratchBytes.
  template <typename T>
  static uint64_t Bytes(int64_t count) {
    return (static_cast<uint64_t>(count) * sizeof(T) + 63) / 64 * 64;
  }

 private:
  std::span<std::byte> rest_;
};

// An f32 activation (any strides) on `encoding`'s grid -> its codes, row-major (§2.4).
void ReadCodes(const TensorArg& in, const ActEncoding& encoding, std::span<int32_t> codes);
// Codes -> the contiguous f32 output, on the grid (§2.5's dequantize).
void WriteCodes(std::span<const int32_t> codes, const ActEncoding& encoding, const TensorArg& out);

// The step of an op of one encoded input (silu, gelu, rms_norm): reads its codes under `x`, runs
// compute(x codes, y codes), writes y under `y`.
template <typename Compute>
Step OneInputCodesStep(const ActEncoding& x, const ActEncoding& y, Compute compute) {
  return [x, y, compute](std::span<const TensorArg> in, const TensorArg& out,
                         const ExecContext& context) -> Status {
    ScratchArena arena(context.scratch);
    const std::span<int32_t> x_codes = arena.Take<int32_t>(in[0].elements());
    const std::span<int32_t> y_codes = arena.Take<int32_t>(out.elements());
    ReadCodes(in[0], x, x_codes);
    compute(x_codes, y_codes);
    WriteCodes(y_codes, y, out);
    return Ok();
  };
}

// The step of an op of two encoded inputs (add, mul, swiglu, geglu): reads both inputs' codes
// under `a` and `b`, runs compute(a codes, b codes, y codes), writes y under `y`.
template <typename Compute>
Step TwoInputCodesStep(const ActEncoding& a, const ActEncoding& b, const ActEncoding& y,
                       Compute compute) {
  return [a, b, y, compute](std::span<const TensorArg> in, const TensorArg& out,
                            const ExecContext& context) -> Status {
    ScratchArena arena(context.scratch);
    const std::span<int32_t> a_codes = arena.Take<int32_t>(in[0].elements());
    const std::span<int32_t> b_codes = arena.Take<int32_t>(in[1].elements());
    const std::span<int32_t> y_codes = arena.Take<int32_t>(out.elements());
    ReadCodes(in[0], a, a_codes);
    ReadCodes(in[1], b, b_codes);
    compute(a_codes, b_codes, y_codes);
    WriteCodes(y_codes, y, out);
    return Ok();
  };
}

}  // namespace kite::npusim
