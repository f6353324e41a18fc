// npusim: the simulated NPU. It runs quantized graphs in integer arithmetic exactly as
// docs/npusim.md ("npusim numerics v1.1") specifies, so a model's accuracy on an integer-only
// accelerator can be checked on any x86 or Arm machine; on chips with fp16 (v73 and later) it
// runs float nodes on the FP16 path (§11). Other nodes are declined with a reason and run on the
// next backend of the preference list (`--backend npusim,cpu`).
#pragma once

#include <string>

#include "backends/backend.h"
#include "backends/npusim/support/npu_support.h"
#include "base/thread_pool.h"

namespace kite {

class NpusimBackend final : public Backend {
 public:
  // `chip`: a chip generation npusim simulates (NpusimChips); the default is v75. `features`:
  // what that generation's NPU runs (its first chip file, chips/*.json).
  NpusimBackend(int32_t threads, std::string chip, ChipFeatures features);

  std::string_view name() const override { return "npusim"; }
  const std::string& chip() const { return chip_; }

  SupportResult Supports(const Graph& graph, const Node& node) const override;
  uint64_t ScratchBytes(const Graph& graph, const Node& node) const override;
  Result<std::unique_ptr<CompiledPartition>> Compile(
      const Graph& graph, const Partition& partition,
      std::span<const TensorArg> values) const override;

 private:
  mutable ThreadPool pool_;  // the integer matmul's rows; the pool is safe to share
  std::string chip_;
  NpuTarget target_;  // the support rules' view of the chip (backends/npusim/support/)
};

// The chip generations npusim knows, oldest first: "v68", "v69", "v73", "v75", "v79", "v81".
std::span<const std::string_view> NpusimChips();

}  // namespace kite
