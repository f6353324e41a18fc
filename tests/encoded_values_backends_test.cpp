// Values carrying a quantization encoding (graph/encoding.h) on today's float-only backends:
// ref and cpu decline every node that reads or writes one, naming the value, so such a graph
// is refused when compiled instead of running on misread integers.
#include <gtest/gtest.h>

#include <string>

#include "backends/cpu/cpu_backend.h"
#include "runtime/executable.h"
#include "backends/ref/ref_backend.h"
#include "graph/builder.h"

namespace kite {
namespace {

TEST(EncodedValuesOnFloatBackends, NodesWithEncodedValuesAreDeclinedByName) {
  QuantEncoding u8;
  u8.scales = {0.05f};
  u8.offsets = {-128};
  GraphBuilder b;
  const ValueId h = *b.Input("h", DType::kU8, {4, 64}, u8);
  ASSERT_TRUE(b.MarkOutput(*b.Silu("act", h)));
  Graph graph = *std::move(b).Finish();

  CpuBackend cpu(1);
  RefBackend ref;
  EXPECT_FALSE(cpu.Supports(graph, graph.nodes()[0]).ok);
  EXPECT_FALSE(ref.Supports(graph, graph.nodes()[0]).ok);
  Backend* backends[] = {&cpu, &ref};
  auto compiled = Executable::Compile(std::move(graph), backends);
  ASSERT_FALSE(compiled.has_value());
  const std::string& message = compiled.error().message;
  EXPECT_NE(message.find("'h' is quantized (u8 per-tensor [1 scales]); the cpu backend computes "
                         "in float only"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("the ref backend computes in float only"), std::string::npos) << message;
}

}  // namespace
}  // namespace kite
