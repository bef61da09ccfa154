// Reading YAML config sections: every key is checked and unknown keys are errors (like
// exporter-toolkit). Each reader names the offending key by its dotted path `where` and returns
// false with one line in *error; collectors parse their own sections with these.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <regex>
#include <set>
#include <string>

#include "base/collector.h"

namespace nvmeof {

// `node` must be a mapping whose keys are all in `allowed`. The message for an unknown key
// lists the expected ones unless list_expected is false.
bool CheckKeys(const YAML::Node& node, const std::string& where,
               const std::set<std::string>& allowed, std::string* error, bool list_expected = true);

bool ReadScalar(const YAML::Node& node, const std::string& where, std::string* out,
                std::string* error);
bool ReadBool(const YAML::Node& node, const std::string& where, bool* out, std::string* error);

// A decimal integer in [lo, hi], given as a YAML scalar.
bool ReadUint(const YAML::Node& node, const std::string& where, std::uint64_t lo, std::uint64_t hi,
              std::uint64_t* out, std::string* error);

// A number of seconds in (0, max_seconds].
bool ReadSeconds(const YAML::Node& node, const std::string& where, double max_seconds, double* out,
                 std::string* error);

// ECMAScript, matched against the whole name; "" clears *re.
bool CompileRegex(const std::string& text, const std::string& where, std::optional<std::regex>* re,
                  std::string* error);

// {include: REGEX, exclude: REGEX}, both optional.
bool ReadFilter(const YAML::Node& node, const std::string& where, NameFilter* filter,
                std::string* error);

// A section whose one key is a filter: `<section>: {<key>: {include, exclude}}`.
bool ReadFilterSection(const YAML::Node& node, const std::string& section, const std::string& key,
                       NameFilter* filter, std::string* error);

}  // namespace nvmeof
