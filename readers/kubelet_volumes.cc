#include "readers/kubelet_volumes.h"

#include <unistd.h>

#include <array>
#include <cstdint>

#include "base/files.h"

namespace nvmeof {
namespace {

// Up to `max` '/'-separated components of `rel`; false when there are more, or one is empty
// (a doubled slash is no path kubelet makes).
bool SplitPath(std::string_view rel, std::array<std::string_view, 8>* parts, size_t* n) {
  *n = 0;
  while (true) {
    if (*n == parts->size()) return false;
    auto slash = rel.find('/');
    std::string_view part = rel.substr(0, slash);
    if (part.empty()) return false;
    (*parts)[(*n)++] = part;
    if (slash == std::string_view::npos) return true;
    rel.remove_prefix(slash + 1);
  }
}

std::string ReadDriver(const std::string& path) {
  auto text = ReadFile(path);
  return text ? ParseCsiDriverName(*text) : std::string();
}

void AppendUtf8(std::uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    // Surrogates are written as they are: the label sanitizer turns them into U+FFFD.
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A JSON string starting at text[*i] == '"'; advances *i past it. False on malformed input.
bool ParseJsonString(std::string_view text, size_t* i, std::string* out) {
  if (*i >= text.size() || text[*i] != '"') return false;
  for (size_t p = *i + 1; p < text.size(); ++p) {
    char c = text[p];
    if (c == '"') {
      *i = p + 1;
      return true;
    }
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (++p >= text.size()) return false;
    switch (text[p]) {
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'u': {
        if (p + 4 >= text.size()) return false;
        std::uint32_t cp = 0;
        for (int k = 1; k <= 4; ++k) {
          char h = text[p + k];
          int v = h >= '0' && h <= '9'   ? h - '0'
                  : h >= 'a' && h <= 'f' ? h - 'a' + 10
                  : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                         : -1;
          if (v < 0) return false;
          cp = cp * 16 + static_cast<std::uint32_t>(v);
        }
        AppendUtf8(cp, out);
        p += 4;
        break;
      }
      default:
        out->push_back(text[p]);
        break;  // \" \\ \/
    }
  }
  return false;
}

void SkipSpace(std::string_view text, size_t* i) {
  while (*i < text.size() &&
         (text[*i] == ' ' || text[*i] == '\t' || text[*i] == '\n' || text[*i] == '\r')) {
    ++*i;
  }
}

}  // namespace

std::string ParseCsiDriverName(std::string_view json) {
  // kubelet writes a flat object of strings (csi_util.go saveVolumeData); anything nested is
  // not that file, and gives "" rather than a guess.
  size_t i = 0;
  SkipSpace(json, &i);
  if (i >= json.size() || json[i++] != '{') return "";
  std::string driver;
  while (true) {
    SkipSpace(json, &i);
    if (i < json.size() && json[i] == '}') return driver;
    std::string key, value;
    if (!ParseJsonString(json, &i, &key)) return "";
    SkipSpace(json, &i);
    if (i >= json.size() || json[i++] != ':') return "";
    SkipSpace(json, &i);
    if (i < json.size() && json[i] == '"') {
      if (!ParseJsonString(json, &i, &value)) return "";
    } else {  // a number, true, false or null: not what we look for
      while (i < json.size() && json[i] != ',' && json[i] != '}') {
        if (json[i] == '{' || json[i] == '[' || json[i] == '"') return "";
        ++i;
      }
    }
    if (key == "driverName") driver = std::move(value);
    SkipSpace(json, &i);
    if (i < json.size() && json[i] == ',') {
      ++i;
      continue;
    }
    if (i < json.size() && json[i] == '}') return driver;
    return "";
  }
}

KubeletMounts FindKubeletVolumes(const MountTable& table, std::string_view kubelet_root,
                                 const std::string& kubelet_dir) {
  while (kubelet_root.size() > 1 && kubelet_root.back() == '/') kubelet_root.remove_suffix(1);
  KubeletMounts out;
  for (const auto& m : table.entries) {
    std::string_view mp = m.mount_point;
    if (!mp.starts_with(kubelet_root) || mp.size() <= kubelet_root.size() + 1 ||
        mp[kubelet_root.size()] != '/') {
      continue;
    }
    std::string_view rel = mp.substr(kubelet_root.size() + 1);
    std::array<std::string_view, 8> p;
    size_t n = 0;
    if (!SplitPath(rel, &p, &n)) continue;
    if (n == 6 && p[0] == "pods" && p[2] == "volumes" && p[3] == "kubernetes.io~csi" &&
        p[5] == "mount") {
      KubeletVolume v;
      v.persistent_volume = std::string(p[4]);
      v.pod_uid = std::string(p[1]);
      v.mode = VolumeMode::kFilesystem;
      v.major = m.major;
      v.minor = m.minor;
      v.csi_driver = ReadDriver(kubelet_dir + "/" + std::string(rel.substr(0, rel.rfind('/'))) +
                                "/vol_data.json");
      out.volumes.push_back(std::move(v));
      continue;
    }
    const bool csi = n >= 3 && p[0] == "plugins" && p[1] == "kubernetes.io" && p[2] == "csi";
    if (csi && n == 7 && p[3] == "volumeDevices" && p[5] == "dev") {
      // The device node's name is the last component of the mount's root within devtmpfs. A
      // node removed since shows as "/nvme1n1//deleted": the device is gone, no series.
      std::string_view root = m.root;
      if (root.ends_with("//deleted")) continue;
      std::string_view name = root.substr(root.rfind('/') + 1);
      if (name.empty()) continue;
      KubeletVolume v;
      v.persistent_volume = std::string(p[4]);
      v.pod_uid = std::string(p[6]);
      v.mode = VolumeMode::kBlock;
      v.device_name = std::string(name);
      v.csi_driver = ReadDriver(kubelet_dir + "/plugins/kubernetes.io/csi/volumeDevices/" +
                                v.persistent_volume + "/data/vol_data.json");
      out.volumes.push_back(std::move(v));
      continue;
    }
    if (csi && n == 6 && p[5] == "globalmount") {
      ++out.staging_mounts;
      // .../csi/pv/<pv>/globalmount (before 1.24) names the PV, not the driver.
      if (p[3] != "pv") out.staging_drivers[{m.major, m.minor}] = std::string(p[3]);
    }
  }
  return out;
}

void BlockDeviceNames::Scan() {
  scanned_ = true;
  for (const char* dir : {"/class/block/", "/block/"}) {
    const std::string root = sysfs_ + dir;
    for (const auto& name : ListDir(root)) {
      auto dev = ReadFile(root + name + "/dev");
      if (!dev) continue;
      auto colon = dev->find(':');
      if (colon == std::string::npos) continue;
      auto major = ParseU64(std::string_view(*dev).substr(0, colon));
      auto minor = ParseU64(std::string_view(*dev).substr(colon + 1));
      if (!major || !minor || *major > UINT32_MAX || *minor > UINT32_MAX) continue;
      by_devt_.emplace(
          std::pair{static_cast<std::uint32_t>(*major), static_cast<std::uint32_t>(*minor)}, name);
    }
  }
}

std::optional<std::string> BlockDeviceNames::ByDevT(std::uint32_t major, std::uint32_t minor) {
  const std::string link =
      sysfs_ + "/dev/block/" + std::to_string(major) + ":" + std::to_string(minor);
  std::optional<std::string> name = ReadLinkBase(link);
  std::string dir = link;
  if (!name) {
    if (!scanned_) Scan();
    auto it = by_devt_.find({major, minor});
    if (it == by_devt_.end()) return std::nullopt;
    name = it->second;
    dir = sysfs_ + "/class/block/" + *name;
  }
  // A partition's directory sits in its disk's (.../nvme1n1/nvme1n1p1): the series are per
  // disk, so a filesystem on a partition is its disk's.
  if (Exists(dir + "/partition")) {
    char buf[4096];
    ssize_t len = ::readlink(dir.c_str(), buf, sizeof buf);
    if (len <= 0 || static_cast<size_t>(len) >= sizeof buf) return name;
    std::string_view target(buf, static_cast<size_t>(len));
    target = target.substr(0, target.rfind('/'));
    std::string_view disk = target.substr(target.rfind('/') + 1);
    if (!disk.empty() && disk != ".." && disk != ".") return std::string(disk);
  }
  return name;
}

bool BlockDeviceNames::Known(const std::string& name) const {
  if (name.find('/') != std::string::npos || name == "." || name == "..") return false;
  return Exists(sysfs_ + "/class/block/" + name) || Exists(sysfs_ + "/block/" + name);
}

}  // namespace nvmeof
