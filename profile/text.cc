#include "profile/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nvmeof::profile {

std::string Bar(double fraction, int width) {
  const int n = std::clamp(static_cast<int>(std::lround(fraction * width)), 0, width);
  return std::string(static_cast<size_t>(n), '#') +
         std::string(static_cast<size_t>(width - n), ' ');
}

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Us(double seconds) { return Fmt("%.1f", seconds * 1e6); }

std::string Percent(std::size_t part, std::size_t whole) {
  return Fmt("%.1f", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0);
}

}  // namespace nvmeof::profile
