#include "readers/tracepoint_format.h"

#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>

namespace nvmeof {
namespace {

// The number after `key` ("offset:") up to the next ';'.
std::optional<std::uint16_t> NumberAfter(std::string_view line, std::string_view key) {
  const auto at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const char* begin = line.data() + at + key.size();
  std::uint16_t v = 0;
  auto [ptr, ec] = std::from_chars(begin, line.data() + line.size(), v);
  if (ec != std::errc() || ptr == begin || ptr == line.data() + line.size() || *ptr != ';')
    return std::nullopt;
  return v;
}

}  // namespace

std::map<std::string, TracepointField> ParseTracepointFormat(std::string_view text) {
  std::map<std::string, TracepointField> fields;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const auto field = line.find("field:");
    const auto semi = line.find(';');
    if (field == std::string_view::npos || semi == std::string_view::npos || semi < field) continue;
    std::string_view decl = line.substr(field + 6, semi - field - 6);  // "char disk[32]"
    if (const auto bracket = decl.find('['); bracket != std::string_view::npos)
      decl = decl.substr(0, bracket);
    while (!decl.empty() && decl.back() == ' ') decl.remove_suffix(1);
    const auto space = decl.find_last_of(" *");
    const std::string_view name = space == std::string_view::npos ? decl : decl.substr(space + 1);
    auto offset = NumberAfter(line, "offset:");
    auto size = NumberAfter(line, "size:");
    if (name.empty() || !offset || !size) continue;
    fields[std::string(name)] = {*offset, *size};
  }
  return fields;
}

std::map<std::string, TracepointField> ReadTracepointFormat(const std::string& sysfs,
                                                            std::string_view event,
                                                            std::string* error) {
  for (const char* tracefs : {"/kernel/tracing", "/kernel/debug/tracing"}) {
    // Read to the end: tracefs shows a format a record at a time, so a short read is not its
    // end (files.h's ReadFile stops there).
    std::ifstream in(sysfs + tracefs + "/events/" + std::string(event) + "/format");
    if (in) {
      std::ostringstream text;
      text << in.rdbuf();
      auto fields = ParseTracepointFormat(text.str());
      if (fields.empty()) *error = "tracepoint " + std::string(event) + ": format has no fields";
      return fields;
    }
  }
  *error = "tracepoint " + std::string(event) + ": no format file (tracefs not mounted?)";
  return {};
}

void SetTracepointFields(const std::string& sysfs, std::span<const TracepointSlot> slots) {
  std::map<std::string, std::map<std::string, TracepointField>, std::less<>> formats;
  for (const auto& s : slots) {
    auto [it, fresh] = formats.try_emplace(std::string(s.event));
    std::string ignored;  // the prober says it, for the hook whose program reads the field
    if (fresh) it->second = ReadTracepointFormat(sysfs, s.event, &ignored);
    if (auto f = it->second.find(std::string(s.field)); f != it->second.end()) {
      s.to->offset = f->second.offset;
      s.to->size = f->second.size;
    }
  }
}

}  // namespace nvmeof
