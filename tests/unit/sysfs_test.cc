#include "collectors/sysfs.h"

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
