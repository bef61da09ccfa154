#include "base/files.h"
#include "readers/rdma_sysfs.h"

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
  SysfsFiles files;
  for (int scrape = 0; scrape < 2; ++scrape) {  // the second on kept files
    EXPECT_EQ(PortNetdevs(files, dir), (std::vector<std::string>{"eth0", "eth0.100"}));
    EXPECT_TRUE(PortNetdevs(files, dir + "/missing").empty());
    files.Sweep();
  }
  ASSERT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

}  // namespace
}  // namespace nvmeof
