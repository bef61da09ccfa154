// profile/record_spool.h: what `record` keeps while it records comes back whole and in order,
// names included, in about a sixth of the kernel records' bytes.
#include "profile/record_spool.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace nvmeof::profile {
namespace {

nvmeof_record Kernel(std::uint16_t cid, const char* disk, const char* nqn, const char* hostnqn) {
  nvmeof_record k{};
  for (int p = 0; p < NVMEOF_POINTS; ++p) k.ts[p] = 1'000'000ULL * cid + 1000ULL * p;
  k.slba = 8ULL * cid;
  k.bytes = 4096;
  k.nlb = 7;
  k.qid = 1 + cid % 4;
  k.cid = cid;
  k.cntlid = 3;
  k.role = *disk ? NVMEOF_ROLE_HOST : NVMEOF_ROLE_TARGET;
  k.opcode = 2;
  k.trtype = 3;
  std::snprintf(k.disk, sizeof k.disk, "%s", disk);
  std::snprintf(k.nqn, sizeof k.nqn, "%s", nqn);
  std::snprintf(k.hostnqn, sizeof k.hostnqn, "%s", hostnqn);
  return k;
}

class RecordSpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("record_spool_test." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(RecordSpoolTest, RecordsComeBackWholeAndInOrder) {
  RecordSpool spool;
  ASSERT_EQ(spool.Open(dir_.string()), "");
  // Two controllers' hosts and a target interleaved, more distinct names than the spool keeps
  // recent (16), a name of the field's full size (no NUL), and an empty one.
  std::vector<nvmeof_record> in;
  const std::string full(sizeof(nvmeof_record::nqn), 'q');
  for (std::uint16_t i = 0; i < 20000; ++i) {
    const std::string disk = "nvme" + std::to_string(i % 3) + "c0n" + std::to_string(i % 40);
    if (i % 5 == 0)
      in.push_back(Kernel(i, "", full.c_str(), "nqn.host:b"));
    else
      in.push_back(Kernel(i, disk.c_str(), i % 2 ? "nqn.sub:a" : "nqn.sub:b", ""));
    if (i % 5 == 0) std::memcpy(in.back().nqn, full.data(), full.size());  // no NUL
    ASSERT_TRUE(spool.Add(in.back()));
  }
  std::vector<nvmeof_record> out;
  EXPECT_EQ(spool.ForEach([&](const nvmeof_record& r) { out.push_back(r); }), "");
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(std::memcmp(&in[i], &out[i], sizeof in[i]), 0) << "record " << i;
}

// A node's few names are written once: 97 bytes a record, a sixth of the kernel's 568.
TEST_F(RecordSpoolTest, NamesAreKeptOnce) {
  RecordSpool spool;
  ASSERT_EQ(spool.Open(dir_.string()), "");
  const int n = 10000;
  for (int i = 0; i < n; ++i) {
    const auto cid = static_cast<std::uint16_t>(i);
    ASSERT_TRUE(spool.Add(i % 3 == 2 ? Kernel(cid, "", "nqn.sub:a", "nqn.host:a")
                                     : Kernel(cid, i % 3 ? "nvme1c1n1" : "nvme0c0n1",
                                              i % 3 ? "nqn.sub:b" : "nqn.sub:a", "nqn.host:a")));
  }
  EXPECT_EQ(spool.ForEach([](const nvmeof_record&) {}), "");
  // Six names, each 7 bytes and its text: two disks, two subsystems, a host NQN, the target's "".
  EXPECT_EQ(spool.bytes(), 97U * n + 6 * 7 + 9 + 9 + 9 + 9 + 10 + 0) << spool.bytes();
}

TEST_F(RecordSpoolTest, EmptySpoolHandsNothing) {
  RecordSpool spool;
  ASSERT_EQ(spool.Open(dir_.string()), "");
  int n = 0;
  EXPECT_EQ(spool.ForEach([&](const nvmeof_record&) { ++n; }), "");
  EXPECT_EQ(n, 0);
}

TEST_F(RecordSpoolTest, LeavesNoFileBehind) {
  {
    RecordSpool spool;
    ASSERT_EQ(spool.Open(dir_.string()), "");
    ASSERT_TRUE(spool.Add(Kernel(1, "nvme0n1", "nqn.a", "nqn.h")));
    EXPECT_EQ(spool.ForEach([](const nvmeof_record&) {}), "");
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

TEST_F(RecordSpoolTest, ADirectoryItCannotWriteIsSaidByName) {
  RecordSpool spool;
  const std::string e = spool.Open((dir_ / "missing").string());
  EXPECT_NE(e.find("cannot create a spool file in"), std::string::npos) << e;
  EXPECT_NE(e.find("ENOENT"), std::string::npos) << e;
}

// Where the output's directory cannot hold it (a FIFO in a read-only directory, say), the
// spool goes to $TMPDIR, and leaves nothing there either.
TEST_F(RecordSpoolTest, FallsBackToTmpdir) {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", dir_.c_str(), 1);
  {
    RecordSpool spool;
    EXPECT_EQ(spool.OpenBeside((dir_ / "missing" / "out.jsonl").string()), "");
    ASSERT_TRUE(spool.Add(Kernel(1, "nvme0n1", "nqn.a", "nqn.h")));
    int n = 0;
    EXPECT_EQ(spool.ForEach([&](const nvmeof_record&) { ++n; }), "");
    EXPECT_EQ(n, 1);
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
  ::setenv("TMPDIR", (dir_ / "missing-too").c_str(), 1);
  RecordSpool spool;
  const std::string e = spool.OpenBeside((dir_ / "missing" / "out.jsonl").string());
  EXPECT_NE(e.find("missing-too"), std::string::npos) << e;
  if (old)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
}

}  // namespace
}  // namespace nvmeof::profile
