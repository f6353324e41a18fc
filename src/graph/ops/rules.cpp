// Helpers shared by the per-op shape rules.
#include <string>

#include "graph/op_rules.h"
#include "tensor/tensor.h"

namespace kite::rules {

std::string Describe(std::string_view role, const Value& value) {
  return std::string(role) + " " + ShapeString(value.shape) + " " +
         std::string(DTypeName(value.dtype));
}

Status ExpectInputs(RuleInputs in, size_t count, std::string_view roles) {
  if (in.size() != count) {
    return InvalidInput("takes " + std::to_string(count) + " inputs (" + std::string(roles) +
                        "), got " + std::to_string(in.size()));
  }
  return Ok();
}

Status ExpectDType(std::string_view role, const Value& value, DType dtype) {
  if (value.dtype != dtype) {
    return InvalidInput(Describe(role, value) + ": expected dtype " +
                        std::string(DTypeName(dtype)));
  }
  return Ok();
}

Status ExpectRank(std::string_view role, const Value& value, size_t rank) {
  if (value.shape.size() != rank) {
    return InvalidInput(Describe(role, value) + ": expected rank " + std::to_string(rank));
  }
  return Ok();
}

Status ExpectActivation(std::string_view role, const Value& value) {
  const DType dtype = value.dtype;
  if (dtype == DType::kF32) return Ok();
  const bool integer =
      dtype == DType::kI8 || dtype == DType::kU8 || dtype == DType::kI16 || dtype == DType::kU16;
  const std::string what = Describe(std::string(role) + " '" + value.name + "'", value);
  if (!integer) {
    return InvalidInput(what + ": expected f32, or i8/u8/i16/u16 carrying a quantization encoding");
  }
  if (!value.encoding) {
    return InvalidInput(what + " is an integer activation without a quantization encoding; " +
                        "set one (graph/encoding.h) to say what its integers stand for");
  }
  return Ok();
}

Status ExpectPlainFloat(std::string_view role, const Value& value) {
  if (value.dtype != DType::kF32 && value.dtype != DType::kF16 && value.dtype != DType::kBF16) {
    return InvalidInput(Describe(role, value) + ": expected f32, f16 or bf16");
  }
  return Ok();
}

Status ExpectWholeBlockRows(std::string_view role, const Value& value) {
  const DTypeTraits& traits = Traits(value.dtype);
  if (!value.contiguous()) {
    return InvalidInput(Describe(role, value) + ": must be contiguous (it is a strided view)");
  }
  if (value.shape.back() % traits.block_size != 0) {
    return InvalidInput(Describe(role, value) + ": rows of " + std::to_string(value.shape.back()) +
                        " elements are not a whole number of " + std::string(traits.name) +
                        " blocks of " + std::to_string(traits.block_size));
  }
  return Ok();
}

Result<OutputSpec> SameShapeAsActivation(RuleInputs in) {
  KITE_RETURN_IF_ERROR(ExpectInputs(in, 1, "x"));
  KITE_RETURN_IF_ERROR(ExpectActivation("x", *in[0]));
  return OutputSpec::Of(DType::kF32, in[0]->shape);
}

}  // namespace kite::rules
