// What a chip's NPU can run, as data: the feature gates and sizes of chips/NAME.json (one file
// per chip). The npusim backend's support rules (npu_support.h) read these; profile/chip.h reads
// the same files through this reader and adds the cost model's parameters. Adding a chip is
// adding a file; nothing in the code names one.
#pragma once

#include <string>
#include <vector>

#include "base/json_util.h"
#include "base/status.h"

namespace kite {

struct ChipFeatures {
  std::string name;     // the file's stem: "8gen3"
  std::string hexagon;  // "v75", for messages: the rules test features, never versions
  double vtcm_mb = 0;   // tightly coupled memory the matrix unit's tiles live in
  int hvx_contexts = 0;
  bool act16 = false;  // 16-bit activations on both matmul inputs (q·kᵀ, p·v)
  bool lpbq = false;   // low-power block quantization of weights
  bool fp16 = false;   // fp16 activations (and fp16 arithmetic inside ops) on the NPU

  // "888 (v68)", for messages.
  std::string Label() const { return name + " (" + hexagon + ")"; }
};

// The chip files' folder: the one the build names (the source tree's chips/).
std::string DefaultChipsDir();
// The names of the chips under `dir`, sorted.
Result<std::vector<std::string>> ListChips(const std::string& dir);

// One chip file read and parsed: its path, its JSON (for the fields other layers read) and the
// features.
struct ChipFile {
  std::string file;
  nlohmann::json json;
  ChipFeatures features;
};
// `text` of the chip file `file`: InvalidInput naming the file and field for a missing or
// mistyped field.
Result<ChipFile> ParseChipFile(std::string_view text, const std::string& file);
// `dir`/`name`.json. NotFound listing the chips when there is no such file; InvalidInput when its
// name field is not its stem.
Result<ChipFile> ReadChipFile(const std::string& dir, const std::string& name);

}  // namespace kite
