#include "tokenizer/proto_reader.h"

#include <cstring>

namespace kite::tok {

float ProtoField::AsFloat() const {
  const auto bits = static_cast<uint32_t>(value);
  float result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}

Result<uint64_t> ProtoReader::ReadVarint() {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= bytes_.size()) {
      return InvalidInput(name_ + ": truncated varint at byte " + std::to_string(base_ + pos_));
    }
    const uint8_t byte = bytes_[pos_++];
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return result;
  }
  return InvalidInput(name_ + ": varint longer than 10 bytes at byte " +
                      std::to_string(base_ + pos_));
}

Result<bool> ProtoReader::Next(ProtoField* field) {
  if (pos_ >= bytes_.size()) return false;
  field->offset = base_ + pos_;
  const uint64_t key = KITE_TRY(ReadVarint());
  field->number = static_cast<uint32_t>(key >> 3);
  const auto wire = static_cast<uint8_t>(key & 7);
  if (field->number == 0 || key >> 3 > 0x1fffffff) {
    return InvalidInput(name_ + ": invalid field number at byte " + std::to_string(field->offset));
  }
  const auto need = [&](uint64_t size) -> Status {
    if (size > bytes_.size() - pos_) {
      return InvalidInput(name_ + ": field " + std::to_string(field->number) + " at byte " +
                          std::to_string(field->offset) + " needs " + std::to_string(size) +
                          " bytes but only " + std::to_string(bytes_.size() - pos_) + " remain");
    }
    return Ok();
  };
  switch (wire) {
    case 0:
      field->wire = ProtoField::Wire::kVarint;
      field->value = KITE_TRY(ReadVarint());
      return true;
    case 1:
    case 5: {
      const size_t size = wire == 1 ? 8 : 4;
      KITE_RETURN_IF_ERROR(need(size));
      field->wire = wire == 1 ? ProtoField::Wire::kFixed64 : ProtoField::Wire::kFixed32;
      field->value = 0;
      for (size_t i = 0; i < size; ++i) {
        field->value |= static_cast<uint64_t>(bytes_[pos_ + i]) << (8 * i);
      }
      pos_ += size;
      return true;
    }
    case 2: {
      const uint64_t size = KITE_TRY(ReadVarint());
      KITE_RETURN_IF_ERROR(need(size));
      field->wire = ProtoField::Wire::kBytes;
      field->bytes = bytes_.subspan(pos_, size);
      pos_ += size;
      return true;
    }
    default:
      return InvalidInput(name_ + ": field " + std::to_string(field->number) + " at byte " +
                          std::to_string(field->offset) + " has wire type " + std::to_string(wire) +
                          ", which is not supported (groups are obsolete)");
  }
}

}  // namespace kite::tok
