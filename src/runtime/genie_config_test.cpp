#include "runtime/genie_config.h"

#include <gtest/gtest.h>

namespace kite {
namespace {

// Genie's speculative dialog types turn Kite's speculative decoding on; others are named.
TEST(GenieConfig, SpeculativeDialogTypesChooseTheDraftKind) {
  const std::pair<const char*, const char*> cases[] = {
      {"spd", "draft"}, {"lade", "ngram"}, {"basic", "none"}, {"ssd", "none"}};
  for (const auto& [type, mode] : cases) {
    RunSettings settings;
    std::vector<std::string> warnings;
    const nlohmann::json root = {{"dialog", {{"type", type}}}};
    ASSERT_TRUE(ApplyGenieConfig(root, "genie_config.json", &settings, &warnings).has_value());
    EXPECT_EQ(settings.speculative.mode, mode) << type;
    EXPECT_EQ(warnings.size(), std::string(type) == "ssd" ? 1u : 0u) << type;
  }
}

}  // namespace
}  // namespace kite
