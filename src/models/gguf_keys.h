// Typed reads of a GGUF file's {arch}.* hyper-parameter keys for the model loaders
// (models/load_gguf.cpp and the architectures' own keys): ranges checked, messages naming the
// file and the key.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf.h"

namespace kite {

// Reads integer keys into int32 fields with range checks; messages name the file and key.
class GgufKeys {
 public:
  GgufKeys(const GgufFile& gguf, std::string arch) : gguf_(gguf), arch_(std::move(arch)) {}

  std::string Key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }
  bool Has(std::string_view suffix) const { return gguf_.Find(Key(suffix)) != nullptr; }

  Result<int32_t> Int(std::string_view suffix) const {
    const int64_t value = KITE_TRY(gguf_.GetInt(Key(suffix)));
    if (value <= 0 || value > INT32_MAX) {
      return InvalidInput(gguf_.name() + ": key '" + Key(suffix) + "' is " + std::to_string(value) +
                          ", expected 1.." + std::to_string(INT32_MAX));
    }
    return static_cast<int32_t>(value);
  }
  Result<int32_t> Int(std::string_view suffix, int32_t fallback) const {
    if (!Has(suffix)) return fallback;
    return Int(suffix);
  }
  Result<float> Float(std::string_view suffix, float fallback) const {
    if (!Has(suffix)) return fallback;
    const double value = KITE_TRY(gguf_.GetFloat(Key(suffix)));
    if (!std::isfinite(value) || value <= 0.0) {
      return InvalidInput(gguf_.name() + ": key '" + Key(suffix) + "' is " + std::to_string(value) +
                          ", expected a finite value > 0");
    }
    return static_cast<float>(value);
  }

 private:
  const GgufFile& gguf_;
  std::string arch_;
};

// A float tensor [n] that holds configuration (Phi-3's rope_factors_long.weight): each value
// finite and > 0, else InvalidInput naming the file, tensor and index.
Result<std::vector<float>> ReadConfigTensor(const GgufFile& gguf, const std::string& name,
                                            int64_t n);

}  // namespace kite
