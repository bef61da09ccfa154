#include "base/collector.h"

namespace nvmeof {

bool NameFilter::Allows(std::string_view name) const {
  const std::string s(name);
  if (include && !std::regex_match(s, *include)) return false;
  if (exclude && std::regex_match(s, *exclude)) return false;
  return true;
}

}  // namespace nvmeof
