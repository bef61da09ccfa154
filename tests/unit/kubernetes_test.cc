// The kubernetes collector on tests/fixtures/kubernetes (mount tables before and after a pod
// goes, kubelet files under a rootfs) with the NVMe devices of tests/fixtures/sysfs, and its
// readers (mountinfo, kubelet volume paths, vol_data.json) on odd input.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>

#include "base/files.h"
#include "collectors/registry.h"
#include "readers/kubelet_volumes.h"
#include "readers/mountinfo.h"
#include "tests/unit/scratch_tree.h"
#include "tests/unit/sink_query.h"

namespace nvmeof {
namespace {

namespace fs = std::filesystem;

const std::string kFixture = std::string(NVMEOF_FIXTURES) + "/kubernetes";
const std::string kFamily = "nvmeof_kubernetes_volume_info";
const std::string kPvA = "pvc-0b5e6f7a-1c2d-4e3f-8a9b-0c1d2e3f4a5b";
const std::string kPvB = "pvc-7d8e9f0a-2b3c-4d5e-8f60-718293a4b5c6";
const std::string kPvD = "pvc-d4d4d4d4-0000-4000-8000-00000000000d";
const std::string kUidA = "5f7c1c9e-2b1a-4c5e-9a77-1d2e3f405060";
const std::string kUidB = "8d1e2f30-4a5b-4c6d-8e7f-901a2b3c4d5e";
const std::string kUidC = "c0ffee00-1111-4222-8333-444455556666";
const std::string kUidD = "d00dfeed-aaaa-4bbb-8ccc-ddddeeeeffff";
const std::string kUidE = "e1e2e3e4-0000-4000-8000-000000000005";

CollectorOptions FixtureOptions(const std::string& procfs = kFixture + "/procfs") {
  CollectorOptions o;
  o.paths.sysfs = std::string(NVMEOF_FIXTURES) + "/sysfs";
  o.paths.procfs = procfs;
  o.paths.rootfs = kFixture + "/rootfs";
  return o;
}

TEST(KubernetesCollector, OneSeriesPerPodVolumeOnAnNvmeNamespace) {
  MetricSink sink;
  ASSERT_TRUE(NewKubernetesCollector(FixtureOptions())->Collect(sink));
  // Filesystem volume on a namespace head, used by two pods: one series per pod.
  for (const auto& uid : {kUidA, kUidE}) {
    EXPECT_EQ(Count(sink, kFamily,
                    {{"disk", "nvme1n1"},
                     {"persistentvolume", kPvA},
                     {"uid", uid},
                     {"volume_mode", "filesystem"},
                     {"csi_driver", "nvmeof.csi.example.com"}}),
              1)
        << uid;
  }
  // Raw block volume on a multipath path disk; the driver's publish mount is no second series.
  EXPECT_EQ(Count(sink, kFamily,
                  {{"disk", "nvme1c2n1"},
                   {"persistentvolume", kPvB},
                   {"uid", kUidB},
                   {"volume_mode", "block"},
                   {"csi_driver", "block.csi.example.com"}}),
            1);
  // vol_data.json truncated: the driver named by the staging mount on the same device.
  EXPECT_EQ(Count(sink, kFamily,
                  {{"disk", "nvme3n1"},
                   {"persistentvolume", kPvD},
                   {"uid", kUidD},
                   {"csi_driver", "fallback.csi.example.com"}}),
            1);
  // Hostile PV directory name (\040 space, \012 newline, a raw 0xFF byte): sanitized, and no
  // vol_data.json nor named staging mount, so no driver.
  EXPECT_EQ(Count(sink, kFamily,
                  {{"disk", "nvme0n1"},
                   {"persistentvolume", "pvc oddname\xEF\xBF\xBD"},
                   {"uid", kUidC},
                   {"csi_driver", ""}}),
            1);
  // sdb (not NVMe), projected and subPath mounts, the staging mounts: no series. 5 in all.
  EXPECT_EQ(Count(sink, kFamily), 5);
  EXPECT_EQ(sink.skipped(), 0u);
  EXPECT_GE(sink.sanitized(), 1u);
}

TEST(KubernetesCollector, SeriesGoWithTheirMounts) {
  ScratchDir dir;
  const std::string mi = "1/mountinfo";
  dir.Write(mi, *ReadMountInfoFile(kFixture + "/procfs/1/mountinfo"));
  auto c = NewKubernetesCollector(FixtureOptions(dir.path()));
  MetricSink before;
  ASSERT_TRUE(c->Collect(before));
  EXPECT_EQ(Count(before, kFamily, {{"uid", kUidB}}), 1);
  // The block volume's pod is deleted: kubelet unmaps its device, the series goes.
  dir.Write(mi, *ReadMountInfoFile(kFixture + "/procfs-after/1/mountinfo"));
  MetricSink after;
  ASSERT_TRUE(c->Collect(after));
  EXPECT_EQ(Count(after, kFamily, {{"uid", kUidB}}), 0);
  EXPECT_EQ(Count(after, kFamily), 4);
}

TEST(KubernetesCollector, NothingAtAllWithoutAKubeletDirectory) {
  ScratchDir empty;
  auto o = FixtureOptions();
  o.paths.rootfs = empty.path();
  MetricSink sink;
  EXPECT_TRUE(NewKubernetesCollector(o)->Collect(sink));
  EXPECT_TRUE(sink.Empty());
  EXPECT_EQ(sink.skipped(), 0u);
  EXPECT_TRUE(sink.failure().empty());
}

TEST(KubernetesCollector, UnreadableMountTableIsAFailure) {
  ScratchDir empty;
  MetricSink sink;
  EXPECT_FALSE(NewKubernetesCollector(FixtureOptions(empty.path()))->Collect(sink));
  EXPECT_NE(sink.failure().find("mountinfo"), std::string::npos);
}

TEST(KubernetesCollector, MovedKubeletRootAndDeletedDeviceNode) {
  ScratchDir dir;
  const std::string k = "/var/snap/microk8s/common/var/lib/kubelet";
  dir.Write("rootfs" + k + "/pods/.keep", "");
  dir.Write("procfs/1/mountinfo",
            "1 0 259:2 / " + k + "/pods/u1/volumes/kubernetes.io~csi/pv1/mount rw - ext4 x rw\n" +
                // Same volume under the default root: not this kubelet's.
                "2 0 259:2 / /var/lib/kubelet/pods/u2/volumes/kubernetes.io~csi/pv2/mount rw - "
                "ext4 x rw\n"
                // A device node removed while still bind-mounted.
                "3 0 0:5 /nvme1n1//deleted " +
                k + "/plugins/kubernetes.io/csi/volumeDevices/pv3/dev/u3 rw - devtmpfs udev rw\n");
  auto o = FixtureOptions(dir.path() + "/procfs");
  o.paths.rootfs = dir.path() + "/rootfs/";  // a trailing slash is no doubled one
  o.kubernetes.kubelet_root = k + "/";
  MetricSink sink;
  ASSERT_TRUE(NewKubernetesCollector(o)->Collect(sink));
  EXPECT_EQ(Count(sink, kFamily), 1);
  EXPECT_EQ(Count(sink, kFamily, {{"persistentvolume", "pv1"}, {"uid", "u1"}, {"csi_driver", ""}}),
            1);
}

TEST(KubernetesOptions, Section) {
  KubernetesOptions o;
  std::string error;
  EXPECT_TRUE(ParseKubernetesOptions(YAML::Load("kubelet_root: /var/lib/k0s/kubelet"), &o, &error))
      << error;
  EXPECT_EQ(o.kubelet_root, "/var/lib/k0s/kubelet");
  EXPECT_FALSE(ParseKubernetesOptions(YAML::Load("kubelet_root: var/lib"), &o, &error));
  EXPECT_NE(error.find("kubernetes.kubelet_root"), std::string::npos);
  EXPECT_FALSE(ParseKubernetesOptions(YAML::Load("kublet_root: /x"), &o, &error));
  ASSERT_NE(FindCollector("kubernetes"), nullptr);
  EXPECT_TRUE(FindCollector("kubernetes")->enabled_by_default);
}

TEST(MountInfo, FieldsEscapesAndOptionalFields) {
  auto t = ParseMountInfo(
      "36 35 98:0 /mnt1 /mnt/parent\\040dir rw,noatime master:1 shared:2 - ext3 /dev/root rw\n"
      "37 35 0:5 /nvme1n1 /a\\011b\\134c rw - devtmpfs udev rw\n"
      "38 35 8:1 / /no-optional rw - xfs /dev/sda1\n");  // super options missing: still fine
  ASSERT_EQ(t.entries.size(), 3u);
  EXPECT_EQ(t.skipped_lines, 0u);
  EXPECT_EQ(t.entries[0].major, 98u);
  EXPECT_EQ(t.entries[0].minor, 0u);
  EXPECT_EQ(t.entries[0].root, "/mnt1");
  EXPECT_EQ(t.entries[0].mount_point, "/mnt/parent dir");
  EXPECT_EQ(t.entries[0].fs_type, "ext3");
  EXPECT_EQ(t.entries[0].source, "/dev/root");
  EXPECT_EQ(t.entries[1].mount_point, "/a\tb\\c");
  EXPECT_EQ(t.entries[1].root, "/nvme1n1");
  EXPECT_EQ(t.entries[2].fs_type, "xfs");
}

TEST(MountInfo, HostileLinesAreSkippedAndCounted) {
  const std::string good = "1 0 259:2 / /ok rw - ext4 /dev/nvme1n1 rw\n";
  std::string text = good;
  text += "2 0 259:2\n";                                   // too few fields
  text += "3 0 259:2 / /x rw shared:1 ext4 /dev/y rw\n";   // no separator
  text += "4 0 259 / /x rw - ext4 /dev/y rw\n";            // major without minor
  text += "5 0 -1:2 / /x rw - ext4 /dev/y rw\n";           // negative
  text += "6 0 1:99999999999 / /x rw - ext4 /dev/y rw\n";  // over 32 bits
  text += "7 0 1:2  /x rw - ext4 /dev/y rw\n";             // empty root (two spaces)
  text += "8 0 1:2 / /" + std::string(kMaxMountInfoLine, 'a') + " rw - ext4 /dev/y rw\n";
  text += "9 0 1:2 / /x rw " + std::string(200, 'o').replace(1, 198, 198, ' ') + "\n";
  text += "\n\n";
  text += "10 0 1:2 / /trailing\\ rw - ext4 /dev/y\\04 rw";  // cut escapes, no final newline
  auto t = ParseMountInfo(text);
  ASSERT_EQ(t.entries.size(), 2u);
  EXPECT_EQ(t.entries[0].mount_point, "/ok");
  EXPECT_EQ(t.entries[1].mount_point, "/trailing\\");
  EXPECT_EQ(t.entries[1].source, "/dev/y\\04");
  EXPECT_EQ(t.skipped_lines, 8u);
}

TEST(MountInfo, PrefixFilterLeavesOthersOut) {
  auto t = ParseMountInfo(
      "1 0 1:1 / /var/lib/kubelet/pods/x rw - ext4 a rw\n"
      "2 0 1:2 / /var/lib/kubeletfoo rw - ext4 b rw\n"
      "3 0 1:3 / /var/lib/kubelet\\040x/y rw - ext4 c rw\n",
      "/var/lib/kubelet/");
  ASSERT_EQ(t.entries.size(), 1u);
  EXPECT_EQ(t.entries[0].source, "a");
}

TEST(KubeletVolumes, CsiDriverName) {
  EXPECT_EQ(ParseCsiDriverName(R"({"attachmentID":"a","driverName":"x.csi.io","n":1})"),
            "x.csi.io");
  EXPECT_EQ(ParseCsiDriverName(" {\n \"driverName\" : \"a\\\"b\\u00e9\\/c\" } "), "a\"b\xC3\xA9/c");
  // A value that looks like the key is not the key.
  EXPECT_EQ(ParseCsiDriverName(R"({"volumeHandle":"\"driverName\":\"evil\"","driverName":"ok"})"),
            "ok");
  EXPECT_EQ(ParseCsiDriverName(R"({"specVolID":"pv"})"), "");
  EXPECT_EQ(ParseCsiDriverName(R"({"driverName":{"x":"y"}})"), "");
  EXPECT_EQ(ParseCsiDriverName(R"({"driverName":"trunc)"), "");
  EXPECT_EQ(ParseCsiDriverName(""), "");
  EXPECT_EQ(ParseCsiDriverName("[\"driverName\"]"), "");
}

TEST(KubeletVolumes, StagingMountsNeverBecomePodVolumes) {
  auto t = ParseMountInfo(*ReadMountInfoFile(kFixture + "/procfs/1/mountinfo"));
  EXPECT_EQ(t.skipped_lines, 3u);  // the fixture's three broken lines
  auto m = FindKubeletVolumes(t, "/var/lib/kubelet", kFixture + "/rootfs/var/lib/kubelet");
  EXPECT_EQ(m.staging_mounts, 3u);
  EXPECT_EQ(m.staging_drivers.size(), 2u);  // the pre-1.24 pv/<pv>/globalmount names none
  for (const auto& v : m.volumes) EXPECT_NE(v.pod_uid, "globalmount");
  EXPECT_EQ(m.volumes.size(), 6u);  // 5 NVMe + sdb, told apart later by sysfs
}

TEST(BlockDeviceNames, DevBlockLinkAndPartitions) {
  ScratchDir sys;
  const std::string disk = "devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n1";
  sys.Write(disk + "/dev", "259:2\n");
  sys.Write(disk + "/nvme1n1p1/dev", "259:7\n");
  sys.Write(disk + "/nvme1n1p1/partition", "1\n");
  fs::create_directories(sys.path() + "/dev/block");
  fs::create_directory_symlink("../../" + disk, sys.path() + "/dev/block/259:2");
  fs::create_directory_symlink("../../" + disk + "/nvme1n1p1", sys.path() + "/dev/block/259:7");
  BlockDeviceNames names(sys.path());
  EXPECT_EQ(names.ByDevT(259, 2).value_or("-"), "nvme1n1");
  EXPECT_EQ(names.ByDevT(259, 7).value_or("-"), "nvme1n1");  // a partition is its disk's
  EXPECT_FALSE(names.ByDevT(8, 0).has_value());
  // Without /sys/dev/block (the shared fixture): the dev files of <sysfs>/block.
  BlockDeviceNames fixture(std::string(NVMEOF_FIXTURES) + "/sysfs");
  EXPECT_EQ(fixture.ByDevT(259, 4).value_or("-"), "nvme1c2n1");
  EXPECT_TRUE(fixture.Known("nvme1c2n1"));
  EXPECT_FALSE(fixture.Known("../block/nvme1n1"));
  EXPECT_FALSE(fixture.Known("sdz"));
}

}  // namespace
}  // namespace nvmeof
