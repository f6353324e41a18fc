// The `cpu` backend: SIMD kernels (Highway, chosen at run time for the CPU: AVX2, AVX-512,
// AVX-512 VNNI) over a persistent thread pool. It runs the hot ops of a decoder (matmul with
// float and ggml-quantized weights, attention over the paged KV cache, norms, RoPE, activations)
// and declines the rest, which the partitioner then places on `ref`.
//
// Matmul weights are repacked when a partition is compiled (Compile), into the interleaved
// layout of packed_matrix.h, and bound to the compiled partition. A weight's bytes never change
// under its Value::weight_id, so partitions of other graphs (decode step, prefill chunks) that
// read the same weight share its packed copy, found by that id; the copy lives as long as one of
// them does and costs about the weight's size (packed_bytes()). A weight mapped from the model
// file is then let go from memory (ReleaseFilePages), so the process holds it once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "backends/backend.h"
#include "backends/cpu/packed_matrix.h"
#include "base/thread_pool.h"

namespace kite {

class CpuBackend final : public Backend {
 public:
  // threads <= 0: every CPU this process may use (UsableCpuCount).
  explicit CpuBackend(int32_t threads = 0);

  std::string_view name() const override { return "cpu"; }
  SupportResult Supports(const Graph& graph, const Node& node) const override;
  uint64_t ScratchBytes(const Graph& graph, const Node& node) const override;
  Result<std::unique_ptr<CompiledPartition>> Compile(
      const Graph& graph, const Partition& partition,
      std::span<const TensorArg> values) const override;

  int32_t threads() const { return pool_.size(); }
  // The packed weights that compiled partitions still hold.
  uint64_t packed_bytes() const;

 private:
  // A packed weight's identity: the weight, and where in it a view starts and what it reads.
  struct PackKey {
    uint64_t weight_id;
    uint64_t offset;  // bytes
    DType dtype;
    int64_t n;
    int64_t k;
    auto operator<=>(const PackKey&) const = default;
  };

  // The packed copy of matmul `node`'s weight: the one a live partition holds, or a new one.
  Result<std::shared_ptr<const cpu::PackedMatrix>> PackedWeight(
      const Graph& graph, const Node& node, std::span<const TensorArg> values) const;

  // Kernels run on the pool from const methods: runs from several threads at once need the pool
  // to take one caller's job at a time (base/thread_pool.h).
  mutable ThreadPool pool_;
  mutable std::mutex packed_mutex_;
  mutable std::map<PackKey, std::weak_ptr<const cpu::PackedMatrix>> packed_;
};

}  // namespace kite
