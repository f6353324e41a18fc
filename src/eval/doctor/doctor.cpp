#include "eval/doctor/doctor.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "eval/doctor/checks.h"
#include "eval/doctor/probe_text.h"
#include "models/load_model.h"
#include "runtime/model_files.h"

namespace kite {

namespace {

namespace fs = std::filesystem;
using doctor::Subject;

// The engine the running checks share: windows of the RoPE fit and the KL check are this long at
// most (or the trained context, when shorter), and the greedy run fits in it.
constexpr int32_t kCheckWindow = 512;

doctor::Subject LoadSubject(const DoctorOptions& options) {
  Subject subject;
  subject.location = ModelLocation(options.model);
  std::error_code error;
  subject.is_gguf = fs::is_regular_file(subject.location, error);
  if (subject.is_gguf) {
    auto gguf = GgufFile::Open(subject.location);
    if (gguf) {
      subject.gguf = std::make_shared<const GgufFile>(std::move(*gguf));
    } else {
      subject.gguf_error = gguf.error().message;
    }
  }
  if (subject.is_gguf && subject.gguf == nullptr) {
    subject.model_error = subject.gguf_error;
    subject.tokenizer_error = subject.gguf_error;
    return subject;
  }
  auto model = subject.gguf ? LoadGgufModel(subject.gguf, subject.location) : LoadModel(options.model);
  if (model) {
    subject.model = std::move(*model);
  } else {
    subject.model_error = model.error().message;
  }
  auto tokenizer = subject.gguf ? Tokenizer::FromGguf(*subject.gguf) : Tokenizer::Load(subject.location);
  if (tokenizer) {
    subject.tokenizer = std::move(*tokenizer);
  } else {
    subject.tokenizer_error = tokenizer.error().message;
  }
  if (subject.model) {
    subject.ctx = options.ctx > 0 ? options.ctx : subject.model->config().context_length;
  } else {
    subject.ctx = options.ctx;
  }
  return subject;
}

// Why the running checks cannot run, when an earlier check has said so already; "" otherwise.
std::string NotRunnable(const Subject& subject) {
  if (!subject.model) return "the model did not load (file.compat)";
  if (!subject.tokenizer) return "the tokenizer did not load (tokenizer.vocab)";
  if (subject.tokenizer->vocab_size() > subject.model->vocab_size()) {
    return "the tokenizer does not fit the model (tokenizer.vocab)";
  }
  return "";
}

// The engine of the running checks (the subject's model and tokenizer move into it).
Result<std::unique_ptr<Engine>> CreateEngine(Subject& subject, const EngineOptions& options) {
  const int32_t trained = subject.model->config().context_length;
  ModelFiles files = KITE_TRY(PairModelFiles(std::move(subject.model), std::move(subject.tokenizer)));
  EngineOptions engine_options = options;
  engine_options.context_length = std::max(std::min(trained, kCheckWindow), 64);
  engine_options.prefill_chunk = engine_options.context_length;
  engine_options.parallel = 1;
  engine_options.check_tensors = false;  // NaN weights are the generation check's to find
  return Engine::Create(std::move(files), engine_options);
}

}  // namespace

std::string_view CheckStatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass: return "pass";
    case CheckStatus::kWarn: return "warn";
    case CheckStatus::kFail: return "fail";
    case CheckStatus::kSkip: return "skip";
  }
  return "fail";
}

bool DoctorReport::failed() const { return count(CheckStatus::kFail) > 0; }

int DoctorReport::count(CheckStatus status) const {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(),
                                        [&](const CheckResult& check) { return check.status == status; }));
}

namespace doctor {

CheckResult Finding(std::string id, CheckStatus status, std::string summary, std::string fix) {
  CheckResult result;
  result.id = std::move(id);
  result.status = status;
  result.summary = std::move(summary);
  result.fix = std::move(fix);
  return result;
}

CheckResult Skipped(std::string id, std::string why) {
  return Finding(std::move(id), CheckStatus::kSkip, "not run: " + why);
}

}  // namespace doctor

Result<DoctorReport> RunDoctor(const DoctorOptions& options, const DoctorProgress& progress) {
  std::error_code error;
  if (!fs::exists(options.model, error)) return NotFound(options.model + ": no such file or folder");
  DoctorReport report;
  report.model = options.model;
  auto add = [&](CheckResult check) {
    if (progress) progress(check);
    report.checks.push_back(std::move(check));
  };

  Subject subject = LoadSubject(options);
  report.ctx = subject.ctx;
  add(doctor::CheckFileCompatibility(subject));
  add(doctor::CheckVocabulary(subject));
  add(doctor::CheckSpecialIds(subject));
  add(doctor::CheckRoundTrips(subject));
  add(doctor::CheckChatTemplate(subject));
  add(doctor::CheckRopeConfig(subject));
  add(doctor::CheckRopePrecision(subject));
  add(doctor::CheckMemory(subject, options.engine));

  const std::string_view text = options.text.empty() ? doctor::EnglishProse() : std::string_view(options.text);
  const std::string not_runnable = NotRunnable(subject);
  if (!not_runnable.empty()) {
    for (const char* id : {"generation.greedy", "rope.fit", "reference.kl"}) {
      add(doctor::Skipped(id, not_runnable));
    }
    return report;
  }
  auto engine = CreateEngine(subject, options.engine);
  if (!engine) {
    add(doctor::Finding("generation.greedy", CheckStatus::kFail,
                        "the model cannot run: " + engine.error().message,
                        "the message names what Kite refused; fix it in the model's files"));
    add(doctor::Skipped("rope.fit", "the model cannot run (generation.greedy)"));
    add(doctor::Skipped("reference.kl", "the model cannot run (generation.greedy)"));
    return report;
  }
  const CheckResult generation = doctor::CheckGeneration(**engine);
  const bool finite = generation.data.value("finite", true);
  add(generation);
  if (finite) {
    add(doctor::CheckRopeFit(**engine, options.model, text));
  } else {
    add(doctor::Skipped("rope.fit", "the logits are not finite (generation.greedy)"));
  }
  if (options.reference.empty()) {
    add(doctor::Skipped("reference.kl", "no --reference FLOAT_MODEL given"));
  } else if (!finite) {
    add(doctor::Skipped("reference.kl", "the logits are not finite (generation.greedy)"));
  } else {
    add(doctor::CheckReferenceKl(**engine, options.reference, text));
  }
  return report;
}

}  // namespace kite
