// Small text helpers shared by `report` and `top`: text bars and numbers.
#pragma once

#include <cstddef>
#include <string>

namespace nvmeof::profile {

// `width` characters: '#' for `fraction` of them (clamped to [0, 1]), spaces for the rest.
std::string Bar(double fraction, int width);
// printf of one double.
std::string Fmt(const char* format, double v);
// Microseconds with 1 decimal.
std::string Us(double seconds);
// part/whole in percent with 1 decimal ("0.0" when whole is 0).
std::string Percent(std::size_t part, std::size_t whole);

}  // namespace nvmeof::profile
