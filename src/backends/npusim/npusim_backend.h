// npusim: the simulated NPU. It runs quantized graphs in integer arithmetic exactly as
// docs/npusim.md ("npusim numerics v1.1") specifies, so a model's accuracy on an integer-only
// accelerator can be checked on any x86 or Arm machine; on chips with FP16 (their chip file's
// `fp16`) it runs float nodes on the FP16 path (§11). Other nodes are declined with a reason and run on the
// next backend of the preference list (`--backend npusim,cpu`).
#pragma once

#include <string>

#include "backends/backend.h"
#include "backends/npusim/support/npu_support.h"
#include "base/thread_pool.h"

namespace kite {

class NpusimBackend final : public Backend {
 public:
  // `target`: the chip npusim simulates (its chips/NAME.json) and the run's context: what its
  // NPU runs.
  NpusimBackend(int32_t threads, NpuTarget target);

  std::string_view name() const override { return "npusim"; }
  const ChipFeatures& chip() const { return target_.chip; }

  SupportResult Supports(const Graph& graph, const Node& node) const override;
  uint64_t ScratchBytes(const Graph& graph, const Node& node) const override;
  Result<std::unique_ptr<CompiledPartition>> Compile(
      const Graph& graph, const Partition& partition,
      std::span<const TensorArg> values) const override;

 private:
  mutable ThreadPool pool_;  // the integer matmul's rows; the pool is safe to share
  NpuTarget target_;  // the support rules' view of the chip (backends/npusim/support/)
};

// The chip a run without --chip simulates (chips/8gen3.json, Hexagon v75).
inline constexpr std::string_view kNpusimDefaultChip = "8gen3";

}  // namespace kite
