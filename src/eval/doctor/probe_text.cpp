#include "eval/doctor/probe_text.h"

#include <array>

namespace kite::doctor {

std::span<const ProbeText> RoundTripProbes() {
  // Every text is in Unicode NFC, so that no normalizer a tokenizer may apply changes it.
  static constexpr std::array<ProbeText, 12> kProbes = {{
      {"Latin (English)", "The quick brown fox jumps over the lazy dog. It was 3:45 pm on 12 March 2024."},
      {"Latin (French)", "Où est la bibliothèque ? Je voudrais un café crème, s'il vous plaît."},
      {"Latin (German)", "Größere Übungen machen den Meister; die Straße ist lang."},
      {"Cyrillic", "Съешь же ещё этих мягких французских булок, да выпей чаю."},
      {"Greek", "Καλημέρα, τι κάνεις σήμερα;"},
      {"Han (Chinese)", "我们今天去公园散步，天气很好。"},
      {"Japanese", "今日はいい天気ですね。東京へ行きましょう。"},
      {"Hangul", "안녕하세요, 만나서 반갑습니다."},
      {"Arabic", "مرحبا بكم في المدينة الجميلة."},
      {"Devanagari", "नमस्ते, आप कैसे हैं?"},
      {"Emoji", "Party time 🎉🎂 with 👩‍💻 friends!"},
      {"Code", "def add(a, b):\n    return a + b  # sum\n\tx = [1, 2, 3]\n"},
  }};
  return kProbes;
}

std::string_view EnglishProse() {
  return "The best way to learn something is to teach it to someone else. When you explain an idea "
         "in your own words, you find out quickly which parts you understand and which parts you "
         "only thought you did. A good teacher is patient, and a good student is not afraid to ask "
         "a question that sounds simple.\n\n"
         "Most of what we know about the world was learned from other people, who learned it from "
         "the people before them. Nobody invents language, arithmetic or cooking alone. Even the "
         "most original thinkers spent years reading, listening and copying before they had "
         "anything new to say.\n\n"
         "\"Do not worry about the things you cannot change,\" my grandmother used to say. \"Worry "
         "about the dishes.\" She was right more often than she was wrong. The dishes were always "
         "there, and the things we could not change usually changed on their own.\n\n"
         "A man who works hard all his life may find that the work was the best part of it. A "
         "woman who travels to every country may find that home was the most interesting place of "
         "all. There is no rule about where happiness lives, only a suspicion that it is closer "
         "than we think.\n\n"
         "If you want to keep a secret, do not tell it to anyone. If you want to keep a friend, do "
         "not tell him every secret you know. Time is the one thing everybody spends and nobody "
         "can save. Money can be earned again, but an afternoon that is gone does not come back.\n\n"
         "The small town had one road, one school and one shop that sold everything from bread to "
         "bicycle tires. On Sunday mornings the church bells rang, the dogs barked, and the old men "
         "sat outside the shop and argued about the weather, which never changed very much.\n";
}

}  // namespace kite::doctor
