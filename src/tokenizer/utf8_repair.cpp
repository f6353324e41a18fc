#include "tokenizer/utf8_repair.h"

#include <cstdint>

#include "base/utf8.h"

namespace kite::tok {

namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";

}  // namespace

size_t ValidSequenceLength(std::string_view text, size_t pos, size_t* prefix) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  *prefix = 1;
  const uint8_t lead = byte(0);
  const int n = Utf8SequenceLength(lead);
  if (n == 1) return 1;
  if (n == 0) return 0;
  // The second byte's range depends on the lead (this rules out overlongs, surrogates and
  // code points past U+10FFFF); later bytes are plain continuations (Unicode Table 3-7).
  uint8_t low = 0x80, high = 0xbf;
  if (lead == 0xe0) low = 0xa0;
  if (lead == 0xed) high = 0x9f;
  if (lead == 0xf0) low = 0x90;
  if (lead == 0xf4) high = 0x8f;
  for (int i = 1; i < n; ++i) {
    if (pos + i >= text.size()) return 0;
    const uint8_t b = byte(i);
    const bool ok = i == 1 ? (b >= low && b <= high) : (b >= 0x80 && b <= 0xbf);
    if (!ok) return 0;
    *prefix = i + 1;
  }
  return n;
}

void AppendRepairedUtf8(std::string_view bytes, Utf8Repair repair, std::string* out) {
  if (repair == Utf8Repair::kWholeRun) {
    if (IsValidUtf8(bytes)) {
      out->append(bytes);
    } else {
      for (size_t i = 0; i < bytes.size(); ++i) out->append(kReplacement);
    }
    return;
  }
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t prefix;
    const size_t n = ValidSequenceLength(bytes, pos, &prefix);
    if (n > 0) {
      out->append(bytes.substr(pos, n));
      pos += n;
    } else {
      out->append(kReplacement);
      pos += repair == Utf8Repair::kMaximalSubpart ? prefix : 1;
    }
  }
}

}  // namespace kite::tok
