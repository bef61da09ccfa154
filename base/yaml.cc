#include "base/yaml.h"

#include <sstream>

#include "base/files.h"

namespace nvmeof {

bool CheckKeys(const YAML::Node& node, const std::string& where,
               const std::set<std::string>& allowed, std::string* error, bool list_expected) {
  if (!node.IsMap()) {
    *error = where + ": expected a mapping";
    return false;
  }
  for (const auto& kv : node) {
    const auto key = kv.first.as<std::string>();
    if (allowed.count(key)) continue;
    *error = where + (where.empty() ? "" : ".") + key + ": unknown key";
    if (list_expected) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      *error += " (expected one of: " + list + ")";
    }
    return false;
  }
  return true;
}

bool ReadScalar(const YAML::Node& node, const std::string& where, std::string* out,
                std::string* error) {
  if (!node.IsScalar()) {
    *error = where + ": expected a string";
    return false;
  }
  *out = node.Scalar();
  return true;
}

bool ReadBool(const YAML::Node& node, const std::string& where, bool* out, std::string* error) {
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, *out)) {
    *error = where + ": expected true or false";
    return false;
  }
  return true;
}

bool ReadUint(const YAML::Node& node, const std::string& where, std::uint64_t lo, std::uint64_t hi,
              std::uint64_t* out, std::string* error) {
  std::string text;
  if (!ReadScalar(node, where, &text, error)) return false;
  auto v = ParseU64(text);
  if (!v || *v < lo || *v > hi) {
    *error = where + ": \"" + text + "\" is not an integer in [" + std::to_string(lo) + ", " +
             std::to_string(hi) + "]";
    return false;
  }
  *out = *v;
  return true;
}

bool ReadSeconds(const YAML::Node& node, const std::string& where, double max_seconds, double* out,
                 std::string* error) {
  double v = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, v) || !(v > 0) || v > max_seconds) {
    std::ostringstream max;
    max << max_seconds;
    *error = where + ": expected a number of seconds in (0, " + max.str() + "]";
    return false;
  }
  *out = v;
  return true;
}

bool CompileRegex(const std::string& text, const std::string& where, std::optional<std::regex>* re,
                  std::string* error) {
  if (text.empty()) {
    re->reset();
    return true;
  }
  try {
    *re = std::regex(text, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    *error = where + ": invalid regular expression \"" + text + "\": " + e.what();
    return false;
  }
  return true;
}

bool ReadFilter(const YAML::Node& node, const std::string& where, NameFilter* filter,
                std::string* error) {
  if (!CheckKeys(node, where, {"include", "exclude"}, error)) return false;
  for (auto [key, re] :
       {std::pair{"include", &filter->include}, std::pair{"exclude", &filter->exclude}}) {
    if (!node[key]) continue;
    const std::string at = where + "." + key;
    std::string text;
    if (!ReadScalar(node[key], at, &text, error) || !CompileRegex(text, at, re, error)) {
      return false;
    }
  }
  return true;
}

bool ReadFilterSection(const YAML::Node& node, const std::string& section, const std::string& key,
                       NameFilter* filter, std::string* error) {
  if (!CheckKeys(node, section, {key}, error)) return false;
  if (!node[key]) return true;
  return ReadFilter(node[key], section + "." + key, filter, error);
}

}  // namespace nvmeof
