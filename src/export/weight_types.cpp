#include "export/weight_types.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "tensor/dtype_row.h"

namespace kite {

namespace {

// Kite's exporters offer the types whose row names a file type (LLAMA_FTYPE), spelled in lower
// case ("q4_k"), and llama.cpp's Q4_K_M mix over Q4_K.
constexpr std::string_view kQ4KM = "q4_k_m";
constexpr uint32_t kQ4KMFileType = 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M

std::vector<ExportType> KnownTypes() {
  std::vector<ExportType> known;
  for (const DTypeRow* row : AllRows()) {
    if (row->file_type == kNoFileType) continue;
    std::string name(row->name);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    known.push_back(ExportType{std::move(name), row->dtype, false, row->file_type});
  }
  known.push_back(ExportType{std::string(kQ4KM), DType::kQ4_K, true, kQ4KMFileType});
  return known;
}

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
  const DTypeRow* row = FindRow(type);
  const DType fallback = row != nullptr ? row->fallback : DType::kF16;
  return columns % Traits(fallback).block_size == 0 ? fallback : DType::kF16;
}

}  // namespace

std::vector<std::string> ExportTypeNames() {
  std::vector<std::string> names;
  for (const ExportType& known : KnownTypes()) names.push_back(known.name);
  return names;
}

Result<ExportType> ParseExportType(std::string_view name, const std::vector<std::string>& allowed) {
  std::string valid;
  const std::vector<ExportType> known_types = KnownTypes();
  const ExportType* found = nullptr;
  for (const ExportType& known : known_types) {
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
  return *found;
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
