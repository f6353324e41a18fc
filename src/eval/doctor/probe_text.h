// The texts the doctor's checks feed a model when the user gives none: short sentences in several
// scripts for the tokenizer's round trips, and a page of plain English prose (written for Kite)
// for the checks that score a model's predictions. Each model is trained on other text, so the
// scoring checks only trust a clear signal (eval/doctor/rope_fit_check.cpp says how).
#pragma once

#include <span>
#include <string_view>

namespace kite::doctor {

struct ProbeText {
  std::string_view script;  // "Latin (English)", "Cyrillic", ...
  std::string_view text;
};

// English first: a tokenizer that cannot give English back is broken, whatever else it covers.
std::span<const ProbeText> RoundTripProbes();

// About 1,700 characters of English prose.
std::string_view EnglishProse();

// The prompt of the greedy generation check.
inline constexpr std::string_view kGenerationPrompt = "The meaning of life is";

}  // namespace kite::doctor
