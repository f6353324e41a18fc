// Text placed in HTML or SVG (reports, plots): the characters markup gives meaning to, escaped.
#pragma once

#include <string>
#include <string_view>

namespace kite {

// < > & " become &lt; &gt; &amp; &quot;; everything else is kept.
inline std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace kite
