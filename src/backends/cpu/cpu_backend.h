// The `cpu` backend: SIMD kernels (Highway, chosen at run time for the CPU: AVX2, AVX-512,
// AVX-512 VNNI) over a persistent thread pool. It runs the hot ops of a decoder (matmul with
// float and ggml-quantized weights, attention over the paged KV cache, norms, RoPE, activations)
// and declines the rest, which the partitioner then places on `ref`.
//
// Matmul weights are repacked once, when a graph is compiled (Prepare), into the interleaved
// layout of packed_matrix.h; the packed copies are shared by every graph of the engine (keyed by
// the weight's memory) and cost about the weights' size (packed_bytes()); a weight mapped from
// the model file is then let go from memory (ReleaseFilePages), so the process holds it once.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

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
  Status Prepare(const Graph& graph, const Node& node, std::span<const TensorArg> inputs) override;
  Status Execute(const Node& node, std::span<const TensorArg> inputs, const TensorArg& output,
                 const ExecContext& context) override;

  int32_t threads() const { return pool_.size(); }
  uint64_t packed_bytes() const;

 private:
  // A packed weight and what it was packed from. A graph's weights may be freed and their memory
  // reused by another graph's (tests build many small graphs on one backend), so a hit must
  // agree on dtype, shape and a fingerprint of the bytes; else the entry is packed anew.
  struct PackedEntry {
    DType dtype;
    int64_t n;
    int64_t k;
    uint64_t fingerprint;
    std::unique_ptr<cpu::PackedMatrix> matrix;
  };

  ThreadPool pool_;
  std::unordered_map<const std::byte*, PackedEntry> packed_;
};

}  // namespace kite
