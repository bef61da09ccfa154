#include "collectors/base/files.h"
#include "collectors/kernel/rdma_sysfs.h"

#include <gtest/gtest.h>

namespace nvmeof {
namespace {

TEST(ParseU64, AcceptsOnlyPlainDecimal) {
  EXPECT_EQ(ParseU64("0"), 0u);
  EXPECT_EQ(ParseU64("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(ParseU64(""));
  EXPECT_FALSE(ParseU64("N/A (no PMA)"));
  EXPECT_FALSE(ParseU64("-1"));
  EXPECT_FALSE(ParseU64("12 "));
  EXPECT_FALSE(ParseU64("18446744073709551616"));
}

TEST(ReadFile, MissingIsNullopt) { EXPECT_FALSE(ReadFile("/nonexistent/x")); }

// ReadU64Dir gives what ListDir + ReadU64 per entry give, for every kind of entry.
TEST(ReadU64Dir, SameAsListDirAndReadU64) {
  char tmpl[] = "/tmp/readu64dir.XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto put = [&](const std::string& name, const std::string& text) {
    FILE* f = fopen((dir + "/" + name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    fwrite(text.data(), 1, text.size(), f);
    fclose(f);
  };
  put("b_plain", "12345\n");
  put("a_max", "18446744073709551615\n");
  put("c_na", "N/A (no PMA)\n");
  put("d_empty", "");
  put("e_padded", "7" + std::string(300, ' ') + "\n");           // longer than one read
  put("f_long", std::string(200, '1') + "\n");                   // too many digits for a u64
  put("g_huge", std::string(70 * 1024, '0'));                    // over ReadFile's 64 KiB
  ASSERT_EQ(system(("mkdir " + dir + "/h_subdir").c_str()), 0);  // unreadable as a file
  const auto got = ReadU64Dir(dir);
  const auto names = ListDir(dir);
  ASSERT_EQ(got.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(got[i].first, names[i]);
    EXPECT_EQ(got[i].second, ReadU64(dir + "/" + names[i])) << names[i];
  }
  EXPECT_EQ(got[0].second, UINT64_MAX);
  EXPECT_EQ(got[1].second, 12345u);
  EXPECT_EQ(got[4].second, 7u);
  EXPECT_FALSE(got[6].second);
  EXPECT_TRUE(ReadU64Dir(dir + "/missing").empty());
  ASSERT_EQ(system(("rm -r " + dir).c_str()), 0);
}

TEST(NameFilter, IncludeThenExclude) {
  NameFilter f;
  f.include = std::regex("mlx5_.*");
  f.exclude = std::regex("mlx5_1");
  EXPECT_TRUE(f.Allows("mlx5_0"));
  EXPECT_FALSE(f.Allows("mlx5_1"));
  EXPECT_FALSE(f.Allows("rxe0"));
}

}  // namespace
}  // namespace nvmeof

namespace nvmeof {
namespace {

TEST(PortNetdevs, StopsAfterARunOfUnusedSlots) {
  char tmpl[] = "/tmp/portnetdevs.XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string ndevs = dir + "/gid_attrs/ndevs";
  ASSERT_EQ(system(("mkdir -p " + ndevs).c_str()), 0);
  auto put = [&](int slot, const char* text) {
    FILE* f = fopen((ndevs + "/" + std::to_string(slot)).c_str(), "w");
    fputs(text, f);
    fclose(f);
  };
  // Slots 0..99 exist like a real table; 0, 1 and 10 are used (10 sorts before 2 as text).
  for (int i = 0; i < 100; ++i) put(i, "");
  put(0, "eth0\n");
  put(1, "eth0\n");
  put(10, "eth0.100\n");
  put(80, "late0\n");  // after 32 unused slots in a row: not scanned
  EXPECT_EQ(PortNetdevs(dir), (std::vector<std::string>{"eth0", "eth0.100"}));
  EXPECT_TRUE(PortNetdevs(dir + "/missing").empty());
  ASSERT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

}  // namespace
}  // namespace nvmeof
