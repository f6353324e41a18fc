// A reader for the protobuf wire format (enough for SentencePiece's ModelProto): varints,
// fixed 32/64-bit values and length-delimited fields. Every bound is checked; errors name the
// byte offset in the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kite::tok {

struct ProtoField {
  enum class Wire : uint8_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };
  uint32_t number = 0;
  Wire wire = Wire::kVarint;
  uint64_t value = 0;              // varint and fixed values
  std::span<const uint8_t> bytes;  // length-delimited payload
  size_t offset = 0;               // of the field's key, from the start of the file

  std::string_view AsString() const {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }
  float AsFloat() const;  // a fixed32 reinterpreted
};

class ProtoReader {
 public:
  // `base` is the offset of `bytes` in the file, for messages; `name` names the file.
  ProtoReader(std::span<const uint8_t> bytes, size_t base, const std::string& name)
      : bytes_(bytes), base_(base), name_(name) {}

  // Reads the next field into `*field`; false at the end of the message.
  Result<bool> Next(ProtoField* field);

 private:
  Result<uint64_t> ReadVarint();

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  size_t base_;
  const std::string& name_;
};

}  // namespace kite::tok
