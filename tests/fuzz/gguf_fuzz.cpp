// Fuzzes the GGUF reader: any input must parse to an error value or to a file whose every value
// and tensor view can be read in bounds, and that the writer reproduces; and the reader of
// `kite compile`'s keys (models/compiled_gguf.h) on whatever parses.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "format/gguf.h"
#include "models/compiled_gguf.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();  // an invariant of a successfully parsed file does not hold
}

// Reads every scalar and walks every array, so ASan sees any bad reference.
uint64_t Touch(const kite::GgufValue& value) {
  uint64_t sum = static_cast<uint64_t>(value.type());
  if (const kite::GgufValue::Array* array = value.AsArray()) {
    for (const kite::GgufValue& item : array->items) {
      Check(item.type() == array->element_type);
      sum += Touch(item);
    }
  } else if (const std::string* text = value.AsString()) {
    for (char c : *text) sum += static_cast<uint8_t>(c);
  } else if (auto number = value.AsFloat()) {
    sum += static_cast<uint64_t>(*number != 0);
  } else {
    Check(value.type() == kite::GgufType::kBool);
  }
  return sum;
}

std::vector<uint8_t> Rewrite(const kite::GgufFile& file) {
  kite::GgufWriter writer(file.alignment());
  for (const auto& [key, value] : file.metadata()) writer.SetValue(key, value);
  for (const kite::GgufTensorInfo& info : file.tensors()) {
    const kite::TensorView view = file.View(info);
    Check(writer
              .AddTensor(info.name, info.dtype, info.shape,
                         {static_cast<const uint8_t*>(view.data), view.bytes})
              .has_value());
  }
  auto bytes = writer.Serialize();
  Check(bytes.has_value());
  return std::move(*bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  auto file = kite::GgufFile::Parse(bytes, "fuzz.gguf");
  if (!file) {
    Check(file.error().message.starts_with("fuzz.gguf: "));
    return 0;
  }
  volatile uint64_t sink = 0;
  for (const auto& [key, value] : file->metadata()) {
    Check(file->Find(key) == &value);
    sink = sink + Touch(value);
    (void)file->GetInt(key);
    (void)file->GetFloat(key);
    (void)file->GetString(key);
  }
  for (const kite::GgufTensorInfo& info : file->tensors()) {
    Check(file->FindTensor(info.name) == &info);
    const kite::TensorView view = file->View(info);
    const auto* begin = static_cast<const uint8_t*>(view.data);
    Check(begin >= data && begin + view.bytes <= data + size);
    for (uint64_t i = 0; i < view.bytes; ++i) sink = sink + begin[i];
  }

  // The compile keys read to a target whose contexts ascend and hold the prefill chunk, or to an
  // error naming the file.
  auto compiled = kite::ReadCompiledKeys(*file);
  if (!compiled) {
    Check(compiled.error().message.starts_with("fuzz.gguf: "));
  } else if (*compiled) {
    const kite::CompiledTarget& target = **compiled;
    Check(!target.contexts.empty() && target.prefill_chunk >= 1 &&
          target.prefill_chunk <= target.contexts.back());
    for (size_t i = 1; i < target.contexts.size(); ++i) {
      Check(target.contexts[i - 1] < target.contexts[i]);
    }
  }

  // Whatever the reader accepts, the writer must write, and writing what it reads back must give
  // the same bytes (compared as bytes: a NaN value is not == to itself).
  const std::vector<uint8_t> written = Rewrite(*file);
  auto reread = kite::GgufFile::Parse(written, "rewritten.gguf");
  Check(reread.has_value());
  Check(reread->metadata().size() == file->metadata().size());
  Check(reread->tensors().size() == file->tensors().size());
  Check(Rewrite(*reread) == written);
  return 0;
}
