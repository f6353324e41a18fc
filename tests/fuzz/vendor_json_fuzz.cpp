// libFuzzer: arbitrary text -> ReadVendorJson (AIMET encodings 1.0.0 or QNN overrides). What it
// accepts must write back in both formats' reach and read again to the same encodings count.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "quant/vendor_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto encodings = kite::ReadVendorJson(text, "fuzz.json");
  if (!encodings) return 0;
  auto written = kite::WriteVendorJson(*encodings, kite::VendorFormat::kAimet);
  if (!written) std::abort();  // every encoding it read is one AIMET can hold
  auto again = kite::ReadVendorJson(*written, "fuzz-rewritten.json");
  if (!again) std::abort();
  return 0;
}
