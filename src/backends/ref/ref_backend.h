// The `ref` backend: plain scalar C++, written to be read. It is the numeric ground truth:
// every faster backend is tested against it, and it is tested against PyTorch goldens
// (tools/make_op_goldens.py). It runs every op, with any weight dtype that tensor/dequantize.h
// reads; it accumulates in double so that its own rounding stays far below any tolerance.
#pragma once

#include "backends/backend.h"

namespace kite {

class RefBackend final : public Backend {
 public:
  std::string_view name() const override { return "ref"; }
  SupportResult Supports(const Graph& graph, const Node& node) const override;
  uint64_t ScratchBytes(const Graph& graph, const Node& node) const override;
  Status Execute(const Node& node, std::span<const TensorArg> inputs, const TensorArg& output,
                 const ExecContext& context) const override;
};

}  // namespace kite
