#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "chat/jinja/convert.h"

namespace kite {
namespace {

using Json = nlohmann::ordered_json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

const std::string kDataDir = KITE_SOURCE_DIR "/testdata/chat_templates/";

const Json& Goldens() {
  static const Json goldens = Json::parse(ReadFile(kDataDir + "goldens.json"), nullptr, false);
  return goldens;
}

std::string Str(const Json& json, const char* key) {
  return json.contains(key) && json[key].is_string() ? json[key].get<std::string>() : std::string();
}

// Every template × conversation × add_generation_prompt, byte for byte against the reference.
TEST(ChatTemplateGoldens, MatchReferenceRenderer) {
  const Json& goldens = Goldens();
  ASSERT_FALSE(goldens.is_discarded());
  ASSERT_TRUE(goldens["cases"].is_array());
  int checked = 0, raised = 0;
  for (const Json& c : goldens["cases"]) {
    const std::string name = Str(c, "template");
    const std::string label =
        name + " / " + Str(c, "conversation") +
        (c["add_generation_prompt"].get<bool>() ? " / prompt" : " / no prompt");
    auto tmpl = ChatTemplate::Parse(ReadFile(kDataDir + name + ".jinja"), name);
    ASSERT_TRUE(tmpl.has_value()) << label << ": " << tmpl.error().message;
    ChatTemplateInput input;
    for (const Json& m : goldens["conversations"][Str(c, "conversation")]) {
      input.messages.push_back({Str(m, "role"), Str(m, "content")});
    }
    input.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    input.bos_token = Str(c, "bos_token");
    input.eos_token = Str(c, "eos_token");
    for (const auto& [key, value] : c["extra_vars"].items())
      input.extra_vars.emplace_back(key, value.get<std::string>());
    auto rendered = tmpl->Render(input);
    if (c.contains("error")) {
      EXPECT_FALSE(rendered.has_value())
          << label << ": the reference raised \"" << Str(c, "error") << "\" but Kite rendered:\n"
          << *rendered;
      ++raised;
    } else {
      ASSERT_TRUE(rendered.has_value()) << label << ": " << rendered.error().message;
      EXPECT_EQ(*rendered, Str(c, "output")) << label;
    }
    ++checked;
  }
  EXPECT_GE(checked, 300);
  EXPECT_GE(raised, 20);  // llama2, mistral and gemma refuse bad role orders
}

// One Jinja feature per case (tools/chat_templates/features.mjs), against the reference; where it
// raised, Kite must raise in the same phase (parsing or rendering).
TEST(ChatTemplateGoldens, FeaturesMatchReferenceRenderer) {
  const Json& goldens = Goldens();
  ASSERT_FALSE(goldens.is_discarded());
  int checked = 0;
  for (const Json& f : goldens["features"]) {
    const std::string label = Str(f, "name");
    const bool parse_error = Str(f, "phase") == "parse";
    auto tmpl = jinja::Template::Parse(Str(f, "source"));
    if (parse_error) {
      EXPECT_FALSE(tmpl.has_value())
          << label << ": the reference failed to parse: " << Str(f, "error");
      ++checked;
      continue;
    }
    ASSERT_TRUE(tmpl.has_value()) << label << ": " << tmpl.error().message;
    std::vector<std::pair<std::string, jinja::Value>> vars;
    for (const auto& [key, value] : f["vars"].items()) {
      auto converted = jinja::FromJson(value);
      ASSERT_TRUE(converted.has_value()) << label;
      vars.emplace_back(key, std::move(*converted));
    }
    auto rendered = tmpl->Render(vars);
    if (f.contains("error")) {
      EXPECT_FALSE(rendered.has_value()) << label << ": the reference raised \"" << Str(f, "error")
                                         << "\" but Kite rendered: " << *rendered;
    } else {
      ASSERT_TRUE(rendered.has_value()) << label << ": " << rendered.error().message;
      EXPECT_EQ(*rendered, Str(f, "output")) << label << ": " << Str(f, "source");
    }
    ++checked;
  }
  EXPECT_GE(checked, 100);
}

TEST(ChatTemplate, BuiltinsAreTheTestdataTemplates) {
  const std::vector<std::string> names = BuiltinChatTemplateNames();
  for (const char* expected :
       {"llama2", "llama3", "chatml", "mistral", "phi3", "gemma", "zephyr"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const std::string& name : names) {
    auto source = BuiltinChatTemplate(name);
    ASSERT_TRUE(source.has_value()) << name;
    EXPECT_EQ(*source, ReadFile(kDataDir + name + ".jinja")) << name;
  }
  auto missing = BuiltinChatTemplate("nonexistent");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("llama3"), std::string::npos);  // lists the known names
}

TEST(ChatTemplate, ChatMlByHand) {
  auto tmpl = ChatTemplate::Parse(*BuiltinChatTemplate("chatml"), "chatml");
  ASSERT_TRUE(tmpl.has_value());
  ChatTemplateInput input;
  input.messages = {{"system", "Be brief."}, {"user", "Hi"}};
  auto out = tmpl->Render(input);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(*out,
            "<|im_start|>system\nBe "
            "brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  input.add_generation_prompt = false;
  out = tmpl->Render(input);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, ErrorsNameTheTemplateAndPosition) {
  auto bad = ChatTemplate::Parse("line one\n{% if x %}\n{{ 1 $ 2 }}{% endif %}", "broken.jinja");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(bad.error().message.find("broken.jinja"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("line 3, column 6"), std::string::npos) << bad.error().message;

  auto raising = ChatTemplate::Parse(*BuiltinChatTemplate("gemma"), "gemma");
  ASSERT_TRUE(raising.has_value());
  ChatTemplateInput input;
  input.messages = {{"system", "s"}, {"user", "u"}};
  auto out = raising->Render(input);
  ASSERT_FALSE(out.has_value());
  EXPECT_NE(out.error().message.find("System role not supported"), std::string::npos)
      << out.error().message;
  EXPECT_NE(out.error().message.find("gemma"), std::string::npos);
}

TEST(ChatTemplate, ExtraVarsAndRedeclaration) {
  auto tmpl = ChatTemplate::Parse("{{ date_string }}|{{ bos_token }}", "t");
  ASSERT_TRUE(tmpl.has_value());
  ChatTemplateInput input;
  input.bos_token = "<s>";
  input.extra_vars = {{"date_string", "1 Jan 2025"}};
  auto out = tmpl->Render(input);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out, "1 Jan 2025|<s>");
  input.extra_vars = {{"true", "x"}};  // a global: the reference refuses to declare it again
  EXPECT_FALSE(tmpl->Render(input).has_value());
  input.extra_vars = {{"bos_token", "x"}};
  EXPECT_FALSE(tmpl->Render(input).has_value());
}

TEST(ChatTemplate, InvalidUtf8IsReplaced) {
  auto tmpl = ChatTemplate::Parse("{{ messages[0].content }}", "t");
  ASSERT_TRUE(tmpl.has_value());
  ChatTemplateInput input;
  input.messages = {{"user", std::string("a\xff") + "b"}};
  auto out = tmpl->Render(input);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out,
            "a\xEF\xBF\xBD"
            "b");
}

}  // namespace
}  // namespace kite
