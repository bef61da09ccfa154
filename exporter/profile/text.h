// Small text helpers shared by `report` and `top`: text bars and JSON values.
#pragma once

#include <string>

namespace nvmeof::profile {

// `width` characters: '#' for `fraction` of them (clamped to [0, 1]), spaces for the rest.
std::string Bar(double fraction, int width);
// A JSON string literal (quotes, backslashes and control characters escaped).
std::string JsonString(const std::string& s);
// A JSON number with 9 significant digits; null for NaN and infinities.
std::string JsonNumber(double v);

}  // namespace nvmeof::profile
