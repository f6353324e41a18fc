// OnnxModel on messages built with Debian's generated onnx.proto classes: what it reads, and
// that each refusal names the initializer, node or field.
#include "format/onnx_file.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace kite {
namespace {

onnx::ModelProto SmallModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("test");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* graph = model.mutable_graph();
  auto* input = graph->add_input();
  input->set_name("x");
  auto* tensor_type = input->mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(onnx::TensorProto::FLOAT);
  tensor_type->mutable_shape()->add_dim()->set_dim_param("batch");
  tensor_type->mutable_shape()->add_dim()->set_dim_value(2);
  auto* w = graph->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(2);
  const float values[4] = {1, 2, 3, 4};
  w->set_raw_data(std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  auto* b = graph->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::INT64);
  b->add_dims(2);
  b->add_int64_data(-1);
  b->add_int64_data(7);
  auto* node = graph->add_node();
  node->set_name("mm");
  node->set_op_type("MatMul");
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  auto* axis = node->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(-1);
  auto* value = node->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_float_data(0.5f);
  graph->add_output()->set_name("y");
  return model;
}

Result<OnnxModel> Parse(const onnx::ModelProto& model) {
  const std::string bytes = model.SerializeAsString();
  return OnnxModel::Parse({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "t.onnx");
}

TEST(OnnxFile, ReadsGraphInitializersAndAttributes) {
  auto model = Parse(SmallModel());
  ASSERT_TRUE(model.has_value()) << model.error().message;
  EXPECT_EQ(model->opsets().at(""), 17);
  EXPECT_EQ(model->producer(), "test");
  ASSERT_EQ(model->inputs().size(), 1u);
  EXPECT_EQ(model->inputs()[0].dims[0].param, "batch");
  EXPECT_EQ(model->inputs()[0].dims[1].value, 2);
  const OnnxTensor* w = model->FindInitializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->origin, "raw_data");
  ASSERT_EQ(w->data.size(), 16u);
  float third;
  std::memcpy(&third, w->data.data() + 8, 4);
  EXPECT_EQ(third, 3.0f);
  const OnnxTensor* b = model->FindInitializer("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->origin, "int64_data");
  int64_t first;
  std::memcpy(&first, b->data.data(), 8);
  EXPECT_EQ(first, -1);
  ASSERT_EQ(model->nodes().size(), 1u);
  const OnnxNode& node = model->nodes()[0];
  EXPECT_EQ(node.Describe(), "'mm' (MatMul)");
  ASSERT_NE(node.Attribute("axis"), nullptr);
  EXPECT_EQ(node.Attribute("axis")->i, -1);
  const OnnxAttribute* value = node.Attribute("value");
  ASSERT_NE(value, nullptr);
  ASSERT_EQ(value->kind, OnnxAttribute::Kind::kTensor);
  EXPECT_EQ(model->attribute_tensors()[value->tensor].data.size(), 4u);
}

TEST(OnnxFile, RefusesRawDataOfTheWrongSize) {
  onnx::ModelProto proto = SmallModel();
  proto.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(12);
  auto model = Parse(proto);
  ASSERT_FALSE(model.has_value());
  EXPECT_NE(model.error().message.find("initializer 'w': raw_data has 12 bytes, its dims and type need 16"),
            std::string::npos)
      << model.error().message;
}

TEST(OnnxFile, RefusesATypedFieldOfTheWrongCount) {
  onnx::ModelProto proto = SmallModel();
  proto.mutable_graph()->mutable_initializer(1)->add_int64_data(3);
  auto model = Parse(proto);
  ASSERT_FALSE(model.has_value());
  EXPECT_NE(model.error().message.find("initializer 'b': int64_data holds 3 values, its dims 2"),
            std::string::npos)
      << model.error().message;
}

TEST(OnnxFile, RefusesAnInitializerGivenTwice) {
  onnx::ModelProto proto = SmallModel();
  *proto.mutable_graph()->add_initializer() = proto.graph().initializer(1);
  auto model = Parse(proto);
  ASSERT_FALSE(model.has_value());
  EXPECT_NE(model.error().message.find("initializer 'b' is given twice"), std::string::npos);
}

TEST(OnnxFile, RefusesANodeAttributeTensorNamingTheNode) {
  onnx::ModelProto proto = SmallModel();
  proto.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_t()->set_data_type(
      onnx::TensorProto::STRING);
  auto model = Parse(proto);
  ASSERT_FALSE(model.has_value());
  EXPECT_NE(model.error().message.find("node 'mm' (MatMul) attribute 'value' has data type STRING"),
            std::string::npos)
      << model.error().message;
}

TEST(OnnxFile, RefusesBytesThatAreNotOnnx) {
  const uint8_t junk[] = {0xff, 0xff, 0xff, 0x01, 0x02};
  auto model = OnnxModel::Parse(junk, "junk.onnx");
  ASSERT_FALSE(model.has_value());
  EXPECT_NE(model.error().message.find("junk.onnx: not a valid ONNX model"), std::string::npos);
}

class OnnxExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / ("onnx-external-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const float values[4] = {5, 6, 7, 8};
    std::ofstream(dir_ / "w.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(values), sizeof(values));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // SmallModel with "w" in w.bin at `location`, `offset`.
  Result<OnnxModel> Open(const std::string& location, const std::string& offset) {
    onnx::ModelProto proto = SmallModel();
    auto* w = proto.mutable_graph()->mutable_initializer(0);
    w->clear_raw_data();
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", location},
                                     {"offset", offset}, {"length", "16"}}) {
      auto* entry = w->add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
    const std::string path = (dir_ / "model.onnx").string();
    std::ofstream(path, std::ios::binary) << proto.SerializeAsString();
    return OnnxModel::Open(path);
  }

  std::filesystem::path dir_;
};

TEST_F(OnnxExternalData, ReadsTheFileBesideTheModel) {
  auto model = Open("w.bin", "0");
  ASSERT_TRUE(model.has_value()) << model.error().message;
  const OnnxTensor* w = model->FindInitializer("w");
  ASSERT_EQ(w->data.size(), 16u);
  EXPECT_EQ(w->origin, "external w.bin");
  float first;
  std::memcpy(&first, w->data.data(), 4);
  EXPECT_EQ(first, 5.0f);
  model->ReleaseInitializer("w");
  EXPECT_TRUE(model->FindInitializer("w")->data.empty());
}

TEST_F(OnnxExternalData, RefusesALocationOutsideTheFolder) {
  auto model = Open("../w.bin", "0");
  ASSERT_FALSE(model.has_value());
  EXPECT_NE(model.error().message.find("initializer 'w': external_data location '../w.bin' must name a file beside the model"),
            std::string::npos)
      << model.error().message;
}

TEST_F(OnnxExternalData, RefusesDataPastTheEndOfTheFile) {
  auto model = Open("w.bin", "4");
  ASSERT_FALSE(model.has_value());
  EXPECT_NE(model.error().message.find("runs past the end of 'w.bin' (16 bytes)"), std::string::npos)
      << model.error().message;
}

TEST_F(OnnxExternalData, RefusesAnOffsetThatIsNotANumber) {
  auto model = Open("w.bin", "-4");
  ASSERT_FALSE(model.has_value());
  EXPECT_NE(model.error().message.find("external_data offset '-4' is not a byte count"), std::string::npos)
      << model.error().message;
}

}  // namespace
}  // namespace kite
