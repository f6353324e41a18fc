#include "graph/encoding.h"

#include <cmath>

#include "tensor/tensor.h"

namespace kite {

namespace {

std::string_view GranularityName(EncodingGranularity granularity) {
  switch (granularity) {
    case EncodingGranularity::kPerTensor:
      return "per-tensor";
    case EncodingGranularity::kPerAxis:
      return "per-axis";
    case EncodingGranularity::kPerBlock:
      return "per-block";
    case EncodingGranularity::kLpbq:
      return "lpbq";
  }
  return "?";
}

bool UsesAxis(EncodingGranularity g) {
  return g == EncodingGranularity::kPerAxis || g == EncodingGranularity::kLpbq;
}
bool UsesBlocks(EncodingGranularity g) {
  return g == EncodingGranularity::kPerBlock || g == EncodingGranularity::kLpbq;
}

int64_t BlockCount(const QuantEncoding& e, std::span<const int64_t> shape) {
  int64_t count = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    count *= static_cast<int>(d) == e.block_axis ? shape[d] / e.block_size : shape[d];
  }
  return count;
}

Status CheckDim(std::string_view field, int32_t dim, std::span<const int64_t> shape) {
  if (dim < 0 || static_cast<size_t>(dim) >= shape.size()) {
    return InvalidInput(std::string(field) + " " + std::to_string(dim) + " is outside shape " +
                        ShapeString({shape.begin(), shape.end()}));
  }
  return Ok();
}

}  // namespace

int32_t QuantEncoding::q_min() const { return is_signed ? -(1 << (bits - 1)) : 0; }
int32_t QuantEncoding::q_max() const { return is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1; }

DType StorageDType(const QuantEncoding& encoding) {
  if (encoding.bits <= 4) return encoding.is_signed ? DType::kI4 : DType::kU4;
  if (encoding.bits <= 8) return encoding.is_signed ? DType::kI8 : DType::kU8;
  return encoding.is_signed ? DType::kI16 : DType::kU16;
}

std::string EncodingString(const QuantEncoding& e) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "(" + std::to_string(...).
  std::string out(e.is_signed ? "s" : "u");
  out += std::to_string(e.bits) + " ";
  out += GranularityName(e.granularity);
  const std::string axis = std::to_string(e.axis);
  const std::string blocks =
      std::to_string(e.block_size) + " along " + std::to_string(e.block_axis);
  if (e.granularity == EncodingGranularity::kPerAxis) out.append("(").append(axis).append(")");
  if (e.granularity == EncodingGranularity::kPerBlock) out.append("(").append(blocks).append(")");
  if (e.granularity == EncodingGranularity::kLpbq) {
    out.append("(axis ").append(axis).append(", ").append(blocks).append(", u");
    out.append(std::to_string(e.multiplier_bits)).append(" x)");
  }
  out.append(" [").append(std::to_string(e.scales.size())).append(" scales]");
  return out;
}

int64_t ScaleCount(const QuantEncoding& e, std::span<const int64_t> shape) {
  switch (e.granularity) {
    case EncodingGranularity::kPerTensor:
      return 1;
    case EncodingGranularity::kPerAxis:
    case EncodingGranularity::kLpbq:
      return shape[e.axis];
    case EncodingGranularity::kPerBlock:
      return BlockCount(e, shape);
  }
  return 1;
}

Status ValidateEncoding(const QuantEncoding& e, std::span<const int64_t> shape, DType dtype) {
  if (e.bits != 4 && e.bits != 8 && e.bits != 16) {
    return InvalidInput("bit width " + std::to_string(e.bits) + " is not 4, 8 or 16");
  }
  if (dtype != StorageDType(e)) {
    return InvalidInput(std::string(e.is_signed ? "a signed " : "an unsigned ") +
                        std::to_string(e.bits) + "-bit encoding is stored as " +
                        std::string(DTypeName(StorageDType(e))) + ", not " +
                        std::string(DTypeName(dtype)));
  }
  if (UsesAxis(e.granularity)) KITE_RETURN_IF_ERROR(CheckDim("axis", e.axis, shape));
  if (UsesBlocks(e.granularity)) {
    KITE_RETURN_IF_ERROR(CheckDim("block_axis", e.block_axis, shape));
    if (e.block_size <= 0 || shape[e.block_axis] % e.block_size != 0) {
      return InvalidInput("block_size " + std::to_string(e.block_size) + " does not divide dim " +
                          std::to_string(e.block_axis) + " (" +
                          std::to_string(shape[e.block_axis]) + ") of shape " +
                          ShapeString({shape.begin(), shape.end()}));
    }
  }
  if (e.granularity == EncodingGranularity::kLpbq && e.axis == e.block_axis) {
    return InvalidInput("lpbq: axis and block_axis are both " + std::to_string(e.axis) +
                        "; blocks run along another dim than the channels");
  }

  const int64_t count = ScaleCount(e, shape);
  if (static_cast<int64_t>(e.scales.size()) != count) {
    return InvalidInput(std::to_string(e.scales.size()) + " scales for " +
                        std::string(GranularityName(e.granularity)) + " on shape " +
                        ShapeString({shape.begin(), shape.end()}) + ", expected " +
                        std::to_string(count));
  }
  for (size_t i = 0; i < e.scales.size(); ++i) {
    if (!(e.scales[i] > 0.0f) || !std::isfinite(e.scales[i])) {
      return InvalidInput("scale " + std::to_string(i) + " is " + std::to_string(e.scales[i]) +
                          ", expected finite and > 0");
    }
  }
  if (!e.offsets.empty() && e.offsets.size() != e.scales.size()) {
    return InvalidInput(std::to_string(e.offsets.size()) + " offsets for " +
                        std::to_string(e.scales.size()) + " scales; expected none or one each");
  }
  for (size_t i = 0; i < e.offsets.size(); ++i) {
    // Real 0 is q = -offset; it must be a value q can hold, or zero padding is not exact.
    const int64_t zero = -static_cast<int64_t>(e.offsets[i]);
    if (zero < e.q_min() || zero > e.q_max()) {
      return InvalidInput("offset " + std::to_string(i) + " is " + std::to_string(e.offsets[i]) +
                          ": real 0 would be q = " + std::to_string(zero) + ", outside " +
                          std::string(DTypeName(dtype)) + " range [" + std::to_string(e.q_min()) +
                          ", " + std::to_string(e.q_max()) + "]");
    }
  }

  if (e.granularity != EncodingGranularity::kLpbq) {
    if (!e.multipliers.empty()) {
      return InvalidInput(std::to_string(e.multipliers.size()) + " block multipliers on a " +
                          std::string(GranularityName(e.granularity)) +
                          " encoding; only lpbq has them");
    }
    return Ok();
  }
  if (e.multiplier_bits < 1 || e.multiplier_bits > 8) {
    return InvalidInput("lpbq: multiplier_bits " + std::to_string(e.multiplier_bits) +
                        " is not in 1..8");
  }
  const int64_t blocks = BlockCount(e, shape);
  if (static_cast<int64_t>(e.multipliers.size()) != blocks) {
    return InvalidInput("lpbq: " + std::to_string(e.multipliers.size()) +
                        " block multipliers on shape " + ShapeString({shape.begin(), shape.end()}) +
                        ", expected " + std::to_string(blocks) + " (one per block of " +
                        std::to_string(e.block_size) + " along dim " +
                        std::to_string(e.block_axis) + ")");
  }
  const int32_t max_multiplier = (1 << e.multiplier_bits) - 1;
  for (size_t i = 0; i < e.multipliers.size(); ++i) {
    if (e.multipliers[i] < 1 || e.multipliers[i] > max_multiplier) {
      return InvalidInput("lpbq: block multiplier " + std::to_string(i) + " is " +
                          std::to_string(e.multipliers[i]) + ", expected 1.." +
                          std::to_string(max_multiplier) + " (" +
                          std::to_string(e.multiplier_bits) + " bits)");
    }
  }
  return Ok();
}

ScaleOffset ScaleOffsetAt(const QuantEncoding& e, std::span<const int64_t> shape, int64_t index) {
  // Row-major coordinates of `index`, folded into the channel and the block it falls in.
  int64_t channel = 0;
  int64_t block = 0;
  int64_t block_stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t coord = index % shape[d];
    index /= shape[d];
    if (static_cast<int>(d) == e.axis) channel = coord;
    const bool blocked = UsesBlocks(e.granularity) && static_cast<int>(d) == e.block_axis;
    block += (blocked ? coord / e.block_size : coord) * block_stride;
    block_stride *= blocked ? shape[d] / e.block_size : shape[d];
  }
  auto offset = [&](int64_t i) { return e.offsets.empty() ? 0 : e.offsets[i]; };
  switch (e.granularity) {
    case EncodingGranularity::kPerTensor:
      return {e.scales[0], offset(0)};
    case EncodingGranularity::kPerAxis:
      return {e.scales[channel], offset(channel)};
    case EncodingGranularity::kPerBlock:
      return {e.scales[block], offset(block)};
    case EncodingGranularity::kLpbq:
      return {e.scales[channel] * e.multipliers[block], offset(channel)};
  }
  return {};
}

}  // namespace kite
