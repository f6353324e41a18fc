// libFuzzer: arbitrary bytes -> SafetensorsFile::Parse. Every accepted tensor's bytes are read,
// so ASan reports a view that reaches outside the input, and the reader's promises are checked.
#include <cstdint>
#include <cstdlib>

#include "format/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = kite::SafetensorsFile::Parse({data, size}, "fuzz.safetensors");
  if (!file) return 0;
  const uint8_t* const buffer_end = data + size;
  const kite::SafetensorsTensor* previous = nullptr;
  volatile uint8_t sink = 0;
  for (const kite::SafetensorsTensor& tensor : file->tensors()) {
    if (tensor.end < tensor.begin || tensor.data < data + file->data_offset() ||
        tensor.data + (tensor.end - tensor.begin) > buffer_end) {
      std::abort();
    }
    if (previous && previous->begin > tensor.begin) std::abort();  // promised data order
    previous = &tensor;
    for (const uint8_t* p = tensor.data; p < tensor.data + (tensor.end - tensor.begin); ++p) {
      sink = sink ^ *p;
    }
    if (file->Find(tensor.name) != &tensor) std::abort();
    auto view = file->View(tensor);
    if (view && view->bytes != tensor.end - tensor.begin) std::abort();
    if (view.has_value() != tensor.dtype.has_value()) std::abort();
  }
  return 0;
}
