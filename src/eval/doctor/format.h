// Numbers as the doctor's findings print them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kite::doctor {

// `value` with `digits` digits after the point ("0.473").
std::string Fixed(double value, int digits);
// `value` with three significant digits ("0.0224", "7.81e-05").
std::string Significant(double value);
// `text` on one line: newlines, tabs and carriage returns as \n, \t, \r.
std::string Printable(std::string_view text);
// Bytes in MiB below 1 GiB, else GiB, one decimal ("12.3 MiB", "7.5 GiB").
std::string ByteSize(uint64_t bytes);

}  // namespace kite::doctor
