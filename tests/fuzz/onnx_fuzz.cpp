// libFuzzer: arbitrary bytes -> OnnxModel::Parse, then the import's recognition (binding, constant
// folding and shape inference over whatever ops the bytes name, the pattern matchers). Every
// accepted tensor's bytes are read, so ASan reports a span outside the parsed message; the
// folder's refusals must be errors, never a crash, an overflow or an allocation past its limits.
#include <cstdint>
#include <cstdlib>

#include "format/onnx_file.h"
#include "models/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto model = kite::OnnxModel::Parse({data, size}, "fuzz.onnx");
  if (!model) return 0;
  volatile uint8_t sink = 0;
  for (const auto* tensors : {&model->initializers(), &model->attribute_tensors()}) {
    for (const kite::OnnxTensor& t : *tensors) {
      int64_t count = 1;
      for (int64_t d : t.shape) count *= d;
      if (t.data.size() != static_cast<uint64_t>(count) * kite::OnnxTypeSize(t.type)) std::abort();
      for (uint8_t byte : t.data) sink = sink ^ byte;
    }
  }
  auto import = kite::RecognizeOnnx(*model);
  if (import && import->error.empty() && import->unmapped.empty() && import->weights.empty()) {
    std::abort();  // a recognised model has weights
  }
  return 0;
}
