// The ONNX import's pieces on small graphs built with Debian's onnx.proto classes: the folder's
// ops against the ONNX operator specification's definitions (worked by hand below), the RMSNorm
// matcher on ONNX Runtime's fused op, and the refusals of inputs and opsets Kite cannot bind.
// The whole import against ONNX Runtime is tests/onnx_import_test.cpp.
#include "models/onnx_import.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <limits>

#include "models/onnx_fold.h"
#include "models/onnx_patterns.h"

namespace kite {
namespace {

class GraphBuilder {
 public:
  GraphBuilder(int64_t opset = 17) {
    auto* o = proto_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
  }
  // An int64 or float initializer.
  GraphBuilder& Ints(const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> v) {
    auto* t = proto_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t x : v) t->add_int64_data(x);
    return *this;
  }
  GraphBuilder& Floats(const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
    auto* t = proto_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
    return *this;
  }
  GraphBuilder& Node(const std::string& op, std::vector<std::string> in, const std::string& out,
                     std::vector<std::pair<std::string, int64_t>> ints = {},
                     const std::string& domain = "") {
    auto* n = proto_.mutable_graph()->add_node();
    n->set_name("/" + out);
    n->set_op_type(op);
    n->set_domain(domain);
    for (const std::string& i : in) n->add_input(i);
    n->add_output(out);
    for (const auto& [name, value] : ints) {
      auto* a = n->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(value);
    }
    return *this;
  }
  GraphBuilder& Input(const std::string& name, int elem_type, std::vector<std::string> dims) {
    auto* i = proto_.mutable_graph()->add_input();
    i->set_name(name);
    auto* t = i->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    for (const std::string& d : dims) {
      auto* dim = t->mutable_shape()->add_dim();
      if (d[0] >= '0' && d[0] <= '9') dim->set_dim_value(std::stoll(d));
      else dim->set_dim_param(d);
    }
    return *this;
  }
  onnx::ModelProto& proto() { return proto_; }
  OnnxModel Build() {
    const std::string bytes = proto_.SerializeAsString();
    auto model = OnnxModel::Parse({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "g.onnx");
    EXPECT_TRUE(model.has_value()) << model.error().message;
    return std::move(*model);
  }

 private:
  onnx::ModelProto proto_;
};

// A bound graph input of this shape with no data (the model's computation).
OnnxValue Live(std::vector<int64_t> shape) {
  OnnxValue v;
  v.type = OnnxType::kFloat;
  v.shape = std::move(shape);
  v.shape_known = true;
  return v;
}

std::vector<double> Data(const FoldedGraph& graph, const std::string& name) {
  const OnnxValue* v = graph.Find(name);
  EXPECT_NE(v, nullptr) << name;
  if (v == nullptr || !v->data) {
    ADD_FAILURE() << name << " was not folded";
    return {};
  }
  return *v->data;
}

TEST(OnnxFold, SliceToTheEndWithInt64Max) {
  GraphBuilder g;
  g.Floats("x", {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7})
      .Ints("starts", {1}, {2})
      .Ints("ends", {1}, {std::numeric_limits<int64_t>::max()})
      .Ints("axes", {1}, {-1})
      .Node("Slice", {"x", "starts", "ends", "axes"}, "y");
  OnnxModel model = g.Build();
  const FoldedGraph graph = FoldOnnxGraph(model, {});
  EXPECT_EQ(graph.Find("y")->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Data(graph, "y"), (std::vector<double>{2, 3, 6, 7}));
}

TEST(OnnxFold, ReshapeCopiesZerosAndInfersMinusOne) {
  GraphBuilder g;
  g.Floats("x", {2, 3, 4}, std::vector<float>(24, 1)).Ints("shape", {2}, {0, -1}).Node("Reshape", {"x", "shape"}, "y");
  OnnxModel model = g.Build();
  EXPECT_EQ(FoldOnnxGraph(model, {}).Find("y")->shape, (std::vector<int64_t>{2, 12}));
}

TEST(OnnxFold, TriluKeepsTheUpperTriangleFromK) {
  // Trilu(upper=1, k=1) of a 3x3 of ones: ones strictly above the diagonal.
  GraphBuilder g;
  g.Floats("x", {3, 3}, std::vector<float>(9, 1)).Ints("k", {}, {1}).Node("Trilu", {"x", "k"}, "y", {{"upper", 1}});
  OnnxModel model = g.Build();
  EXPECT_EQ(Data(FoldOnnxGraph(model, {}), "y"), (std::vector<double>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
}

TEST(OnnxFold, WhereBroadcastsItsThreeInputs) {
  GraphBuilder g;
  g.Ints("a", {2}, {1, 0}).Ints("b", {2, 1}, {0, 1}).Node("Equal", {"a", "b"}, "c")  // [[0,1],[1,0]]
      .Floats("yes", {}, {5}).Floats("no", {2}, {-1, -2})
      .Node("Where", {"c", "yes", "no"}, "y");
  OnnxModel model = g.Build();
  EXPECT_EQ(Data(FoldOnnxGraph(model, {}), "y"), (std::vector<double>{-1, 5, 5, -2}));
}

TEST(OnnxFold, IntegerDivisionTruncatesAndFloatsRoundToFloat) {
  GraphBuilder g;
  g.Ints("a", {2}, {7, -7}).Ints("b", {}, {2}).Node("Div", {"a", "b"}, "q")
      .Floats("f", {}, {1}).Floats("three", {}, {3}).Node("Div", {"f", "three"}, "third");
  OnnxModel model = g.Build();
  const FoldedGraph graph = FoldOnnxGraph(model, {});
  EXPECT_EQ(Data(graph, "q"), (std::vector<double>{3, -3}));
  EXPECT_EQ(Data(graph, "third"), (std::vector<double>{static_cast<double>(1.0f / 3.0f)}));
}

TEST(OnnxFold, ScatterNDWritesSlicesAtTheIndexTuples) {
  // data [3, 2], indices [[2], [0]] (k = 1: whole rows), updates [[7, 8], [9, 10]].
  GraphBuilder g;
  g.Floats("x", {3, 2}, {1, 2, 3, 4, 5, 6}).Ints("i", {2, 1}, {2, 0}).Floats("u", {2, 2}, {7, 8, 9, 10})
      .Node("ScatterND", {"x", "i", "u"}, "y");
  OnnxModel model = g.Build();
  EXPECT_EQ(Data(FoldOnnxGraph(model, {}), "y"), (std::vector<double>{9, 10, 3, 4, 7, 8}));
}

TEST(OnnxFold, CumSumAlongAnAxis) {
  GraphBuilder g;
  g.Ints("m", {2, 3}, {1, 1, 0, 1, 1, 1}).Ints("axis", {}, {1}).Node("CumSum", {"m", "axis"}, "c")
      .Node("CumSum", {"m", "axis"}, "e", {{"exclusive", 1}});
  OnnxModel model = g.Build();
  const FoldedGraph graph = FoldOnnxGraph(model, {});
  EXPECT_EQ(Data(graph, "c"), (std::vector<double>{1, 2, 2, 1, 2, 3}));
  EXPECT_EQ(Data(graph, "e"), (std::vector<double>{0, 1, 2, 0, 1, 2}));
}

TEST(OnnxFold, ShapeOfALiveValueFoldsAndAnUnknownOpIsReported) {
  GraphBuilder g;
  g.Input("x", onnx::TensorProto::FLOAT, {"batch", "8"})
      .Node("Shape", {"x"}, "s")
      .Node("FancyOp", {"x"}, "y", {}, "com.example");
  OnnxModel model = g.Build();
  const FoldedGraph graph = FoldOnnxGraph(model, {{"x", Live({1, 8})}});
  EXPECT_EQ(Data(graph, "s"), (std::vector<double>{1, 8}));
  ASSERT_TRUE(graph.unknown.contains(1));
  EXPECT_NE(graph.unknown.at(1).find("domain 'com.example'"), std::string::npos);
}

TEST(OnnxPatterns, SimplifiedLayerNormalizationIsRmsNorm) {
  GraphBuilder g;
  g.Input("x", onnx::TensorProto::FLOAT, {"1", "3", "4"}).Floats("w", {4}, {1, 2, 3, 4});
  g.Node("SimplifiedLayerNormalization", {"x", "w"}, "y", {{"axis", -1}}, "com.microsoft");
  auto* eps = g.proto().mutable_graph()->mutable_node(0)->add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  eps->set_f(1e-6f);
  OnnxModel model = g.Build();
  const FoldedGraph graph = FoldOnnxGraph(model, {{"x", Live({1, 3, 4})}});
  OnnxMatcher matcher(model, graph, {3, 0});
  auto norm = matcher.RmsNorm("y");
  ASSERT_TRUE(norm.has_value()) << norm.error().message;
  EXPECT_EQ(norm->input, "x");
  EXPECT_EQ(norm->weight.initializer, "w");
  EXPECT_FLOAT_EQ(static_cast<float>(norm->eps), 1e-6f);
}

TEST(OnnxPatterns, ALinearLayerReadsATransposedStoredWeightAsItIs) {
  // MatMul(x, Transpose(w)) with w [out 3, in 4]: Kite's layout already, nothing to transpose.
  GraphBuilder g;
  g.Input("x", onnx::TensorProto::FLOAT, {"1", "3", "4"}).Floats("w", {3, 4}, std::vector<float>(12, 1))
      .Node("Transpose", {"w"}, "wt").Node("MatMul", {"x", "wt"}, "y");
  OnnxModel model = g.Build();
  const FoldedGraph graph = FoldOnnxGraph(model, {{"x", Live({1, 3, 4})}});
  OnnxMatcher matcher(model, graph, {3, 0});
  auto linear = matcher.Linear("y");
  ASSERT_TRUE(linear.has_value()) << linear.error().message;
  EXPECT_EQ(linear->weight.initializer, "w");
  EXPECT_FALSE(linear->weight.transpose);
  EXPECT_EQ(linear->in, 4);
  EXPECT_EQ(linear->out, 3);
}

TEST(OnnxPatterns, AWholeSliceIsLookedThrough) {
  // lm_head(hidden[:, -0:, :]) as transformers writes it with num_logits_to_keep = 0.
  GraphBuilder g;
  g.Input("x", onnx::TensorProto::FLOAT, {"1", "3", "4"}).Floats("w", {4, 5}, std::vector<float>(20, 1))
      .Ints("start", {1}, {0}).Ints("end", {1}, {std::numeric_limits<int64_t>::max()}).Ints("axis", {1}, {1})
      .Node("Slice", {"x", "start", "end", "axis"}, "kept").Node("MatMul", {"kept", "w"}, "y");
  OnnxModel model = g.Build();
  const FoldedGraph graph = FoldOnnxGraph(model, {{"x", Live({1, 3, 4})}});
  OnnxMatcher matcher(model, graph, {3, 0});
  auto linear = matcher.Linear("y");
  ASSERT_TRUE(linear.has_value()) << linear.error().message;
  EXPECT_EQ(linear->input, "x");
}

TEST(OnnxPatterns, AMismatchNamesTheNode) {
  GraphBuilder g;
  g.Input("x", onnx::TensorProto::FLOAT, {"1", "3", "4"}).Node("Relu", {"x"}, "y");
  OnnxModel model = g.Build();
  const FoldedGraph graph = FoldOnnxGraph(model, {{"x", Live({1, 3, 4})}});
  OnnxMatcher matcher(model, graph, {3, 0});
  auto norm = matcher.RmsNorm("y");
  ASSERT_FALSE(norm.has_value());
  EXPECT_EQ(norm.error().message, "node '/y' (Relu): expected RMSNorm's final Mul by its weight");
}

TEST(OnnxImport, RefusesOpsetsBefore13) {
  GraphBuilder g(11);
  g.Input("input_ids", onnx::TensorProto::INT64, {"b", "s"});
  auto import = RecognizeOnnx(g.Build());
  ASSERT_FALSE(import.has_value());
  EXPECT_NE(import.error().message.find("opset 11; Kite reads ONNX opset 13 and newer"), std::string::npos);
}

TEST(OnnxImport, RefusesAnInputItCannotBind) {
  GraphBuilder g;
  g.Input("input_ids", onnx::TensorProto::INT64, {"b", "s"}).Input("token_type_ids", onnx::TensorProto::INT64, {"b", "s"});
  auto import = RecognizeOnnx(g.Build());
  ASSERT_FALSE(import.has_value());
  EXPECT_NE(import.error().message.find("input 'token_type_ids' is not one Kite binds"), std::string::npos)
      << import.error().message;
}

TEST(OnnxImport, RefusesAFixedSequenceLength) {
  GraphBuilder g;
  g.Input("input_ids", onnx::TensorProto::INT64, {"1", "7"});
  auto import = RecognizeOnnx(g.Build());
  ASSERT_FALSE(import.has_value());
  EXPECT_NE(import.error().message.find("input 'input_ids' dimension 1 is fixed at 7"), std::string::npos)
      << import.error().message;
}

}  // namespace
}  // namespace kite
