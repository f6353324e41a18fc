// memory.context: the weights and the KV cache of the context to check, against the memory this
// machine has available now (MemAvailable: free memory plus caches the kernel can drop), and the
// largest context that fits. Engine::Load refuses a KV cache larger than the machine's physical
// memory, but a cache that fits physical memory and not what is free ends in swapping or the
// OOM killer instead: this check says so before. The graphs' working memory (activations, one
// prefill chunk) is small beside both and left out; a 10% margin stands for it and the rest of
// the process.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "eval/doctor/checks.h"
#include "eval/doctor/format.h"
#include "graph/kv_cache.h"

namespace kite::doctor {

namespace {

constexpr char kId[] = "memory.context";
constexpr double kUsableShare = 0.9;

// MemAvailable of /proc/meminfo; the free pages where there is none (not Linux, or before 3.14).
uint64_t AvailableMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) : 0;
}

// The largest context whose KV cache fits `budget` beside the weights, in whole KV pages.
int64_t LargestContext(uint64_t budget, uint64_t weights, uint64_t per_position, int32_t page) {
  if (budget <= weights || per_position == 0) return 0;
  const uint64_t positions = (budget - weights) / per_position;
  return static_cast<int64_t>(std::min<uint64_t>(positions, INT32_MAX) / page * page);
}

}  // namespace

CheckResult CheckMemory(const Subject& subject, const EngineOptions& options) {
  if (!subject.model) return Skipped(kId, "the model did not load (file.compat)");
  const Model& model = *subject.model;
  const uint64_t weights = model.weights().Bytes();
  const uint64_t per_position = KvBytesPerPosition(model.kv_layout(), options.kv_dtype);
  const int32_t page = options.kv_page_size;
  const uint64_t positions = (static_cast<uint64_t>(subject.ctx) + page - 1) / page * page;
  const uint64_t kv = positions * per_position;
  const uint64_t need = weights + kv;
  const uint64_t available = AvailableMemoryBytes();
  const auto budget = static_cast<uint64_t>(static_cast<double>(available) * kUsableShare);
  const int64_t largest = LargestContext(budget, weights, per_position, page);
  const std::string kv_type(DTypeName(options.kv_dtype));
  nlohmann::ordered_json data = {{"ctx", subject.ctx},
                                 {"weights_bytes", weights},
                                 {"kv_bytes", kv},
                                 {"kv_bytes_per_position", per_position},
                                 {"kv_type", kv_type},
                                 {"available_bytes", available},
                                 {"largest_ctx", largest}};
  const std::string figures = "weights " + ByteSize(weights) + " + KV cache " + ByteSize(kv) + " (" + kv_type +
                              ", context " + std::to_string(subject.ctx) + ") = " + ByteSize(need) + " of " +
                              ByteSize(available) + " available";
  std::string fix = "use --ctx " + std::to_string(largest) + " or less (the largest that fits in 90% of what is available)";
  if (options.kv_dtype == DType::kF16 && model.kv_layout().head_dim % 32 == 0) {
    const uint64_t q8 = KvBytesPerPosition(model.kv_layout(), DType::kQ8_0);
    fix += ", or --kv-type q8_0 (then up to " + std::to_string(LargestContext(budget, weights, q8, page)) + ")";
  }
  fix += ", or a smaller quantization of the weights";
  CheckResult result;
  if (need > available) {
    result = Finding(kId, CheckStatus::kFail, figures + ": this machine cannot hold the context", fix);
  } else if (need > budget) {
    result = Finding(kId, CheckStatus::kWarn, figures + ": less than 10% would be left", fix);
  } else {
    result = Finding(kId, CheckStatus::kPass, figures + "; the largest context that fits is " + std::to_string(largest));
  }
  result.data = std::move(data);
  return result;
}

}  // namespace kite::doctor
