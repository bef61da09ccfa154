#include "collectors/base/counter_dirs.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "collectors/base/files.h"

namespace nvmeof {
namespace {

class CounterDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/counterdirs.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { ASSERT_EQ(system(("rm -rf " + dir_).c_str()), 0); }

  // Rewrites the file in place (same inode), as a counter changes in sysfs.
  void Put(const std::string& name, const std::string& text) {
    FILE* f = fopen((dir_ + "/" + name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    fwrite(text.data(), 1, text.size(), f);
    fclose(f);
  }
  // Replaces the file by rename (a new inode), as fixture_traffic.py does.
  void Replace(const std::string& name, const std::string& text) {
    Put(".new", text);
    ASSERT_EQ(rename((dir_ + "/.new").c_str(), (dir_ + "/" + name).c_str()), 0);
  }
  std::optional<std::uint64_t> Value(CounterDirs& dirs, const std::string& name) {
    const auto got = dirs.Read(dir_);
    if (!got) {
      ADD_FAILURE() << dir_ << " not read";
      return std::nullopt;
    }
    for (auto& [n, v] : *got) {
      if (n == name) return v;
    }
    ADD_FAILURE() << name << " not listed";
    return std::nullopt;
  }

  std::string dir_;
};

// Every kind of entry reads as ListDir + ReadU64 would read it, on the first read and on the
// kept descriptors of the second.
TEST_F(CounterDirsTest, SameAsListDirAndReadU64) {
  Put("b_plain", "12345\n");
  Put("a_max", "18446744073709551615\n");
  Put("c_na", "N/A (no PMA)\n");
  Put("d_empty", "");
  Put("e_padded", "7" + std::string(300, ' ') + "\n");            // longer than one read
  Put("f_long", std::string(200, '1') + "\n");                    // too many digits for a u64
  Put("g_huge", std::string(70 * 1024, '0'));                     // over ReadFile's 64 KiB
  ASSERT_EQ(system(("mkdir " + dir_ + "/h_subdir").c_str()), 0);  // unreadable as a file
  CounterDirs dirs;
  for (int round = 0; round < 2; ++round) {
    const auto got = dirs.Read(dir_).value();
    const auto names = ListDir(dir_);
    ASSERT_EQ(got.size(), names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      EXPECT_EQ(got[i].first, names[i]);
      EXPECT_EQ(got[i].second, ReadU64(dir_ + "/" + names[i])) << names[i] << " round " << round;
    }
    EXPECT_EQ(got[0].second, UINT64_MAX);
    EXPECT_EQ(got[1].second, 12345u);
    EXPECT_EQ(got[4].second, 7u);
    EXPECT_FALSE(got[6].second);
  }
  // The subdirectory's read fails, so it is not kept; the other 7 are, and the directory.
  EXPECT_EQ(dirs.open_files(), 8u);
  EXPECT_FALSE(dirs.Read(dir_ + "/missing"));
  EXPECT_FALSE(dirs.Read(dir_ + "/b_plain"));  // a file, not a directory
  EXPECT_EQ(dirs.open_files(), 8u);
}

TEST_F(CounterDirsTest, KeptFilesSeeNewValuesAndReplacedFiles) {
  Put("rx", "1\n");
  Put("tx", "2\n");
  CounterDirs dirs;
  EXPECT_EQ(Value(dirs, "rx"), 1u);
  EXPECT_EQ(dirs.open_files(), 3u);
  Put("rx", "1000\n");  // same inode: the kept fd reads the new value from offset 0
  EXPECT_EQ(Value(dirs, "rx"), 1000u);
  Replace("tx", "3\n");  // new inode: reopened, not the old file's 2
  EXPECT_EQ(Value(dirs, "tx"), 3u);
  EXPECT_EQ(dirs.open_files(), 3u);
}

TEST_F(CounterDirsTest, FilesThatComeAndGo) {
  Put("a", "1\n");
  Put("b", "2\n");
  CounterDirs dirs;
  ASSERT_EQ(dirs.Read(dir_)->size(), 2u);
  ASSERT_EQ(unlink((dir_ + "/a").c_str()), 0);
  Put("c", "3\n");
  const auto got = dirs.Read(dir_).value();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, "b");
  EXPECT_EQ(got[1].first, "c");
  EXPECT_EQ(got[1].second, 3u);
  EXPECT_EQ(dirs.open_files(), 3u);
  // The whole directory goes (a device removed): nothing, and nothing stays open.
  ASSERT_EQ(system(("rm -r " + dir_ + "/*").c_str()), 0);
  ASSERT_EQ(rmdir(dir_.c_str()), 0);
  EXPECT_FALSE(dirs.Read(dir_));
  EXPECT_EQ(dirs.open_files(), 0u);
  // ... and comes back (the device re-created): a new directory, read afresh.
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  Put("d", "4\n");
  EXPECT_EQ(Value(dirs, "d"), 4u);
  EXPECT_EQ(dirs.open_files(), 2u);
}

// A directory replaced under its path by rename (as a fixture tree is rewritten), with the old
// one still alive elsewhere: the kept directory fd is not listed, the path's new one is.
TEST_F(CounterDirsTest, DirectoryReplacedByRename) {
  ASSERT_EQ(mkdir((dir_ + "/port").c_str(), 0700), 0);
  Put("port/a", "1\n");
  CounterDirs dirs;
  ASSERT_EQ(dirs.Read(dir_ + "/port")->size(), 1u);
  ASSERT_EQ(mkdir((dir_ + "/new").c_str(), 0700), 0);
  Put("new/b", "2\n");
  ASSERT_EQ(rename((dir_ + "/port").c_str(), (dir_ + "/old").c_str()), 0);
  ASSERT_EQ(rename((dir_ + "/new").c_str(), (dir_ + "/port").c_str()), 0);
  const auto got = dirs.Read(dir_ + "/port").value();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, "b");
  EXPECT_EQ(got[0].second, 2u);
  EXPECT_EQ(dirs.open_files(), 2u);
}

TEST_F(CounterDirsTest, SweepClosesDirectoriesNotRead) {
  Put("a", "1\n");
  CounterDirs dirs;
  dirs.Read(dir_);
  dirs.Sweep();  // read in this round: kept, the file and its directory
  EXPECT_EQ(dirs.open_files(), 2u);
  dirs.Sweep();  // not read in this round: closed
  EXPECT_EQ(dirs.open_files(), 0u);
  EXPECT_EQ(Value(dirs, "a"), 1u);
}

// Past the bound, files are still read, with open/read/close each time. The directory's own
// fd counts towards it.
TEST_F(CounterDirsTest, BoundedOpenFiles) {
  for (int i = 0; i < 5; ++i) Put("c" + std::to_string(i), std::to_string(i) + "\n");
  CounterDirs dirs(3);
  for (int round = 0; round < 2; ++round) {
    const auto got = dirs.Read(dir_).value();
    ASSERT_EQ(got.size(), 5u);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(got[i].second, static_cast<std::uint64_t>(i));
    EXPECT_EQ(dirs.open_files(), 3u);
  }
  Put("c4", "44\n");
  EXPECT_EQ(Value(dirs, "c4"), 44u);
}

}  // namespace
}  // namespace nvmeof
