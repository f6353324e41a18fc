#include "export/weight_types.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "tensor/dtype_row.h"

namespace kite {

namespace {

// llama.cpp's LLAMA_FTYPE values of the mixtures this file knows.
enum LlamaFtype : uint32_t {
  kFtypeQ4_0 = 2,
  kFtypeQ5_0 = 8,
  kFtypeQ2_K = 10,
  kFtypeQ3_K_S = 11,
  kFtypeQ3_K_M = 12,
  kFtypeQ3_K_L = 13,
  kFtypeQ4_K_S = 14,
  kFtypeQ4_K_M = 15,
  kFtypeQ5_K_S = 16,
  kFtypeQ5_K_M = 17,
  kFtypeIQ4_NL = 25,
  kFtypeIQ4_XS = 30,
};

struct Mixture {
  std::string_view name;
  DType base;
  uint32_t file_type;
};

// llama-quantize's k-quant mixtures, each over its default type (llama_model_quantize_impl).
constexpr Mixture kMixtures[] = {
    {"q2_k", DType::kQ2_K, kFtypeQ2_K},     {"q3_k_s", DType::kQ3_K, kFtypeQ3_K_S},
    {"q3_k_m", DType::kQ3_K, kFtypeQ3_K_M}, {"q3_k_l", DType::kQ3_K, kFtypeQ3_K_L},
    {"q4_k_s", DType::kQ4_K, kFtypeQ4_K_S}, {"q4_k_m", DType::kQ4_K, kFtypeQ4_K_M},
    {"q5_k_s", DType::kQ5_K, kFtypeQ5_K_S}, {"q5_k_m", DType::kQ5_K, kFtypeQ5_K_M},
};

// Kite's exporters offer the types whose row names a file type (LLAMA_FTYPE), spelled in lower
// case ("q4_k"), and the mixtures over k-quants Kite can encode.
std::vector<ExportType> KnownTypes() {
  std::vector<ExportType> known;
  for (const DTypeRow* row : AllRows()) {
    if (row->file_type == kNoFileType) continue;
    std::string name(row->name);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    known.push_back(ExportType{std::move(name), row->dtype, false, row->file_type});
  }
  for (const Mixture& mix : kMixtures) {
    const DTypeRow* row = FindRow(mix.base);
    if (row == nullptr || row->quantize == nullptr) continue;
    known.push_back(ExportType{std::string(mix.name), mix.base, true, mix.file_type});
  }
  return known;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third between.
bool UseMoreBits(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

bool Quantized(DType type) { return Traits(type).block_size > 1; }

bool Contains(const std::string& name, std::string_view part) {
  return name.find(part) != std::string::npos;
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

bool QuantizableWeight(const std::string& name, const std::vector<int64_t>& shape) {
  return shape.size() >= 2 && name.ends_with(".weight") && !Contains(name, "_norm.weight");
}

int64_t LayerOfTensor(const std::string& name) {
  int layer = -1;
  return std::sscanf(name.c_str(), "blk.%d.", &layer) == 1 ? layer : -1;
}

DType FallbackType(DType type, int64_t columns) {
  if (columns % Traits(type).block_size == 0) return type;
  const DTypeRow* row = FindRow(type);
  const DType fallback = row != nullptr ? row->fallback : DType::kF16;
  return columns % Traits(fallback).block_size == 0 ? fallback : DType::kF16;
}

DType LlamaMixtureType(uint32_t ftype, DType base, const std::string& name,
                       const std::vector<int64_t>& shape, const TensorTypeContext& context) {
  const int64_t layer = LayerOfTensor(name), n = context.n_layers;
  const bool gqa4 = context.n_gqa >= 4;
  if (name == "output.weight" || (context.tied && name == "token_embd.weight")) {
    // Rows of shape.back() elements: Q8_0 when they are not whole blocks of the default type.
    if (shape.back() % Traits(base).block_size != 0) return DType::kQ8_0;
    return base == DType::kQ8_0 ? base : DType::kQ6_K;
  }
  if (name == "token_embd.weight") return base;
  if (Contains(name, "attn_v.weight")) {
    switch (ftype) {
      case kFtypeQ2_K: return gqa4 ? DType::kQ4_K : DType::kQ3_K;
      case kFtypeQ3_K_M: return layer < 2 ? DType::kQ5_K : DType::kQ4_K;
      case kFtypeQ3_K_L: return DType::kQ5_K;
      case kFtypeIQ4_NL:
      case kFtypeIQ4_XS: return gqa4 ? DType::kQ5_K : base;
      case kFtypeQ4_K_M:
      case kFtypeQ5_K_M: return UseMoreBits(layer, n) ? DType::kQ6_K : base;
      case kFtypeQ4_K_S: return layer < 4 ? DType::kQ5_K : base;
      default: return base;
    }
  }
  if (Contains(name, "ffn_down")) {
    switch (ftype) {
      case kFtypeQ2_K: return DType::kQ3_K;
      case kFtypeQ3_K_M: return layer < n / 16 ? DType::kQ5_K : DType::kQ4_K;
      case kFtypeQ3_K_L: return DType::kQ5_K;
      case kFtypeQ4_K_M:
      case kFtypeQ5_K_M: return UseMoreBits(layer, n) ? DType::kQ6_K : base;
      case kFtypeIQ4_NL:
      case kFtypeIQ4_XS: return layer < n / 8 && !context.has_imatrix ? DType::kQ5_K : base;
      case kFtypeQ4_K_S: return layer < n / 8 ? DType::kQ5_K : base;
      case kFtypeQ4_0: return context.has_imatrix && layer < n / 8 ? DType::kQ4_1 : base;
      case kFtypeQ5_0: return context.has_imatrix && layer < n / 8 ? DType::kQ5_1 : base;
      default: return base;
    }
  }
  if (Contains(name, "attn_output.weight")) {
    switch (ftype) {
      case kFtypeQ2_K: return DType::kQ3_K;
      case kFtypeQ3_K_M: return DType::kQ4_K;
      case kFtypeQ3_K_L: return DType::kQ5_K;
      default: return base;
    }
  }
  if (Contains(name, "attn_qkv.weight")) {
    switch (ftype) {
      case kFtypeQ3_K_M:
      case kFtypeQ3_K_L: return DType::kQ4_K;
      case kFtypeQ4_K_M: return DType::kQ5_K;
      case kFtypeQ5_K_M: return DType::kQ6_K;
      default: return base;
    }
  }
  return base;
}

DType ChooseTensorType(const ExportType& type, const std::string& name,
                       const std::vector<int64_t>& shape, const TensorTypeContext& context) {
  if (!QuantizableWeight(name, shape)) return DType::kF32;
  if (!Quantized(type.base)) return type.base;
  const DType chosen =
      type.mix ? LlamaMixtureType(type.file_type, type.base, name, shape, context) : type.base;
  return FallbackType(chosen, shape.back());  // ggml's ne[0]
}

DType ChooseTensorType(const ExportType& type, const std::string& name,
                       const std::vector<int64_t>& shape, int64_t n_layers, bool tied) {
  return ChooseTensorType(type, name, shape, TensorTypeContext{.n_layers = n_layers, .tied = tied});
}

}  // namespace kite
