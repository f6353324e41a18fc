#include "quant/vendor_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace kite {
namespace {

bool Same(const QuantEncoding& a, const QuantEncoding& b) {
  return a.bits == b.bits && a.is_signed == b.is_signed && a.granularity == b.granularity &&
         a.axis == b.axis && a.block_axis == b.block_axis && a.block_size == b.block_size &&
         (a.granularity != EncodingGranularity::kLpbq || a.multiplier_bits == b.multiplier_bits) &&
         a.scales == b.scales && a.offsets == b.offsets && a.multipliers == b.multipliers;
}

// One encoding of each granularity, in the canonical forms, with scales that need every bit of
// a float to come back.
VendorEncodings Sample() {
  VendorEncodings v;
  QuantEncoding act;
  act.bits = 16;
  act.scales = {1.2345678e-5f};
  act.offsets = {-31234};
  v.activations["blk.0.attn_norm"] = act;
  QuantEncoding act8 = act;
  act8.bits = 8;
  act8.scales = {0.0123456789f};
  act8.offsets = {-77};
  v.activations["blk.0.ffn_norm"] = act8;

  QuantEncoding channel;
  channel.is_signed = true;
  channel.granularity = EncodingGranularity::kPerAxis;
  channel.scales = {0.1f, 0.2f / 3, 1e-7f};
  v.params["blk.0.attn_q.weight"] = channel;
  QuantEncoding channel_asym = channel;
  channel_asym.is_signed = false;
  channel_asym.bits = 4;
  channel_asym.offsets = {-8, -3, 0};
  v.params["blk.0.attn_k.weight"] = channel_asym;

  QuantEncoding block;
  block.bits = 4;
  block.granularity = EncodingGranularity::kPerBlock;
  block.block_axis = 1;
  block.block_size = 32;
  block.scales = {0.5f, 0.25f, 1.0f / 3, 0.7f};
  block.offsets = {-1, -2, -15, 0};
  v.params["blk.0.ffn_up.weight"] = block;
  QuantEncoding block_sym = block;
  block_sym.is_signed = true;
  block_sym.offsets.clear();
  v.params["blk.0.ffn_gate.weight"] = block_sym;

  QuantEncoding lpbq;
  lpbq.bits = 4;
  lpbq.is_signed = true;
  lpbq.granularity = EncodingGranularity::kLpbq;
  lpbq.axis = 0;
  lpbq.block_axis = 1;
  lpbq.block_size = 16;
  lpbq.multiplier_bits = 4;
  lpbq.scales = {0.01f, 0.02f};
  lpbq.multipliers = {1, 15, 7, 3, 9, 12};
  v.params["blk.0.ffn_down.weight"] = lpbq;
  return v;
}

void ExpectSame(const VendorEncodings& a, const VendorEncodings& b) {
  ASSERT_EQ(a.activations.size(), b.activations.size());
  ASSERT_EQ(a.params.size(), b.params.size());
  for (const auto& [name, e] : a.activations) {
    ASSERT_TRUE(b.activations.contains(name)) << name;
    EXPECT_TRUE(Same(e, b.activations.at(name))) << name;
  }
  for (const auto& [name, e] : a.params) {
    ASSERT_TRUE(b.params.contains(name)) << name;
    EXPECT_TRUE(Same(e, b.params.at(name))) << name;
  }
}

TEST(VendorJsonTest, AimetRoundTripsEveryGranularity) {
  const VendorEncodings sample = Sample();
  auto text = WriteVendorJson(sample, VendorFormat::kAimet);
  ASSERT_TRUE(text.has_value()) << text.error().message;
  auto back = ReadVendorJson(*text, "a.json");
  ASSERT_TRUE(back.has_value()) << back.error().message;
  ExpectSame(sample, *back);
  // The fields as AIMET spells them: QNN offsets for unsigned q, LPBQ's bw the decompressed width.
  const auto json = nlohmann::json::parse(*text);
  EXPECT_EQ(json["version"], "1.0.0");
  for (const auto& entry : json["param_encodings"]) {
    if (entry["name"] == "blk.0.attn_q.weight") {
      EXPECT_EQ(entry["enc_type"], "PER_CHANNEL");
      EXPECT_EQ(entry["is_sym"], true);
      EXPECT_EQ(entry["offset"], nlohmann::json::array({-128, -128, -128}));
    }
    if (entry["name"] == "blk.0.ffn_down.weight") {
      EXPECT_EQ(entry["enc_type"], "LPBQ");
      EXPECT_EQ(entry["bw"], 8);
      EXPECT_EQ(entry["compressed_bw"], 4);
      EXPECT_EQ(entry["per_block_int_scale"], nlohmann::json::array({1, 15, 7, 3, 9, 12}));
    }
  }
}

TEST(VendorJsonTest, QnnRoundTripsPerTensorAndPerChannel) {
  VendorEncodings sample = Sample();
  sample.params.erase("blk.0.ffn_up.weight");
  sample.params.erase("blk.0.ffn_gate.weight");
  sample.params.erase("blk.0.ffn_down.weight");
  auto text = WriteVendorJson(sample, VendorFormat::kQnn);
  ASSERT_TRUE(text.has_value()) << text.error().message;
  auto back = ReadVendorJson(*text, "q.json");
  ASSERT_TRUE(back.has_value()) << back.error().message;
  ExpectSame(sample, *back);
  const auto json = nlohmann::json::parse(*text);
  const auto& act = json["activation_encodings"]["blk.0.ffn_norm"][0];
  EXPECT_EQ(act["bitwidth"], 8);
  EXPECT_EQ(act["offset"], -77);
  const double scale = 0.0123456789f;  // min and max from the float scale
  EXPECT_NEAR(act["min"].get<double>(), scale * -77, 1e-12);
  EXPECT_NEAR(act["max"].get<double>(), scale * (255 - 77), 1e-12);
  EXPECT_EQ(json["param_encodings"]["blk.0.attn_q.weight"].size(), 3u);  // one per channel
  // Per-block encodings have no QNN form: the error names the tensor and the way out.
  auto blocks = WriteVendorJson(Sample(), VendorFormat::kQnn);
  ASSERT_FALSE(blocks.has_value());
  EXPECT_NE(blocks.error().message.find("'blk.0.ffn_down.weight'"), std::string::npos);
  EXPECT_NE(blocks.error().message.find("--encodings-format aimet"), std::string::npos);
}

TEST(VendorJsonTest, BadFilesNameTheEntryAndField) {
  auto bad_bw = ReadVendorJson(
      R"({"version": "1.0.0", "param_encodings": [{"name": "w", "dtype": "INT", "bw": 5,
          "is_sym": true, "enc_type": "PER_TENSOR", "scale": [1.0], "offset": [-16]}]})",
      "x.json");
  ASSERT_FALSE(bad_bw.has_value());
  EXPECT_NE(bad_bw.error().message.find("x.json: encoding of 'w': field 'bw'"), std::string::npos)
      << bad_bw.error().message;
  auto bad_offsets = ReadVendorJson(
      R"({"param_encodings": {"w": [{"bitwidth": 8, "scale": 0.1, "offset": "zero"}]}})", "y.json");
  ASSERT_FALSE(bad_offsets.has_value());
  EXPECT_NE(bad_offsets.error().message.find("field 'offset'"), std::string::npos);
  EXPECT_FALSE(ReadVendorJson("[1, 2]", "z.json").has_value());
  // AIMET's LPBQ multipliers reach 2^(bw - compressed_bw) = 16: one more multiplier bit.
  auto sixteen = ReadVendorJson(
      R"({"version": "1.0.0", "param_encodings": [{"name": "w", "dtype": "INT", "bw": 8,
          "is_sym": true, "enc_type": "LPBQ", "compressed_bw": 4, "block_size": 32,
          "per_block_int_scale": [16, 11], "scale": [0.5], "offset": [-128]}]})",
      "l.json");
  ASSERT_TRUE(sixteen.has_value()) << sixteen.error().message;
  EXPECT_EQ(sixteen->params.at("w").multiplier_bits, 5);
}

}  // namespace
}  // namespace kite
