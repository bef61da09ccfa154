#include "readers/mountinfo.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>

namespace nvmeof {
namespace {

bool IsOctal(char c) { return c >= '0' && c <= '7'; }

// "259:3" -> 259, 3; false for anything else (a bare number, a sign, trailing bytes).
bool ParseMajorMinor(std::string_view text, std::uint32_t* major, std::uint32_t* minor) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return false;
  const char* end = text.data() + text.size();
  auto a = std::from_chars(text.data(), text.data() + colon, *major);
  if (a.ec != std::errc() || a.ptr != text.data() + colon) return false;
  auto b = std::from_chars(text.data() + colon + 1, end, *minor);
  return b.ec == std::errc() && b.ptr == end;
}

// Splits on single spaces (the kernel writes exactly one between fields; an empty field, two
// spaces in a row, is kept and later fails its check). At most `max` fields: the rest of the
// line, if any, is not ours to read (super options never hold a space unescaped).
size_t SplitFields(std::string_view line, std::string_view* fields, size_t max) {
  size_t n = 0;
  while (n < max) {
    auto sp = line.find(' ');
    fields[n++] = line.substr(0, sp);
    if (sp == std::string_view::npos) break;
    line.remove_prefix(sp + 1);
  }
  return n;
}

// Optional fields (shared:N, master:N, propagate_from:N, unbindable) come before "-"; their
// number varies, so the fields after the separator are found by looking for it. 64 bounds them:
// a real mount has at most four.
constexpr size_t kMaxFields = 64;

bool ParseLine(std::string_view line, std::string_view prefix, MountEntry* e, bool* wanted) {
  std::array<std::string_view, kMaxFields> f;
  const size_t n = SplitFields(line, f.data(), f.size());
  size_t sep = 6;
  while (sep < n && f[sep] != "-") ++sep;
  // Separator, then fs type and source (super options may be absent on odd input: not needed).
  if (sep + 2 >= n || f[3].empty() || f[4].empty()) return false;
  if (!ParseMajorMinor(f[2], &e->major, &e->minor)) return false;
  // Most mount points hold no escape: compare the raw field, and build the string only for
  // the mounts wanted (most of a node's table is not).
  if (f[4].find('\\') == std::string_view::npos) {
    *wanted = f[4].starts_with(prefix);
    if (*wanted) e->mount_point = std::string(f[4]);
  } else {
    e->mount_point = UnescapeMountPath(f[4]);
    *wanted = e->mount_point.starts_with(prefix);
  }
  if (!*wanted) return true;
  e->root = UnescapeMountPath(f[3]);
  e->fs_type = std::string(f[sep + 1]);
  e->source = UnescapeMountPath(f[sep + 2]);
  return true;
}

}  // namespace

std::string UnescapeMountPath(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && IsOctal(field[i + 1]) &&
        IsOctal(field[i + 2]) && IsOctal(field[i + 3])) {
      int v = (field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0');
      if (v <= 0xFF) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

MountTable ParseMountInfo(std::string_view text, std::string_view mount_point_prefix) {
  MountTable table;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty()) continue;
    if (line.size() > kMaxMountInfoLine) {
      ++table.skipped_lines;
      continue;
    }
    MountEntry e;
    bool wanted = false;
    if (!ParseLine(line, mount_point_prefix, &e, &wanted)) {
      ++table.skipped_lines;
      continue;
    }
    if (wanted) table.entries.push_back(std::move(e));
  }
  return table;
}

std::optional<std::string> ReadMountInfoFile(const std::string& path, std::size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string data;
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || data.size() + static_cast<size_t>(n) > max_bytes) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

}  // namespace nvmeof
