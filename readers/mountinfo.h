// procfs mount table, <procfs>/<pid>/mountinfo (Documentation/filesystems/proc.rst, "3.5
// /proc/<pid>/mountinfo"), one mount a line:
//   36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//   (1)(2)(3)   (4)   (5)         (6)       (7...)   -  (8)  (9)       (10)
// mount ID, parent ID, major:minor of the filesystem's st_dev, root of the mount within the
// filesystem, mount point (relative to the reading process's root), options, zero or more
// optional fields ended by "-", fs type, source, super options. The kernel escapes space, tab,
// newline and backslash in paths as \ooo octal (seq_path/mangle_path); ParseMountInfo undoes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvmeof {

struct MountEntry {
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  std::string root;         // e.g. "/" or, for a bind mount of a device node, "/nvme1n1"
  std::string mount_point;  // unescaped
  std::string fs_type;
  std::string source;  // unescaped; "none" and the like as the kernel shows it
};

struct MountTable {
  std::vector<MountEntry> entries;
  // Lines left out: too few fields, no "-" separator, a bad major:minor, longer than
  // kMaxMountInfoLine. A line is never half-parsed.
  std::size_t skipped_lines = 0;
};

// Longer lines are skipped: a path is at most PATH_MAX (4096) bytes, 4 times that escaped, and
// a mount point and a root make two; anything beyond is not a line the kernel writes.
inline constexpr std::size_t kMaxMountInfoLine = 40 * 1024;

// Every well-formed line of `text`, in order. Entries whose mount point does not start with
// `mount_point_prefix` are left out before their strings are built: a node's mount table can
// hold thousands of mounts, of which a reader usually wants one subtree.
MountTable ParseMountInfo(std::string_view text, std::string_view mount_point_prefix = {});

// The \ooo escapes of a mountinfo path undone; other bytes kept as they are.
std::string UnescapeMountPath(std::string_view field);

// The whole file, read to its end (mountinfo is shown a mount at a time, so a short read is not
// its end, unlike an attribute); nullopt when it cannot be read or exceeds max_bytes.
std::optional<std::string> ReadMountInfoFile(const std::string& path,
                                             std::size_t max_bytes = 64u << 20);

}  // namespace nvmeof
