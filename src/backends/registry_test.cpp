#include "backends/registry.h"

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"

namespace kite {
namespace {

std::vector<std::string> Names(const std::vector<std::unique_ptr<Backend>>& backends) {
  std::vector<std::string> names;
  for (const auto& backend : backends) names.emplace_back(backend->name());
  return names;
}

// cpu and ref registered themselves from their folders: nothing here or in the runtime named
// them, and this binary links them from a static archive.
TEST(BackendRegistry, BackendsRegisterThemselves) {
  const std::vector<std::string> names = RegisteredBackends();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "ref");  // runs every op: listed first
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu"), names.end());
}

TEST(BackendRegistry, APreferenceListIsFollowedByWhatRunsEveryOp) {
  auto cpu = MakeBackends("cpu", {.threads = 2});
  ASSERT_TRUE(cpu.has_value()) << cpu.error().message;
  EXPECT_EQ(Names(*cpu), (std::vector<std::string>{"cpu", "ref"}));
  EXPECT_EQ(static_cast<const CpuBackend&>(*(*cpu)[0]).threads(), 2);  // options reach it

  EXPECT_EQ(Names(*MakeBackends("ref", {})), (std::vector<std::string>{"ref"}));
  EXPECT_EQ(Names(*MakeBackends("ref,cpu", {.threads = 1})),
            (std::vector<std::string>{"ref", "cpu"}));
}

TEST(BackendRegistry, UnknownOrRepeatedNamesAreErrorsThatListTheRegistered) {
  auto tpu = MakeBackends("cpu,tpu", {});
  ASSERT_FALSE(tpu.has_value());
  EXPECT_EQ(tpu.error().code, ErrorCode::kUnsupported);
  EXPECT_TRUE(tpu.error().message.starts_with("backend 'tpu' is not available (available: ref"))
      << tpu.error().message;
  auto twice = MakeBackends("cpu,cpu", {});
  ASSERT_FALSE(twice.has_value());
  EXPECT_TRUE(twice.error().message.starts_with("backend 'cpu' is named twice in 'cpu,cpu'"))
      << twice.error().message;
  EXPECT_FALSE(MakeBackends("", {}).has_value());
}

TEST(BackendRegistry, ANameIsRegisteredOnce) {
  const auto make = [](const BackendOptions&) -> Result<std::unique_ptr<Backend>> {
    return Internal("never made");
  };
  EXPECT_FALSE(RegisterBackend({.name = "cpu", .make = make}));
  EXPECT_FALSE(RegisterBackend({.name = "", .make = make}));
  EXPECT_FALSE(RegisterBackend({.name = "no-factory"}));
  auto cpu = MakeBackends("cpu", {});  // the first registration stays
  ASSERT_TRUE(cpu.has_value()) << cpu.error().message;

  ASSERT_TRUE(RegisterBackend({.name = "registry-test-broken", .make = make}));
  auto broken = MakeBackends("registry-test-broken", {});
  ASSERT_FALSE(broken.has_value());
  EXPECT_EQ(broken.error().message, "backend 'registry-test-broken': never made");
}

}  // namespace
}  // namespace kite
