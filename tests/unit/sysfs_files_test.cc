#include "readers/sysfs_files.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <thread>
#include <utility>

#include "base/files.h"

namespace nvmeof {
namespace {

class SysfsFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sysfsfiles.XXXXXX";
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
  // Puts each (name, text), in order.
  void Put(std::initializer_list<std::pair<std::string, std::string>> files) {
    for (const auto& [name, text] : files) Put(name, text);
  }
  // Replaces the file by rename (a new inode), as fixture_traffic.py does.
  void Replace(const std::string& name, const std::string& text) {
    Put(".new", text);
    ASSERT_EQ(rename((dir_ + "/.new").c_str(), (dir_ + "/" + name).c_str()), 0);
  }
  std::optional<std::uint64_t> Value(SysfsFiles& files, const std::string& name) {
    const auto got = files.ReadCounters(dir_);
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
// kept descriptors of the second scrape.
TEST_F(SysfsFilesTest, CountersSameAsListDirAndReadU64) {
  Put({{"b_plain", "12345\n"},
       {"a_max", "18446744073709551615\n"},
       {"c_na", "N/A (no PMA)\n"},
       {"d_empty", ""},
       {"e_padded", "7" + std::string(300, ' ') + "\n"},          // longer than one read
       {"f_long", std::string(200, '1') + "\n"},                  // too many digits for a u64
       {"g_huge", std::string(70 * 1024, '0')}});                 // over ReadFile's 64 KiB
  ASSERT_EQ(system(("mkdir " + dir_ + "/h_subdir").c_str()), 0);  // unreadable as a file
  SysfsFiles files;
  for (int round = 0; round < 2; ++round) {
    const auto got = files.ReadCounters(dir_).value();
    const auto names = ListDir(dir_);
    ASSERT_EQ(got.size(), names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      EXPECT_EQ(got[i].name, names[i]);
      EXPECT_EQ(got[i].value, ReadU64(dir_ + "/" + names[i])) << names[i] << " round " << round;
    }
    EXPECT_EQ(got[0].value, UINT64_MAX);
    EXPECT_EQ(got[1].value, 12345u);
    EXPECT_EQ(got[4].value, 7u);
    EXPECT_FALSE(got[6].value);
    files.Sweep();
  }
  // The subdirectory's read fails, so it is not kept; the other 7 are, and the directory.
  EXPECT_EQ(files.open_files(), 8u);
  EXPECT_FALSE(files.ReadCounters(dir_ + "/missing"));
  EXPECT_FALSE(files.ReadCounters(dir_ + "/b_plain"));  // a file, not a directory
  EXPECT_EQ(files.open_files(), 8u);
}

// Attributes and listings read as ReadFile and ListDir do, kept open between scrapes.
TEST_F(SysfsFilesTest, AttributesAndListingsSameAsReadFileAndListDir) {
  Put({{"node_type", "1: CA\n"},
       {"fw_ver", "16.35.2000  \n"},
       {"empty", ""},
       {"huge", std::string(70 * 1024, 'x')}});
  ASSERT_EQ(mkdir((dir_ + "/ports").c_str(), 0700), 0);
  SysfsFiles files;
  for (int round = 0; round < 2; ++round) {
    for (const char* name : {"node_type", "fw_ver", "empty", "huge", "absent", "ports"}) {
      EXPECT_EQ(files.ReadAttribute(dir_, name), ReadFile(dir_ + "/" + name))
          << name << " round " << round;
    }
    EXPECT_EQ(files.List(dir_), ListDir(dir_));
    EXPECT_EQ(files.List(dir_ + "/ports"), std::vector<std::string>{});
    EXPECT_EQ(files.List(dir_ + "/absent"), std::vector<std::string>{});
    EXPECT_FALSE(files.ReadAttribute(dir_ + "/absent", "fw_ver"));
    files.Sweep();
  }
  EXPECT_EQ(files.ReadAttribute(dir_, "node_type"), "1: CA");
  // Two directories and the four files read (the subdirectory is not kept).
  EXPECT_EQ(files.open_files(), 6u);
}

TEST_F(SysfsFilesTest, KeptFilesSeeNewValuesAndReplacedFiles) {
  Put({{"rx", "1\n"}, {"tx", "2\n"}});
  SysfsFiles files;
  EXPECT_EQ(Value(files, "rx"), 1u);
  EXPECT_EQ(files.open_files(), 3u);
  Put("rx", "1000\n");  // same inode: the kept fd reads the new value from offset 0
  EXPECT_EQ(Value(files, "rx"), 1000u);
  files.Sweep();
  Replace("tx", "3\n");  // new inode: reopened at the next scrape, not the old file's 2
  EXPECT_EQ(Value(files, "tx"), 3u);
  EXPECT_EQ(files.ReadAttribute(dir_, "tx"), "3");
  EXPECT_EQ(files.open_files(), 3u);
}

TEST_F(SysfsFilesTest, FilesThatComeAndGo) {
  Put({{"a", "1\n"}, {"b", "2\n"}});
  SysfsFiles files;
  ASSERT_EQ(files.ReadCounters(dir_)->size(), 2u);
  files.Sweep();
  ASSERT_EQ(unlink((dir_ + "/a").c_str()), 0);
  Put("c", "3\n");
  const auto got = files.ReadCounters(dir_).value();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].name, "b");
  EXPECT_EQ(got[1].name, "c");
  EXPECT_EQ(got[1].value, 3u);
  EXPECT_EQ(files.open_files(), 3u);
  EXPECT_FALSE(files.ReadAttribute(dir_, "a"));
  files.Sweep();
  // The whole directory goes (a device removed): nothing, and nothing stays open.
  ASSERT_EQ(system(("rm -r " + dir_ + "/*").c_str()), 0);
  ASSERT_EQ(rmdir(dir_.c_str()), 0);
  EXPECT_FALSE(files.ReadCounters(dir_));
  EXPECT_EQ(files.open_files(), 0u);
  files.Sweep();
  // ... and comes back (the device re-created): a new directory, read afresh.
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  Put("d", "4\n");
  EXPECT_EQ(Value(files, "d"), 4u);
  EXPECT_EQ(files.open_files(), 2u);
}

// A directory replaced under its path by rename (as a fixture tree is rewritten), with the old
// one still alive elsewhere: the kept directory fd is not listed, the path's new one is.
TEST_F(SysfsFilesTest, DirectoryReplacedByRename) {
  ASSERT_EQ(mkdir((dir_ + "/port").c_str(), 0700), 0);
  Put("port/a", "1\n");
  SysfsFiles files;
  ASSERT_EQ(files.ReadCounters(dir_ + "/port")->size(), 1u);
  files.Sweep();
  ASSERT_EQ(mkdir((dir_ + "/new").c_str(), 0700), 0);
  Put("new/b", "2\n");
  ASSERT_EQ(rename((dir_ + "/port").c_str(), (dir_ + "/old").c_str()), 0);
  ASSERT_EQ(rename((dir_ + "/new").c_str(), (dir_ + "/port").c_str()), 0);
  const auto got = files.ReadCounters(dir_ + "/port").value();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].name, "b");
  EXPECT_EQ(got[0].value, 2u);
  EXPECT_EQ(files.open_files(), 2u);
}

// A directory is listed once per scrape at most, and for counters and attributes not again
// while its stat is unchanged, older than the racy window (here 0 s; the filesystem's clock
// ticks are waited out) and the listing younger than max_age. List lists every scrape.
TEST_F(SysfsFilesTest, ListedAgainOnlyWhenChanged) {
  Put("a", "1\n");
  SysfsFiles files(SysfsFiles::kMaxOpenFiles, std::chrono::nanoseconds(0));
  const auto tick = std::chrono::milliseconds(50);  // over a coarse clock tick (HZ=100: 10 ms)
  std::this_thread::sleep_for(tick);
  EXPECT_EQ(Value(files, "a"), 1u);
  EXPECT_EQ(files.ReadAttribute(dir_, "a"), "1");
  EXPECT_EQ(files.listings(), 1u);
  files.Sweep();
  Put("a", "2\n");  // in place: no change to the directory, and the kept fd reads the value
  EXPECT_EQ(Value(files, "a"), 2u);
  EXPECT_EQ(files.listings(), 1u);
  EXPECT_EQ(files.List(dir_).size(), 1u);  // afresh, once per scrape
  EXPECT_EQ(files.List(dir_).size(), 1u);
  EXPECT_EQ(files.listings(), 2u);
  files.Sweep();
  std::this_thread::sleep_for(tick);
  Put("b", "3\n");  // a new file changes the directory's mtime: listed again
  EXPECT_EQ(Value(files, "b"), 3u);
  EXPECT_EQ(files.listings(), 3u);
  files.Sweep();
  std::this_thread::sleep_for(tick);
  Replace("a", "4\n");
  EXPECT_EQ(Value(files, "a"), 4u);
  EXPECT_EQ(files.listings(), 4u);
  // With the default window a directory changed within the last 2 s is listed every scrape;
  // with max_age 0, every directory is.
  SysfsFiles fresh;
  SysfsFiles aged(SysfsFiles::kMaxOpenFiles, std::chrono::nanoseconds(0),
                  std::chrono::nanoseconds(0));
  std::this_thread::sleep_for(tick);
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(Value(fresh, "a"), 4u);
    EXPECT_EQ(Value(aged, "a"), 4u);
    fresh.Sweep();
    aged.Sweep();
  }
  EXPECT_EQ(fresh.listings(), 3u);
  EXPECT_EQ(aged.listings(), 3u);
}

// An attribute the kept listing does not have is read all the same (sysfs does not always move
// a directory's mtime when an entry is added), and not kept until a listing has it.
TEST_F(SysfsFilesTest, AttributeNotInTheListingIsReadAnyway) {
  Put("a", "1\n");
  SysfsFiles files(SysfsFiles::kMaxOpenFiles, std::chrono::nanoseconds(0));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(files.ReadAttribute(dir_, "a"), "1");
  Put("late", "7\n");  // the same scrape: the directory is not looked at again
  EXPECT_EQ(files.ReadAttribute(dir_, "late"), "7");
  EXPECT_EQ(files.open_files(), 2u);  // the directory and "a"
  EXPECT_FALSE(files.ReadAttribute(dir_, "absent"));
}

TEST_F(SysfsFilesTest, SweepClosesDirectoriesNotRead) {
  Put("a", "1\n");
  SysfsFiles files;
  files.ReadCounters(dir_);
  files.Sweep();  // read in this round: kept, the file and its directory
  EXPECT_EQ(files.open_files(), 2u);
  files.Sweep();  // not read in this round: closed
  EXPECT_EQ(files.open_files(), 0u);
  EXPECT_EQ(Value(files, "a"), 1u);
}

// Past the bound, files are still read, with open/read/close each time. The directory's own
// fd counts towards it.
TEST_F(SysfsFilesTest, BoundedOpenFiles) {
  for (int i = 0; i < 5; ++i) Put("c" + std::to_string(i), std::to_string(i) + "\n");
  SysfsFiles files(3);
  for (int round = 0; round < 2; ++round) {
    const auto got = files.ReadCounters(dir_).value();
    ASSERT_EQ(got.size(), 5u);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(got[i].value, static_cast<std::uint64_t>(i));
    EXPECT_EQ(files.open_files(), 3u);
    files.Sweep();
  }
  Put("c4", "44\n");
  EXPECT_EQ(Value(files, "c4"), 44u);
}

}  // namespace
}  // namespace nvmeof
