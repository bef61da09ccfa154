// The JSON output of `report` and `top` (nlohmann/json, Debian's nlohmann-json3-dev; the record
// files' reader and writer use it too): keys in the order written, one object per line.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

namespace nvmeof::profile {

using Json = nlohmann::ordered_json;

// A measured value: 9 significant digits (more would be noise and churn diffs), an integer
// when it is one (1000, not 1000.0), null for NaN and infinities.
Json JsonReal(double v);

// `doc` on one line and '\n'; bytes that are not UTF-8 (a device name) become U+FFFD.
void WriteJson(const Json& doc, std::ostream& out);

}  // namespace nvmeof::profile
