// Reading the op goldens in testdata/op_goldens (tools/make_op_goldens.py) in tests: <op>.json
// describes cases and tensors, <op>.bin holds the tensors. Header-only, for *_test.cpp files.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/aligned_buffer.h"

namespace kite::testing {

using nlohmann::json;

inline std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Fixture fields, read without exceptions: a missing or mistyped field reads as null / fallback
// and the test then fails on it.
inline const json& Get(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object() || !object.contains(key)) return kNull;
  return object[key];
}

inline const json& At(const json& array, size_t index) {
  static const json kNull;
  if (!array.is_array() || index >= array.size()) return kNull;
  return array[index];
}

inline double Number(const json& object, const char* key, double fallback) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return fallback;
  return object[key].get<double>();
}

inline std::string Text(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return "";
  return object[key].get<std::string>();
}

struct Golden {
  json manifest;
  AlignedBuffer blob;

  // The tensor's bytes; null when its offset and size fall outside the blob.
  template <typename T>
  const T* Data(const json& tensor) const {
    const uint64_t offset = static_cast<uint64_t>(Number(tensor, "offset", -1));
    if (offset > blob.size() || Bytes(tensor) > blob.size() - offset) return nullptr;
    return reinterpret_cast<const T*>(blob.data() + offset);
  }
  static uint64_t Bytes(const json& tensor) {
    return static_cast<uint64_t>(Number(tensor, "bytes", 0));
  }
  static std::vector<int64_t> Shape(const json& tensor) {
    std::vector<int64_t> shape;
    for (const json& dim : Get(tensor, "shape")) {
      shape.push_back(dim.is_number_integer() ? dim.get<int64_t>() : -1);
    }
    return shape;
  }
};

// Loads <op>.json and <op>.bin; a test failure (and nullopt) when missing or malformed.
inline std::optional<Golden> LoadGolden(const std::string& op) {
  const std::string base = std::string(KITE_SOURCE_DIR) + "/testdata/op_goldens/" + op;
  const std::optional<std::string> text = ReadFile(base + ".json");
  const std::optional<std::string> bin = ReadFile(base + ".bin");
  if (!text || !bin) {
    ADD_FAILURE() << "missing " << base << ".json/.bin; run tools/make_op_goldens.py";
    return std::nullopt;
  }
  auto blob = AlignedBuffer::Allocate(bin->size());
  if (!blob) {
    ADD_FAILURE() << blob.error().message;
    return std::nullopt;
  }
  Golden golden{json::parse(*text, nullptr, /*allow_exceptions=*/false), std::move(*blob)};
  if (golden.manifest.is_discarded() || !Get(golden.manifest, "cases").is_array()) {
    ADD_FAILURE() << base << ".json is not a golden manifest";
    return std::nullopt;
  }
  std::memcpy(golden.blob.data(), bin->data(), bin->size());
  return golden;
}

// The case of that name, or null.
inline const json& FindCase(const Golden& golden, const std::string& name) {
  for (const json& test_case : Get(golden.manifest, "cases")) {
    if (Text(test_case, "name") == name) return test_case;
  }
  static const json kNull;
  return kNull;
}

}  // namespace kite::testing
