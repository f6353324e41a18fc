#include "quant/vendor_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace kite {

namespace {

using Json = nlohmann::ordered_json;

// QNN/AIMET offsets are for unsigned q of `bits`; Kite's signed q is 2^(bits-1) lower.
int32_t Shift(const QuantEncoding& e) { return e.is_signed ? -(1 << (e.bits - 1)) : 0; }

int32_t OffsetAt(const QuantEncoding& e, size_t i) {
  return (e.offsets.empty() ? 0 : e.offsets[i]) + Shift(e);
}

// Symmetric: a signed encoding with every offset zero.
bool Symmetric(const QuantEncoding& e) {
  if (!e.is_signed) return false;
  for (int32_t offset : e.offsets) {
    if (offset != 0) return false;
  }
  return true;
}

std::unexpected<Error> Unsayable(const std::string& name, const std::string& why) {
  return InvalidInput("encoding of '" + name + "': " + why);
}

Result<Json> AimetEntry(const std::string& name, const QuantEncoding& e) {
  Json entry = {{"name", name}, {"dtype", "INT"}};
  Json offsets = Json::array();
  switch (e.granularity) {
    case EncodingGranularity::kPerTensor:
      entry["enc_type"] = "PER_TENSOR";
      break;
    case EncodingGranularity::kPerAxis:
      if (e.axis != 0) return Unsayable(name, "AIMET's PER_CHANNEL is on axis 0");
      entry["enc_type"] = "PER_CHANNEL";
      break;
    case EncodingGranularity::kPerBlock:
      if (e.block_axis != 1) return Unsayable(name, "AIMET's PER_BLOCK runs along axis 1");
      entry["enc_type"] = "PER_BLOCK";
      entry["block_size"] = e.block_size;
      break;
    case EncodingGranularity::kLpbq:
      if (e.axis != 0 || e.block_axis != 1) {
        return Unsayable(name, "AIMET's LPBQ has channels on axis 0 and blocks along axis 1");
      }
      if (!Symmetric(e)) return Unsayable(name, "AIMET's LPBQ is symmetric (signed, no offsets)");
      entry["enc_type"] = "LPBQ";
      entry["block_size"] = e.block_size;
      entry["compressed_bw"] = e.bits;
      entry["per_block_int_scale"] = e.multipliers;
      break;
  }
  const int32_t bw =
      e.granularity == EncodingGranularity::kLpbq ? e.bits + e.multiplier_bits : e.bits;
  entry["bw"] = bw;
  entry["is_sym"] = Symmetric(e);
  entry["scale"] = e.scales;
  for (size_t i = 0; i < e.scales.size(); ++i) {
    offsets.push_back(e.granularity == EncodingGranularity::kLpbq ? -(1 << (bw - 1))
                                                                  : OffsetAt(e, i));
  }
  entry["offset"] = offsets;
  return entry;
}

Result<Json> QnnEntries(const std::string& name, const QuantEncoding& e) {
  if (e.granularity == EncodingGranularity::kPerBlock ||
      e.granularity == EncodingGranularity::kLpbq) {
    return Unsayable(name,
                     "QNN's overrides JSON holds per-tensor and per-channel encodings (use "
                     "--encodings-format aimet)");
  }
  if (e.granularity == EncodingGranularity::kPerAxis && e.axis != 0) {
    return Unsayable(name, "QNN's per-channel overrides are on axis 0");
  }
  Json list = Json::array();
  const int32_t levels = (1 << e.bits) - 1;
  for (size_t i = 0; i < e.scales.size(); ++i) {
    const int32_t offset = OffsetAt(e, i);
    const double scale = e.scales[i];
    list.push_back({{"bitwidth", e.bits},
                    {"dtype", "int"},
                    {"is_symmetric", Symmetric(e) ? "True" : "False"},
                    {"max", scale * (offset + levels)},
                    {"min", scale * offset},
                    {"offset", offset},
                    {"scale", e.scales[i]}});
  }
  return list;
}

// Fields read with the entry's name in every error.
struct Reader {
  const std::string& what;
  std::string name;
  const Json& entry;

  std::unexpected<Error> Bad(const std::string& field, const std::string& expected) const {
    return InvalidInput(what + ": encoding of '" + name + "': field '" + field + "' " + expected);
  }
  Result<int64_t> Int(const char* field) const {
    if (!entry.contains(field) || !entry[field].is_number_integer()) {
      return Bad(field, "should be an integer");
    }
    return entry[field].get<int64_t>();
  }
  Result<bool> Bool(const char* field) const {
    if (entry.contains(field) && entry[field].is_boolean()) return entry[field].get<bool>();
    if (entry.contains(field) && entry[field].is_string()) {
      const std::string text = entry[field];
      if (text == "True" || text == "true") return true;
      if (text == "False" || text == "false") return false;
    }
    return Bad(field, "should be true or false");
  }
  template <typename T>
  Result<std::vector<T>> List(const char* field) const {
    if (!entry.contains(field) || !entry[field].is_array()) return Bad(field, "should be a list");
    std::vector<T> values;
    for (const Json& item : entry[field]) {
      if (!item.is_number()) return Bad(field, "should hold numbers");
      values.push_back(item.get<T>());
    }
    return values;
  }
};

Status CheckBits(const Reader& in, int64_t bits, const char* field) {
  if (bits != 4 && bits != 8 && bits != 16) return in.Bad(field, "should be 4, 8 or 16");
  return Ok();
}

// Offsets (unsigned convention) to Kite's: signed with none when symmetric at -2^(bits-1).
void SetOffsets(QuantEncoding* e, bool symmetric, const std::vector<double>& offsets) {
  e->is_signed = symmetric;
  e->offsets.clear();
  if (symmetric) return;
  for (double offset : offsets) e->offsets.push_back(static_cast<int32_t>(std::lround(offset)));
}

Result<QuantEncoding> FromAimet(const Reader& in) {
  QuantEncoding e;
  const std::string type = in.entry.value("enc_type", std::string("PER_TENSOR"));
  const int64_t bw = KITE_TRY(in.Int("bw"));
  const bool symmetric = KITE_TRY(in.Bool("is_sym"));
  e.scales = KITE_TRY(in.List<float>("scale"));
  const std::vector<double> offsets = KITE_TRY(in.List<double>("offset"));
  if (offsets.size() != e.scales.size()) return in.Bad("offset", "should hold one per scale");
  if (type == "LPBQ") {
    e.granularity = EncodingGranularity::kLpbq;
    e.bits = static_cast<int32_t>(KITE_TRY(in.Int("compressed_bw")));
    KITE_RETURN_IF_ERROR(CheckBits(in, e.bits, "compressed_bw"));
    if (bw <= e.bits || bw - e.bits > 8) return in.Bad("bw", "should exceed compressed_bw by 1..8");
    e.multiplier_bits = static_cast<int32_t>(bw - e.bits);
    e.block_size = KITE_TRY(in.Int("block_size"));
    e.axis = 0;
    e.block_axis = 1;
    for (int64_t m : KITE_TRY(in.List<int64_t>("per_block_int_scale"))) {
      if (m < 1 || m > 255) return in.Bad("per_block_int_scale", "should hold 1..255");
      e.multipliers.push_back(static_cast<uint8_t>(m));
      // AIMET's multipliers reach 2^(bw - compressed_bw): one more bit than Kite's range holds.
      if (m > (1 << e.multiplier_bits) - 1 && e.multiplier_bits < 8) ++e.multiplier_bits;
    }
    e.is_signed = true;  // symmetric: AIMET's LPBQ offsets are -2^(bw-1)
    return e;
  }
  e.bits = static_cast<int32_t>(bw);
  KITE_RETURN_IF_ERROR(CheckBits(in, bw, "bw"));
  if (type == "PER_TENSOR") {
    e.granularity = EncodingGranularity::kPerTensor;
  } else if (type == "PER_CHANNEL") {
    e.granularity = EncodingGranularity::kPerAxis;
    e.axis = 0;
  } else if (type == "PER_BLOCK") {
    e.granularity = EncodingGranularity::kPerBlock;
    e.block_axis = 1;
    e.block_size = KITE_TRY(in.Int("block_size"));
  } else {
    return in.Bad("enc_type", "should be PER_TENSOR, PER_CHANNEL, PER_BLOCK or LPBQ");
  }
  SetOffsets(&e, symmetric, offsets);
  return e;
}

Result<QuantEncoding> FromQnn(const Reader& in) {
  if (!in.entry.is_array() || in.entry.empty()) {
    return InvalidInput(in.what + ": encoding of '" + in.name +
                        "' should be a list of one encoding per tensor or channel");
  }
  QuantEncoding e;
  e.granularity =
      in.entry.size() == 1 ? EncodingGranularity::kPerTensor : EncodingGranularity::kPerAxis;
  bool symmetric = true;
  std::vector<double> offsets;
  for (size_t i = 0; i < in.entry.size(); ++i) {
    const Reader item{in.what, in.name + "'[" + std::to_string(i) + "]'", in.entry[i]};
    const int64_t bits = KITE_TRY(item.Int("bitwidth"));
    KITE_RETURN_IF_ERROR(CheckBits(item, bits, "bitwidth"));
    if (i > 0 && bits != e.bits)
      return item.Bad("bitwidth", "should be the same for every channel");
    e.bits = static_cast<int32_t>(bits);
    if (!item.entry.contains("scale") || !item.entry["scale"].is_number()) {
      return item.Bad("scale", "should be a number");
    }
    e.scales.push_back(item.entry["scale"].get<float>());
    offsets.push_back(static_cast<double>(KITE_TRY(item.Int("offset"))));
    symmetric =
        symmetric && item.entry.contains("is_symmetric") && KITE_TRY(item.Bool("is_symmetric"));
  }
  SetOffsets(&e, symmetric, offsets);
  return e;
}

}  // namespace

Result<VendorFormat> ParseVendorFormat(const std::string& name) {
  if (name == "aimet") return VendorFormat::kAimet;
  if (name == "qnn") return VendorFormat::kQnn;
  return InvalidInput("--encodings-format: '" + name + "' is not aimet or qnn");
}

Result<std::string> WriteVendorJson(const VendorEncodings& encodings, VendorFormat format) {
  Json json;
  if (format == VendorFormat::kAimet) {
    json["version"] = "1.0.0";
    json["activation_encodings"] = Json::array();
    json["param_encodings"] = Json::array();
    for (const auto& [name, e] : encodings.activations) {
      json["activation_encodings"].push_back(KITE_TRY(AimetEntry(name, e)));
    }
    for (const auto& [name, e] : encodings.params) {
      json["param_encodings"].push_back(KITE_TRY(AimetEntry(name, e)));
    }
  } else {
    json["activation_encodings"] = Json::object();
    json["param_encodings"] = Json::object();
    for (const auto& [name, e] : encodings.activations) {
      json["activation_encodings"][name] = KITE_TRY(QnnEntries(name, e));
    }
    for (const auto& [name, e] : encodings.params) {
      json["param_encodings"][name] = KITE_TRY(QnnEntries(name, e));
    }
  }
  return json.dump(2) + "\n";
}

Result<VendorEncodings> ReadVendorJson(const std::string& text, const std::string& what) {
  const Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return InvalidInput(what + ": not a JSON object");
  VendorEncodings out;
  for (const char* section : {"activation_encodings", "param_encodings"}) {
    auto& target = std::string(section) == "param_encodings" ? out.params : out.activations;
    if (!json.contains(section)) continue;
    const Json& entries = json[section];
    if (entries.is_array()) {  // AIMET 1.0.0
      if (json.value("version", std::string()) != "1.0.0") {
        return InvalidInput(what + ": AIMET encodings need \"version\": \"1.0.0\"");
      }
      for (const Json& entry : entries) {
        if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) {
          return InvalidInput(what + ": an entry of '" + section + "' has no name");
        }
        const std::string name = entry["name"];
        target[name] = KITE_TRY(FromAimet(Reader{what, name, entry}));
      }
    } else if (entries.is_object()) {  // QNN overrides
      for (const auto& [name, entry] : entries.items()) {
        target[name] = KITE_TRY(FromQnn(Reader{what, name, entry}));
      }
    } else {
      return InvalidInput(what + ": '" + section + "' should be a list (AIMET) or an object (QNN)");
    }
  }
  return out;
}

}  // namespace kite
