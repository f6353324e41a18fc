// explicit_fallback: the nodes an NPU cannot run (named in `cpu_nodes`; the support rules,
// backends/npusim/support/npu_support.h, say which) compute in float on the CPU, and the
// conversions between the NPU's integers and the CPU's floats become ops of the graph, so they
// are seen (`kite inspect --placement --chip`) and priced (the cost model) instead of hidden:
//
//   npu (u16) -> <cpu node>.to_cpu.<i>: dequantize -> cpu node (f32) -> <cpu node>.to_npu:
//   quantize (u16, the node's old output encoding) -> npu readers
//
// Every encoded input of a CPU node gets one dequantize (shared by the CPU nodes reading that
// value); a CPU node whose output was encoded writes f32 and is quantized back to that encoding,
// so every reader sees the values it saw before. A graph without encodings (plain f32) needs no
// convert and is copied unchanged. A name that is no node (or a view) is InvalidInput.
#pragma once

#include <set>
#include <string>

#include "graph/passes/pass.h"

namespace kite {

class ExplicitFallback final : public Pass {
 public:
  explicit ExplicitFallback(std::set<std::string> cpu_nodes) : cpu_nodes_(std::move(cpu_nodes)) {}

  std::string_view name() const override { return "explicit_fallback"; }
  Result<PassOutcome> Run(const Graph& graph) override;

 private:
  std::set<std::string> cpu_nodes_;
};

}  // namespace kite
