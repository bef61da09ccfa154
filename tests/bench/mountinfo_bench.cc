// Cost of the kubernetes collector per scrape on a large node: a mount table of ENTRIES lines
// (default 5000: container overlays, projected tokens, empty dirs, and VOLUMES CSI volumes of
// pods on NVMe namespaces, half filesystem, half raw block, each with its staging mount), with
// the kubelet files and sysfs device links in a temporary tree.
//
//   mountinfo_bench [ENTRIES VOLUMES ROUNDS]
//
// Prints p50/p99 ms per Collect (read + parse of mountinfo, kubelet paths, vol_data.json,
// sysfs lookups, series built) and the series served. Timings are not asserted (ctest
// mountinfo_bench_smoke only runs it small); tests/bench/README.md "Mount table" has numbers.
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "collectors/collector_options.h"
#include "collectors/kubernetes.h"

namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string Uid(int i) {
  char buf[64];
  const unsigned u = static_cast<unsigned>(i);  // wraps, where i * 7919 as int would overflow
  std::snprintf(buf, sizeof buf, "%08x-1111-4222-8333-%012x", u, u * 7919u);
  return buf;
}

// The tree: <root>/procfs/1/mountinfo, <root>/rootfs/var/lib/kubelet/..., <root>/sysfs.
void BuildTree(const std::string& root, int entries, int volumes) {
  const std::string k = "/var/lib/kubelet";
  std::string mi;
  int id = 100;
  auto line = [&](const std::string& devt, const std::string& mroot, const std::string& mp,
                  const std::string& fs, const std::string& src) {
    const std::string n = std::to_string(id++);
    mi += n + " 22 " + devt + " " + mroot + " " + mp + " rw,relatime shared:" + n + " - " + fs +
          " " + src + " rw\n";
  };
  line("8:1", "/", "/", "ext4", "/dev/sda1");
  for (int v = 0; v < volumes; ++v) {
    const std::string pv = "pvc-" + Uid(v + 100000);
    const std::string uid = Uid(v);
    const std::string dev = "nvme" + std::to_string(v) + "n1";
    const std::string devt = "259:" + std::to_string(v);
    WriteFile(root + "/sysfs/devices/virtual/nvme-subsystem/s/" + dev + "/dev", devt + "\n");
    fs::create_directories(root + "/sysfs/dev/block");
    fs::create_directory_symlink("../../devices/virtual/nvme-subsystem/s/" + dev,
                                 root + "/sysfs/dev/block/" + devt);
    fs::create_directories(root + "/sysfs/class/block");
    fs::create_directory_symlink("../../devices/virtual/nvme-subsystem/s/" + dev,
                                 root + "/sysfs/class/block/" + dev);
    const std::string json =
        "{\"driverName\":\"nvmeof.csi.example.com\",\"specVolID\":\"" + pv + "\"}";
    if (v % 2 == 0) {
      line(devt, "/",
           k + "/plugins/kubernetes.io/csi/nvmeof.csi.example.com/" + Uid(v) + Uid(v) +
               "/globalmount",
           "ext4", "/dev/" + dev);
      line(devt, "/", k + "/pods/" + uid + "/volumes/kubernetes.io~csi/" + pv + "/mount", "ext4",
           "/dev/" + dev);
      WriteFile(root + "/rootfs" + k + "/pods/" + uid + "/volumes/kubernetes.io~csi/" + pv +
                    "/vol_data.json",
                json);
    } else {
      line("0:5", "/" + dev, k + "/plugins/kubernetes.io/csi/volumeDevices/" + pv + "/dev/" + uid,
           "devtmpfs", "udev");
      WriteFile(root + "/rootfs" + k + "/plugins/kubernetes.io/csi/volumeDevices/" + pv +
                    "/data/vol_data.json",
                json);
    }
  }
  // The rest: what a busy node's table is mostly made of.
  for (int i = 0; id - 100 < entries; ++i) {
    const std::string uid = Uid(1000000 + i / 3);
    switch (i % 3) {
      case 0:
        line("0:" + std::to_string(60 + i), "/",
             "/run/containerd/io.containerd.runtime.v2.task/k8s.io/" + Uid(i) + Uid(i) + "/rootfs",
             "overlay", "overlay");
        break;
      case 1:
        line("0:" + std::to_string(60 + i), "/",
             k + "/pods/" + uid + "/volumes/kubernetes.io~projected/kube-api-access-x2x9z", "tmpfs",
             "tmpfs");
        break;
      default:
        line("8:1", "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~empty-dir/cache",
             k + "/pods/" + uid + "/volumes/kubernetes.io~empty-dir/cache", "ext4", "/dev/sda1");
    }
  }
  WriteFile(root + "/procfs/1/mountinfo", mi);
}

}  // namespace

int main(int argc, char** argv) {
  const int entries = argc > 1 ? std::atoi(argv[1]) : 5000;
  const int volumes = argc > 2 ? std::atoi(argv[2]) : 200;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 200;
  char tmpl[] = "/tmp/mountinfo_bench.XXXXXX";
  if (!::mkdtemp(tmpl)) return 1;
  const std::string root = tmpl;
  BuildTree(root, entries, volumes);

  nvmeof::CollectorOptions o;
  o.paths.procfs = root + "/procfs";
  o.paths.sysfs = root + "/sysfs";
  o.paths.rootfs = root + "/rootfs";
  auto c = nvmeof::NewKubernetesCollector(o);
  // Wall time, and the thread's CPU time: on a shared, loaded machine the wall time includes
  // waiting for a core, the CPU time does not.
  auto cpu_ms = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  };
  std::vector<double> ms, cpu;
  size_t series = 0;
  for (int r = 0; r < rounds; ++r) {
    nvmeof::MetricSink sink;
    auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_ms();
    if (!c->Collect(sink)) return 1;
    cpu.push_back(cpu_ms() - c0);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    const auto* f = sink.Find("nvmeof_kubernetes_volume_info");
    series = f ? f->metric.size() : 0;
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu.begin(), cpu.end());
  std::printf("mount table: %d entries, %d CSI volumes on NVMe, %d rounds\n", entries, volumes,
              rounds);
  auto p = [](const std::vector<double>& v, int q) {
    return v[std::min(v.size() - 1, v.size() * q / 100)];
  };
  std::printf("Collect: wall p50 %.3f ms, p99 %.3f ms; CPU p50 %.3f ms, p99 %.3f ms; %zu series\n",
              p(ms, 50), p(ms, 99), p(cpu, 50), p(cpu, 99), series);
  fs::remove_all(root);
  return series == static_cast<size_t>(volumes) ? 0 : 2;
}
