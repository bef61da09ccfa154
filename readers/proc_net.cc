#include "readers/proc_net.h"

#include <sstream>
#include <vector>

namespace nvmeof {
namespace {

std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

}  // namespace

void ParseNetStatPairs(const std::string& text, NetStatTable* table) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (size_t i = 0; i < lines.size(); ++i) {
    auto colon = lines[i].find(':');
    if (colon == std::string::npos || colon == 0) continue;
    const std::string section = lines[i].substr(0, colon);
    const std::string prefix = section + ":";
    if (i + 1 >= lines.size() || lines[i + 1].compare(0, prefix.size(), prefix) != 0) {
      table->broken.insert(section);
      continue;
    }
    auto keys = Fields(lines[i].substr(colon + 1));
    auto vals = Fields(lines[i + 1].substr(colon + 1));
    ++i;
    if (keys.size() != vals.size() || keys.empty()) {
      table->broken.insert(section);
      continue;
    }
    auto& dst = table->values[section];
    for (size_t k = 0; k < keys.size(); ++k) dst[keys[k]] = vals[k];
  }
}

void ParseSnmp6(const std::string& text, NetStatTable* table) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    auto f = Fields(l);
    if (f.size() == 2 && f[0].rfind("Ip6", 0) == 0) table->values["Ip6"][f[0]] = f[1];
  }
}

}  // namespace nvmeof
