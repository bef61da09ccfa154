// procfs network statistics files: <procfs>/net/snmp and net/netstat ("Sect: k1 k2 ..." header
// lines, each followed by "Sect: v1 v2 ..."), and net/snmp6 ("Name value" lines). Columns differ
// between kernels, so values are looked up by header name.
#pragma once

#include <map>
#include <set>
#include <string>

namespace nvmeof {

// Section -> (key -> value text), plus the sections that were present but malformed.
struct NetStatTable {
  std::map<std::string, std::map<std::string, std::string>> values;
  std::set<std::string> broken;
};

// snmp/netstat: adds every well-formed header/value pair; a header without its value line
// (truncated file) or with a different column count marks the section broken.
void ParseNetStatPairs(const std::string& text, NetStatTable* table);

// snmp6: keeps the Ip6* lines, as section "Ip6".
void ParseSnmp6(const std::string& text, NetStatTable* table);

}  // namespace nvmeof
