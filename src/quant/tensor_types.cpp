#include "quant/tensor_types.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cctype>

#include "tensor/dtype_row.h"

namespace kite {

namespace {

std::string Lower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

// Types Kite can encode that llama.cpp stores weights in: q8_K is only the partner its k-quant
// dot products quantize activations to.
bool Writable(const DTypeRow& row) {
  return row.quantize != nullptr && row.dtype != DType::kQ8_K;
}

// Whether rows of `columns` elements are whole blocks of `dtype`; InvalidInput naming the
// tensor and the flag that asked for it otherwise.
Status CheckFits(DType dtype, const SourceTensorInfo& tensor, const std::string& flag) {
  const int64_t block = Traits(dtype).block_size;
  if (tensor.shape.back() % block == 0) return Ok();
  return InvalidInput(flag + ": tensor '" + tensor.name + "' has rows of " +
                      std::to_string(tensor.shape.back()) + " elements, not a whole number of " +
                      std::string(DTypeName(dtype)) + " blocks of " + std::to_string(block));
}

}  // namespace

struct TypeOverride::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

std::vector<std::string> WritableGgmlTypeNames() {
  std::vector<std::string> names;
  for (const DTypeRow* row : AllRows()) {
    if (Writable(*row)) names.push_back(Lower(row->name));
  }
  return names;
}

Result<DType> ParseGgmlType(std::string_view name, std::string_view flag) {
  const std::string wanted = Lower(name);
  std::string valid;
  for (const DTypeRow* row : AllRows()) {
    if (!Writable(*row)) continue;
    if (Lower(row->name) == wanted) return row->dtype;
    valid += (valid.empty() ? "" : ", ") + Lower(row->name);
  }
  return InvalidInput(std::string(flag) + ": type '" + std::string(name) +
                      "' is not one Kite writes: " + valid);
}

Result<ExportType> ParseQuantizeType(std::string_view name, bool pure) {
  auto type = ParseExportType(Lower(name));
  if (!type) return std::unexpected(std::move(type.error()).WithContext("--type"));
  // Without --pure every quantized type follows llama-quantize's rules for its file type (its
  // Q4_0 also gives the output projection Q6_K); with it, the type goes everywhere.
  type->mix = !pure && Traits(type->base).block_size > 1;
  return *type;
}

Result<TypeOverride> TypeOverride::Parse(std::string_view spec) {
  const std::string flag = "--override '" + std::string(spec) + "'";
  const size_t equals = spec.rfind('=');
  if (equals == std::string_view::npos || equals == 0 || equals + 1 == spec.size()) {
    return InvalidInput(flag + ": expected REGEX=TYPE (e.g. 'attn_v=q8_0')");
  }
  TypeOverride result;
  result.spec_ = std::string(spec);
  result.dtype_ = KITE_TRY(ParseGgmlType(spec.substr(equals + 1), flag));
  const std::string_view pattern = spec.substr(0, equals);
  int error = 0;
  PCRE2_SIZE offset = 0;
  auto code = std::make_shared<Code>();
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), 0,
                             &error, &offset, nullptr);
  if (code->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return InvalidInput(flag + ": bad regex at offset " + std::to_string(offset) + ": " +
                        reinterpret_cast<const char*>(message));
  }
  result.code_ = std::move(code);
  return result;
}

bool TypeOverride::Matches(const std::string& name) const {
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  const int found = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(name.data()), name.size(),
                                0, 0, data, nullptr);
  pcre2_match_data_free(data);
  return found >= 0;
}

Result<std::vector<TensorTypeChoice>> ChooseTensorTypes(std::span<const SourceTensorInfo> tensors,
                                                        const TensorTypeContext& context,
                                                        const TensorTypeOptions& options) {
  std::vector<TensorTypeChoice> choices;
  std::vector<bool> used(options.overrides.size(), false);
  const bool has_output =
      std::any_of(tensors.begin(), tensors.end(),
                  [](const SourceTensorInfo& t) { return t.name == "output.weight"; });
  for (const SourceTensorInfo& tensor : tensors) {
    TensorTypeChoice choice;
    if (!QuantizableWeight(tensor.name, tensor.shape)) {
      choices.push_back({tensor.stored, "kept (not a quantizable weight)"});
      continue;
    }
    const DType wanted = options.type.mix
                             ? LlamaMixtureType(options.type.file_type, options.type.base,
                                                tensor.name, tensor.shape, context)
                             : options.type.base;
    choice.dtype = ChooseTensorType(options.type, tensor.name, tensor.shape, context);
    choice.reason = choice.dtype != wanted
                        ? "fallback from " + std::string(DTypeName(wanted))
                        : (options.type.mix ? "mixture " + options.type.name : "type");
    const bool head =
        tensor.name == "output.weight" || (!has_output && tensor.name == "token_embd.weight");
    if (head && options.output_type) {
      KITE_RETURN_IF_ERROR(CheckFits(*options.output_type, tensor, "--output-tensor-type"));
      choice = {*options.output_type, "--output-tensor-type"};
    }
    if (tensor.name == "token_embd.weight" && options.embedding_type) {
      KITE_RETURN_IF_ERROR(CheckFits(*options.embedding_type, tensor, "--token-embedding-type"));
      choice = {*options.embedding_type, "--token-embedding-type"};
    }
    for (size_t i = 0; i < options.overrides.size(); ++i) {
      const TypeOverride& override = options.overrides[i];
      if (!override.Matches(tensor.name)) continue;
      const std::string flag = "--override '" + override.spec() + "'";
      KITE_RETURN_IF_ERROR(CheckFits(override.dtype(), tensor, flag));
      choice = {override.dtype(), flag};
      used[i] = true;
      break;
    }
    choices.push_back(std::move(choice));
  }
  for (size_t i = 0; i < used.size(); ++i) {
    if (!used[i]) {
      return InvalidInput("--override '" + options.overrides[i].spec() +
                          "': the pattern matches no quantizable tensor (the first pattern that "
                          "matches a tensor takes it)");
    }
  }
  return choices;
}

bool IsBlockLinear(const SourceTensorInfo& info) {
  return info.name.starts_with("blk.") && QuantizableWeight(info.name, info.shape);
}

}  // namespace kite
