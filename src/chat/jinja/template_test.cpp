#include "chat/jinja/template.h"

#include <gtest/gtest.h>

#include <string>

#include "chat/jinja/convert.h"

namespace kite::jinja {
namespace {

Result<std::string> Render(std::string_view source, const RenderLimits& limits = {},
                           std::vector<std::pair<std::string, Value>> vars = {}) {
  auto tmpl = Template::Parse(source);
  if (!tmpl) return std::unexpected(tmpl.error());
  return tmpl->Render(vars, limits);
}

std::string RenderOk(std::string_view source) {
  auto out = Render(source);
  EXPECT_TRUE(out.has_value()) << source << ": " << out.error().message;
  return out.value_or("<error>");
}

// Expected values below are worked out by hand from Jinja's semantics as the reference
// implements them (see goldens.json for the cases checked against the reference itself).
TEST(Template, RendersStatementsAndExpressions) {
  EXPECT_EQ(
      RenderOk("{% for x in [1, 2, 3] %}{{ x * 2 }}{% if not loop.last %},{% endif %}{% endfor %}"),
      "2,4,6");
  EXPECT_EQ(RenderOk("{% set ns = namespace(total=0) %}{% for x in range(1, 5) %}{% set ns.total = "
                     "ns.total + x %}"
                     "{% endfor %}{{ ns.total }}"),
            "10");
  EXPECT_EQ(
      RenderOk("{{ 'a' if 0 else 'b' }}{{ [1, 2][-1] }}{{ 'xyz'[1:] }}{{ 7 // 2 }}{{ 7 / 2 }}"),
      "b2yz33.5");
  EXPECT_EQ(
      RenderOk("{% macro m(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(2, b=3) }}"),
      "[1B][23]");
  EXPECT_EQ(RenderOk("{{ {'k': [1, 'x', none]} | tojson }}"), "{\"k\": [1, \"x\", null]}");
  EXPECT_EQ(RenderOk("{% for k, v in {'a': 1}.items() %}{{ k }}={{ v }}{% endfor %}"), "a=1");
  EXPECT_EQ(RenderOk("{{ undefined_name }}|{{ none }}|{{ true }}|{{ 1.0 }}"), "||true|1.0");
}

TEST(Template, BreakAndContinue) {
  EXPECT_EQ(RenderOk("{% for i in range(6) %}{% if i == 1 %}{% continue %}{% endif %}"
                     "{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
            "023");
  EXPECT_FALSE(Render("{% break %}").has_value());
}

TEST(Template, VariablesFromJson) {
  auto messages = FromJson(nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": "hi", "n": 2.0}])", nullptr, false));
  ASSERT_TRUE(messages.has_value());
  auto out = Render("{{ messages[0].role }}:{{ messages[0]['content'] }}:{{ messages[0].n }}", {},
                    {{"messages", *messages}});
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(*out, "user:hi:2");  // 2.0 in JSON is the integer 2, as in JavaScript

  // Keys that look like array indices come first, in numeric order, as in a JavaScript object.
  auto object = FromJson(
      nlohmann::ordered_json::parse(R"({"b": 1, "10": 2, "2": 3, "a": 4})", nullptr, false));
  ASSERT_TRUE(object.has_value());
  std::string keys;
  for (const auto& entry : object->entries()) keys += entry.first + ",";
  EXPECT_EQ(keys, "2,10,b,a,");
}

TEST(Template, SyntaxErrorsNamePosition) {
  auto bad = Template::Parse("{% for x in y %}\n{{ x }\n{% endfor %}");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos) << bad.error().message;
  for (const char* source :
       {"{% if x %}", "{% endif %}", "{{ }}", "{% for 1 in x %}{% endfor %}", "{{ f(a=1, 2) }}",
        "{% macro m(a, a) %}{% endmacro %}", "{% call m() %}{% endcall %}", "{{ x[] }}",
        "{{ x[1:2:3:4] }}", "{% set %}"}) {
    EXPECT_FALSE(Template::Parse(source).has_value()) << source;
  }
}

TEST(Template, RuntimeErrorsNamePosition) {
  auto out = Render("ok\n{{ raise_exception('stop here') }}");
  ASSERT_FALSE(out.has_value());
  EXPECT_NE(out.error().message.find("line 2, column 4"), std::string::npos) << out.error().message;
  EXPECT_NE(out.error().message.find("stop here"), std::string::npos);
  for (const char* source :
       {"{{ x ~ 'a' }}", "{{ 'a' < 'b' }}", "{{ 1 | frob }}", "{{ 1 is prime }}",
        "{{ none.x.y }}{{ none[0] }}", "{% for c in 'abc' %}{% endfor %}", "{{ (1, 2) }}"}) {
    EXPECT_FALSE(Render(source).has_value()) << source;
  }
}

TEST(Template, DeepNestingIsRefusedNotCrashed) {
  EXPECT_FALSE(Template::Parse("{{ " + std::string(100000, '(')).has_value());
  EXPECT_FALSE(Template::Parse("{{ " + std::string(50000, '-') + "1 }}").has_value());
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  EXPECT_FALSE(Template::Parse(chain + " }}").has_value());
  std::string ifs;
  for (int i = 0; i < 1000; ++i) ifs += "{% if true %}";
  EXPECT_FALSE(Template::Parse(ifs).has_value());
}

TEST(Template, RenderLimitsStopRunawayTemplates) {
  RenderLimits limits;
  limits.max_output_bytes = 1000;
  limits.max_list_items = 100;
  limits.max_steps = 10000;
  limits.max_call_depth = 8;
  const auto refused = [&](std::string_view source) {
    auto out = Render(source, limits);
    if (out.has_value()) return false;
    return out.error().code == ErrorCode::kOutOfResources;
  };
  EXPECT_TRUE(refused("{% for i in range(2000) %}x{% endfor %}"));  // output
  EXPECT_TRUE(
      refused("{% set ns = namespace(s='ab') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}"
              "{% endfor %}"));                       // string growth
  EXPECT_TRUE(refused("{{ range(101) | length }}"));  // list length
  EXPECT_TRUE(refused(
      "{% for a in range(100) %}{% for b in range(100) %}{% endfor %}{% endfor %}"));  // steps
  EXPECT_TRUE(refused("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"));             // recursion
  auto fine = Render("{% for i in range(10) %}x{% endfor %}", limits);
  ASSERT_TRUE(fine.has_value());
  EXPECT_EQ(*fine, "xxxxxxxxxx");
}

TEST(Template, NamespacesCannotHoldNamespaces) {
  EXPECT_FALSE(Render("{% set ns = namespace() %}{% set ns.self = ns %}").has_value());
  EXPECT_FALSE(Render("{% set ns = namespace() %}{% set ns.list = [ns] %}").has_value());
  EXPECT_FALSE(Render("{% set a = namespace() %}{% set b = namespace(inner=a) %}").has_value());
}

TEST(Template, NestedValuesAreBounded) {
  RenderLimits limits;
  auto out = Render(
      "{% set ns = namespace(v=[]) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor %}"
      "{{ ns.v | length }}",
      limits);
  EXPECT_FALSE(out.has_value());
}

}  // namespace
}  // namespace kite::jinja
