#include "quant/size_target.h"

#include <cstdio>

#include "export/gguf_stream.h"
#include "quant/mix_search.h"

namespace kite {

Status SolveSizeTarget(const QuantizeSource& source, const GgufWriter& metadata,
                       const std::map<std::string, std::vector<float>>& importance,
                       const QuantizeModelOptions& options, std::vector<TensorTypeChoice>* choices,
                       QuantizeReport* report) {
  if (options.target_bpw > 0 && options.target_size > 0) {
    return InvalidInput("--target-bpw and --target-size: give one budget, not both");
  }
  const std::string flag = options.target_bpw > 0 ? "--target-bpw" : "--target-size";
  std::vector<size_t> solved;
  std::vector<MixTensor> mix;
  uint64_t linear_elements = 0, pinned_bytes = 0;
  for (size_t i = 0; i < source.tensors.size(); ++i) {
    const SourceTensorInfo& info = source.tensors[i];
    if (!IsBlockLinear(info)) continue;
    const uint64_t elements = KITE_TRY(ElementCount(info.shape));
    linear_elements += elements;
    if ((*choices)[i].pinned()) {
      pinned_bytes += KITE_TRY(BytesFor((*choices)[i].dtype, elements));
      continue;
    }
    const int64_t columns = info.shape.back(), rows = static_cast<int64_t>(elements) / columns;
    const auto weights = importance.find(info.name);
    const ReadRows& read = source.rows[i];
    const std::vector<DType> types = MixCandidateTypes(columns);
    MixTensor tensor{
        info.name,
        KITE_TRY(MeasureCandidates(
            [&read](int64_t row, float* out) { return read(row, 1, out); }, rows, columns,
            weights != importance.end() ? weights->second.data() : nullptr, types))};
    mix.push_back(std::move(tensor));
    solved.push_back(i);
  }
  uint64_t budget = 0;
  if (options.target_bpw > 0) {
    const double bits = options.target_bpw * static_cast<double>(linear_elements) / 8.0;
    budget =
        static_cast<uint64_t>(bits) > pinned_bytes ? static_cast<uint64_t>(bits) - pinned_bytes : 0;
    char bpw[32];
    std::snprintf(bpw, sizeof(bpw), "%g", options.target_bpw);
    report->target = flag + " " + bpw + " (block linears)";
  } else {
    // The file less the solved tensors (the header's size does not depend on their types), and
    // up to 31 bytes of alignment padding after each of them.
    std::vector<StreamedTensor> planned;
    uint64_t solved_padded = 0;
    for (size_t i = 0; i < source.tensors.size(); ++i) {
      const SourceTensorInfo& info = source.tensors[i];
      planned.push_back({info.name, (*choices)[i].dtype, info.shape,
                         [](int64_t, int64_t, std::span<uint8_t>) { return Ok(); }});
    }
    for (size_t i : solved) {
      const uint64_t bytes =
          KITE_TRY(BytesFor((*choices)[i].dtype, KITE_TRY(ElementCount(source.tensors[i].shape))));
      solved_padded += (bytes + 31) / 32 * 32;
    }
    const uint64_t rest = KITE_TRY(StreamedGgufSize(metadata, planned)) - solved_padded;
    const uint64_t reserved = rest + 32 * solved.size();
    if (options.target_size <= reserved) {
      return InvalidInput(flag + ": infeasible: the file without the block linears already takes " +
                          std::to_string(rest) + " bytes of the " +
                          std::to_string(options.target_size) + " asked for");
    }
    budget = options.target_size - reserved;
    report->target = flag + " " + std::to_string(options.target_size) + " bytes";
  }
  const std::vector<size_t> picks = KITE_TRY(SolveMix(mix, budget, flag));
  for (size_t k = 0; k < solved.size(); ++k) {
    const MixCandidate& pick = mix[k].candidates[picks[k]];
    (*choices)[solved[k]] = {pick.dtype, flag, pick.error};
  }
  return Ok();
}

}  // namespace kite
