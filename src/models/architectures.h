// The architectures Kite builds graphs for, one file each (models/llama.cpp), listed in one table
// (models/architectures.cpp): a loader reads a file's config, looks its family up here, binds the
// weights the architecture lists and lets it create the Model. Adding an architecture is one file
// and one line in the table; nothing else names it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "models/model.h"

namespace kite {

// One weight the architecture expects: its canonical name and shape.
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
};

struct Architecture {
  std::string_view family;  // ModelConfig::family
  // The weights a model of this config has, in file order.
  std::vector<ExpectedTensor> (*tensors)(const ModelConfig& config);
  // The model over weights already bound and checked against `tensors(config)`.
  std::unique_ptr<Model> (*create)(ModelConfig config, WeightStore weights,
                                   Model::FileNames file_names);
};

// Unsupported naming `config.source`, the family and the known ones when there is no builder.
Result<const Architecture*> FindArchitecture(const ModelConfig& config);

}  // namespace kite
