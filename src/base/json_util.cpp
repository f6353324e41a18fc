#include "base/json_util.h"

#include <limits>
#include <set>
#include <vector>

namespace kite {

namespace {

using nlohmann::json;

// A SAX handler that accepts everything and keeps the parser's own description of the first
// syntax error (line, column, what it read), which a DOM parse without exceptions discards.
class ErrorLocator : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& error) override {
    message_ = error.what();
    return false;
  }

  // "parse error at line 1, column 9: syntax error while parsing object - ..." with the
  // "[json.exception...]" prefix dropped and bytes that are not printable ASCII shown as '?'.
  std::string Describe() const {
    std::string_view text = message_;
    if (size_t prefix_end = text.find("] "); prefix_end != std::string_view::npos) {
      text.remove_prefix(prefix_end + 2);
    }
    std::string out;
    for (char c : text) out += (c >= 0x20 && c < 0x7f) ? c : '?';
    return out.empty() ? "syntax error" : out;
  }

 private:
  std::string message_;
};

}  // namespace

Result<json> ParseJson(std::string_view text, const std::string& file,
                       JsonDuplicateKeys duplicates) {
  // One key set per open object; only filled when duplicates are rejected.
  std::vector<std::set<std::string, std::less<>>> open_objects;
  std::string duplicate;
  bool found_duplicate = false;
  json::parser_callback_t track_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == json::parse_event_t::key && !open_objects.empty() && !found_duplicate &&
               parsed.is_string()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) {
        duplicate = key;
        found_duplicate = true;
      }
    }
    return true;
  };
  json value = duplicates == JsonDuplicateKeys::kReject
                   ? json::parse(text, track_keys, /*allow_exceptions=*/false)
                   : json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    ErrorLocator locator;
    json::sax_parse(text, &locator);
    return InvalidInput(file + ": malformed JSON: " + locator.Describe());
  }
  if (found_duplicate) return InvalidInput(file + ": key '" + duplicate + "' appears twice");
  return value;
}

std::string_view JsonKind(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "other";
  }
}

std::optional<int64_t> JsonInt(const json& value) {
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

Result<const json*> JsonFields::Find(const char* key) const {
  auto it = object_->find(key);
  if (it == object_->end()) return InvalidInput(file_ + ": no field " + prefix_ + key);
  return &*it;
}

std::unexpected<Error> JsonFields::Wrong(const char* key, const char* expected,
                                         const json& v) const {
  return InvalidInput(file_ + ": " + prefix_ + key + " is " + std::string(JsonKind(v)) +
                      ", expected " + expected);
}

Result<double> JsonFields::Number(const char* key) const {
  const json* v = KITE_TRY(Find(key));
  if (!v->is_number()) return Wrong(key, "a number", *v);
  const double x = v->get<double>();
  if (!(x >= 0)) return InvalidInput(file_ + ": " + prefix_ + key + " is negative");
  return x;
}

Result<int> JsonFields::Count(const char* key, int max) const {
  const double x = KITE_TRY(Number(key));
  if (x < 1 || x > max || x != static_cast<double>(static_cast<int>(x))) {
    return InvalidInput(file_ + ": " + prefix_ + key + " is " + std::to_string(x) +
                        ", expected a whole number in [1, " + std::to_string(max) + "]");
  }
  return static_cast<int>(x);
}

Result<std::string> JsonFields::String(const char* key) const {
  const json* v = KITE_TRY(Find(key));
  if (!v->is_string()) return Wrong(key, "a string", *v);
  return v->get<std::string>();
}

Result<bool> JsonFields::Bool(const char* key) const {
  const json* v = KITE_TRY(Find(key));
  if (!v->is_boolean()) return Wrong(key, "a boolean", *v);
  return v->get<bool>();
}

Result<JsonFields> JsonFields::Object(const char* key) const {
  const json* v = KITE_TRY(Find(key));
  if (!v->is_object()) return Wrong(key, "an object", *v);
  return JsonFields(*v, file_, prefix_ + key + ".");
}

}  // namespace kite
