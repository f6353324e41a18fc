#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace kite::tok {

namespace {

// Unicode White_Space (PropList.txt), as the body of a character class.
constexpr std::string_view kWhiteSpace =
    "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof(buffer)) < 0)
    return "error " + std::to_string(code);
  return reinterpret_cast<const char*>(buffer);
}

// Per-thread match state: a JIT stack may not be shared between threads, and deep patterns
// such as \s+(?!\S) over long runs of spaces overflow the default 32 KiB one.
struct ThreadMatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);

  ThreadMatchState() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~ThreadMatchState() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;
};

ThreadMatchState& MatchState() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

Result<std::string> TranslateWhitespaceClasses(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() * 2);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (next == 'S') {
        if (in_class) {
          return InvalidInput("regex '" + std::string(pattern) +
                              "': \\S inside a character class "
                              "at offset " +
                              std::to_string(i - 1) + " is not supported");
        }
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += next;
      }
      continue;
    }
    out += c;
    if (!in_class && c == '[') {
      in_class = true;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
    } else if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
      const size_t end = pattern.find(":]", i + 2);  // a POSIX class such as [:alpha:]
      if (end != std::string_view::npos) {
        out.append(pattern.substr(i + 1, end + 1 - i));
        i = end + 1;
      }
    } else if (in_class && c == ']') {
      in_class = false;
    }
  }
  return out;
}

Result<Regex> Regex::Compile(std::string_view pattern, const std::string& name, bool pcre2_only) {
  Result<std::string> rewritten = TranslateWhitespaceClasses(pattern);
  if (!rewritten) return std::unexpected(std::move(rewritten.error()).WithContext(name));
  const std::string& translated = *rewritten;
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    return InvalidInput(name + ": regex '" + std::string(pattern) +
                        "' does not compile: " + Pcre2Message(error_code) + " (offset " +
                        std::to_string(error_offset) + " of the translated pattern)");
  }
  auto holder = std::make_shared<Code>();
  holder->code = code;
  holder->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  Regex regex;
  regex.pattern_ = std::string(pattern);
  regex.name_ = name;
  regex.code_ = std::move(holder);
  if (!pcre2_only) regex.ascii_matcher_ = AsciiMatcherFor(pattern);
  return regex;
}

Result<std::optional<std::pair<size_t, size_t>>> Regex::NextMatch(std::string_view text,
                                                                  size_t offset) const {
  ThreadMatchState& state = MatchState();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  while (offset < text.size()) {
    const int rc = code_->jit ? pcre2_jit_match(code_->code, subject, text.size(), offset, 0,
                                                state.data, state.context)
                              : pcre2_match(code_->code, subject, text.size(), offset,
                                            PCRE2_NO_UTF_CHECK, state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return InvalidInput(name_ + ": regex failed at byte " + std::to_string(offset) + ": " +
                          Pcre2Message(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t begin = ovector[0], end = ovector[1];
    if (end > begin) return std::optional(std::pair(begin, end));
    // An empty match: step over one character.
    offset = begin + 1;
    while (offset < text.size() && (static_cast<uint8_t>(text[offset]) & 0xc0) == 0x80) ++offset;
  }
  return std::optional<std::pair<size_t, size_t>>();
}

Status Regex::Split(std::string_view text, std::vector<std::string_view>* pieces) const {
  size_t gap_start = 0;
  size_t offset = 0;
  while (offset < text.size()) {
    if (ascii_matcher_ != nullptr && offset == gap_start) {
      if (const size_t length = ascii_matcher_(text, offset); length > 0) {
        pieces->push_back(text.substr(offset, length));
        gap_start = offset += length;
        continue;
      }
    }
    const auto match = KITE_TRY(NextMatch(text, offset));
    if (!match) break;
    const auto [begin, end] = *match;
    if (begin > gap_start) pieces->push_back(text.substr(gap_start, begin - gap_start));
    pieces->push_back(text.substr(begin, end - begin));
    gap_start = offset = end;
  }
  if (gap_start < text.size()) pieces->push_back(text.substr(gap_start));
  return Ok();
}

Status Regex::Find(std::string_view text, std::vector<std::pair<size_t, size_t>>* matches) const {
  for (size_t offset = 0; offset < text.size();) {
    const auto match = KITE_TRY(NextMatch(text, offset));
    if (!match) break;
    matches->push_back(*match);
    offset = match->second;
  }
  return Ok();
}

}  // namespace kite::tok
