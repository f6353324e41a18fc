#include "export/weight_types.h"

#include <algorithm>
#include <cstdio>

namespace kite {

namespace {

struct Known {
  const char* name;
  DType base;
  bool q4_k_m;
  uint32_t file_type;  // LLAMA_FTYPE_*: ALL_F32 0, MOSTLY_F16 1, Q4_0 2, Q4_1 3, Q8_0 7,
                       // Q4_K_S 14, Q4_K_M 15, Q5_K_S 16, Q6_K 18, BF16 32
};
constexpr Known kKnown[] = {
    {"f32", DType::kF32, false, 0},    {"f16", DType::kF16, false, 1},
    {"bf16", DType::kBF16, false, 32}, {"q8_0", DType::kQ8_0, false, 7},
    {"q4_0", DType::kQ4_0, false, 2},  {"q4_1", DType::kQ4_1, false, 3},
    {"q4_k", DType::kQ4_K, false, 14}, {"q5_k", DType::kQ5_K, false, 16},
    {"q6_k", DType::kQ6_K, false, 18}, {"q4_k_m", DType::kQ4_K, true, 15},
};

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third between.
bool UseMoreBits(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

int64_t LayerOf(const std::string& name) {
  int layer = -1;
  return std::sscanf(name.c_str(), "blk.%d.", &layer) == 1 ? layer : -1;
}

bool Quantized(DType type) { return Traits(type).block_size > 1; }

DType Fallback(DType type, int64_t columns) {
  if (columns % Traits(type).block_size == 0) return type;
  DType fallback = DType::kF16;
  switch (type) {
    case DType::kQ4_K:
      fallback = DType::kQ5_0;
      break;
    case DType::kQ5_K:
      fallback = DType::kQ5_1;
      break;
    case DType::kQ6_K:
      fallback = DType::kQ8_0;
      break;
    default:
      break;
  }
  return columns % Traits(fallback).block_size == 0 ? fallback : DType::kF16;
}

}  // namespace

std::vector<std::string> ExportTypeNames() {
  std::vector<std::string> names;
  for (const Known& known : kKnown) names.push_back(known.name);
  return names;
}

Result<ExportType> ParseExportType(std::string_view name, const std::vector<std::string>& allowed) {
  std::string valid;
  const Known* found = nullptr;
  for (const Known& known : kKnown) {
    if (!allowed.empty() &&
        std::find(allowed.begin(), allowed.end(), known.name) == allowed.end()) {
      continue;
    }
    valid += (valid.empty() ? "" : ", ") + std::string(known.name);
    if (name == known.name) found = &known;
  }
  if (found == nullptr) {
    return InvalidInput("type '" + std::string(name) + "' is not one of: " + valid);
  }
  return ExportType{found->name, found->base, found->q4_k_m, found->file_type};
}

DType ChooseTensorType(const ExportType& type, const std::string& name,
                       const std::vector<int64_t>& shape, int64_t n_layers, bool tied) {
  const bool weight = name.ends_with(".weight") && name.find("_norm.weight") == std::string::npos;
  if (shape.size() < 2 || !weight) return DType::kF32;
  const int64_t columns = shape.back();  // ggml's ne[0]
  if (!Quantized(type.base)) return type.base;
  DType chosen = type.base;
  if (type.q4_k_m) {
    const int64_t layer = LayerOf(name);
    if (name == "output.weight" || (tied && name == "token_embd.weight")) {
      // Output projection: Q6_K, or Q8_0 when rows are not whole Q4_K blocks.
      chosen = columns % Traits(type.base).block_size != 0 ? DType::kQ8_0 : DType::kQ6_K;
    } else if ((name.ends_with("attn_v.weight") || name.ends_with("ffn_down.weight")) &&
               UseMoreBits(layer, n_layers)) {
      chosen = DType::kQ6_K;
    }
  }
  return Fallback(chosen, columns);
}

}  // namespace kite
