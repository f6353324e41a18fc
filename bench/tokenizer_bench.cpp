// Encode throughput, single thread: MB of UTF-8 input per second of this thread's CPU time
// (median of 5 runs, after one warm-up). CPU time rather than wall time because these machines
// are shared; compare against tools/spm_bench.py (SentencePiece on llama2's tokenizer.model,
// same texts, same two modes) run at the same time.
//   tokenizer_bench [--testdata DIR] [--fixtures DIR] [english.txt [chinese.txt]]
// The real vocabularies `make tokenizers` installs (Qwen2.5, Qwen3, Gemma 3, GPT-4o) are measured
// when present; --fixtures names a folder tools/make_tokenizer_fixtures.py wrote (T5-style
// unigram as tokenizer.model and tokenizer.json, BERT-style WordPiece).
// Texts default to files Debian ships: the GPL-3 (English); Vim's Chinese tutor and GnuPG's
// Chinese help (Chinese); each repeated to at least 1 MiB. Modes: "document" encodes the whole
// text in one call, "lines" calls Encode once per line (newline included), like many prompts.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace {

constexpr size_t kMinBytes = 1 << 20;
constexpr int kRuns = 5;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string Repeated(const std::vector<std::string>& paths) {
  std::string base;
  for (const std::string& path : paths) base += ReadFile(path);
  if (base.empty()) return base;
  std::string text;
  while (text.size() < kMinBytes) text += base;
  return text;
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = std::min(text.find('\n', pos), text.size() - 1) + 1;
    lines.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return lines;
}

double ThreadSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// The repository's root folder, from where this file was compiled.
std::string RepositoryRoot() {
  const std::filesystem::path root = std::filesystem::path(__FILE__).parent_path().parent_path();
  return (root.empty() ? std::filesystem::path(".") : root).string();
}

// Median MB/s over kRuns of encoding `chunks`; `tokens` receives the token count.
double MedianRate(const kite::Tokenizer& tokenizer, const std::vector<std::string_view>& chunks,
                  size_t bytes, size_t* tokens) {
  std::vector<double> rates;
  for (int run = 0; run <= kRuns; ++run) {  // run 0 warms caches
    size_t count = 0;
    const double start = ThreadSeconds();
    for (std::string_view chunk : chunks) {
      auto ids = tokenizer.Encode(chunk, /*add_special=*/false);
      if (!ids) {
        std::fprintf(stderr, "%s\n", ids.error().message.c_str());
        return 0;
      }
      count += ids->size();
    }
    const double seconds = ThreadSeconds() - start;
    *tokens = count;
    if (run > 0) rates.push_back(static_cast<double>(bytes) / 1e6 / seconds);
  }
  std::sort(rates.begin(), rates.end());
  return rates[kRuns / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = RepositoryRoot() + "/testdata";
  std::string fixtures;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--testdata" && i + 1 < argc) {
      root = argv[++i];
    } else if (arg == "--fixtures" && i + 1 < argc) {
      fixtures = argv[++i];
    } else {
      files.push_back(arg);
    }
  }
  const std::string english =
      Repeated({!files.empty() ? files[0] : "/usr/share/common-licenses/GPL-3"});
  const std::string chinese =
      files.size() > 1 ? Repeated({files[1]})
                       : Repeated({"/usr/share/vim/vim90/tutor/tutor.zh_cn.utf-8",
                                   "/usr/share/gnupg/help.zh_CN.txt"});
  std::printf("%-8s %-8s %6s %10s %16s %13s\n", "model", "text", "MB", "tokens",
              "document MB/s", "lines MB/s");
  const std::string lenml = RepositoryRoot() + "/tools/tokenizers/node_modules/@lenml/tokenizer-";
  std::vector<std::pair<std::string, std::string>> models;  // name, path
  for (const char* name : {"llama3", "gpt2", "llama2", "mistral"}) {
    models.emplace_back(name, root + "/tokenizers/" + name);
  }
  for (const char* name : {"qwen2_5", "qwen3", "gemma3", "gpt4o"}) {
    models.emplace_back(name, lenml + name + "/models");
  }
  if (!fixtures.empty()) {
    models.emplace_back("t5-spm", fixtures + "/t5/tokenizer.model");
    models.emplace_back("t5-hf", fixtures + "/t5/tokenizer.json");
    models.emplace_back("bert", fixtures + "/bert/tokenizer.json");
  }
  for (const auto& [name, path] : models) {
    const char* model = name.c_str();
    if (!std::filesystem::exists(path)) {
      std::printf("%-8s (not installed: %s)\n", model, path.c_str());
      continue;
    }
    auto tokenizer = kite::Tokenizer::Load(path);
    if (!tokenizer) {
      std::fprintf(stderr, "%s\n", tokenizer.error().message.c_str());
      return 1;
    }
    for (const auto& [label, text] :
         {std::pair{"english", &english}, std::pair{"chinese", &chinese}}) {
      if (text->empty()) {
        std::printf("%-8s %-8s (text not found)\n", model, label);
        continue;
      }
      size_t tokens = 0, line_tokens = 0;
      const double document = MedianRate(**tokenizer, {*text}, text->size(), &tokens);
      const double lines = MedianRate(**tokenizer, Lines(*text), text->size(), &line_tokens);
      std::printf("%-8s %-8s %6.2f %10zu %16.1f %13.1f\n", model, label,
                  static_cast<double>(text->size()) / 1e6, tokens, document, lines);
    }
  }
  return 0;
}
