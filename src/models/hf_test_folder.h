// For tests: a copy of a reference Hugging Face folder (testdata/reference/) whose config.json
// and tensors a test may change, to check what a loader says about a broken or unusual folder.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "format/safetensors.h"

namespace kite::testing {

inline const std::string kReference = KITE_SOURCE_DIR "/testdata/reference/";

class BrokenFolder {
 public:
  explicit BrokenFolder(const std::string& model, const std::string& name)
      : path_(::testing::TempDir() + "kite_hf_folder_" + name) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
    for (const char* file : {"config.json", "tokenizer.model"}) {
      std::filesystem::copy_file(kReference + model + "/" + file, path_ + "/" + file);
    }
    auto file = SafetensorsFile::Open(kReference + model + "/model.safetensors");
    EXPECT_TRUE(file.has_value());
    if (file) source_ = std::make_unique<SafetensorsFile>(std::move(*file));
  }
  ~BrokenFolder() { std::filesystem::remove_all(path_); }

  const std::string& path() const { return path_; }

  void EditConfig(const std::function<void(nlohmann::json&)>& edit) {
    auto text = ReadTextFile(path_ + "/config.json", kConfigFileLimit);
    ASSERT_TRUE(text.has_value());
    nlohmann::json config = nlohmann::json::parse(*text, nullptr, false);
    ASSERT_TRUE(config.is_object());
    edit(config);
    std::ofstream(path_ + "/config.json") << config.dump();
  }

  // Writes model.safetensors with every source tensor, each passed through `edit` (which may
  // rename it, change its shape and bytes, or drop it by returning false), then `extra` F32
  // tensors of shape [2] (zeros).
  void WriteTensors(const std::function<bool(std::string&, nlohmann::json&, std::string&)>& edit,
                    const std::vector<std::string>& extra = {}) {
    nlohmann::json header = nlohmann::json::object();
    std::string data;
    for (const std::string& name : extra) {
      header[name] = {{"dtype", "F32"},
                      {"shape", {2}},
                      {"data_offsets", {data.size(), data.size() + 8}}};
      data += std::string(8, '\0');
    }
    for (const SafetensorsTensor& t : source_->tensors()) {
      std::string name = t.name;
      nlohmann::json shape = t.shape;
      std::string bytes(reinterpret_cast<const char*>(t.data), t.end - t.begin);
      if (!edit(name, shape, bytes)) continue;
      header[name] = {{"dtype", t.dtype_name},
                      {"shape", shape},
                      {"data_offsets", {data.size(), data.size() + bytes.size()}}};
      data += bytes;
    }
    const std::string json = header.dump();
    const uint64_t length = json.size();
    std::ofstream out(path_ + "/model.safetensors", std::ios::binary);
    out.write(reinterpret_cast<const char*>(&length), 8);
    out << json << data;
  }

 private:
  std::string path_;
  std::unique_ptr<SafetensorsFile> source_;
};

}  // namespace kite::testing
