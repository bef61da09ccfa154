#include "profile/json_out.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace nvmeof::profile {

Json JsonReal(double v) {
  if (!std::isfinite(v)) return nullptr;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  const double rounded = std::strtod(buf, nullptr);
  // Whole numbers below 2^53 are exact as doubles, so the integer is the same value.
  if (rounded == std::trunc(rounded) && std::fabs(rounded) < 9007199254740992.0)
    return static_cast<std::int64_t>(rounded);
  return rounded;
}

void WriteJson(const Json& doc, std::ostream& out) {
  out << doc.dump(-1, ' ', false, Json::error_handler_t::replace) << '\n';
}

}  // namespace nvmeof::profile
