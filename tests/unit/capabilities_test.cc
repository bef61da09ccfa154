// base/capabilities.h: names by number and the Cap* lines of a status file, as the
// privilege drop and the BPF availability check read them.
#include "base/capabilities.h"

#include <gtest/gtest.h>

namespace nvmeof {
namespace {

constexpr const char* kStatus =
    "Name:\tnvmeof_exporter\n"
    "CapInh:\t0000000000000000\n"
    "CapPrm:\t000001ffffffffff\n"
    "CapEff:\t000000c000001000\n"
    "CapBnd:\t000001ffffffffff\n"
    "CapAmb:\t0000000000000000\n";

TEST(Capabilities, ParsesEachLineByItsKey) {
  EXPECT_EQ(ParseCapLine(kStatus, "CapPrm"), CapMask{0x1ffffffffff});
  EXPECT_EQ(ParseCapLine(kStatus, "CapEff"),
            CapBit(kCapBpf) | CapBit(kCapPerfmon) | CapBit(kCapNetAdmin));
  EXPECT_EQ(ParseCapLine(kStatus, "CapAmb"), CapMask{0});
  EXPECT_EQ(ParseCapLine(kStatus, "Cap"), std::nullopt);  // a prefix of a key is not a key
}

TEST(Capabilities, MissingOrMalformedIsNullopt) {
  EXPECT_EQ(ParseCapLine("Name:\tx\n", "CapEff"), std::nullopt);
  EXPECT_EQ(ParseCapLine("CapEff:\t\n", "CapEff"), std::nullopt);
  EXPECT_EQ(ParseCapLine("CapEff:\tzz\n", "CapEff"), std::nullopt);
  EXPECT_EQ(ParseCapLine("CapEff:\t-1\n", "CapEff"), std::nullopt);
  EXPECT_EQ(ParseCapLine("CapEff:\t10000000000000000\n", "CapEff"), std::nullopt);  // 17 digits
  EXPECT_EQ(ParseCapLine("CapEff:\tffffffffffffffff", "CapEff"), ~CapMask{0});      // no newline
}

TEST(Capabilities, NamesAsCapsh) {
  EXPECT_EQ(CapNames(CapBit(kCapSysAdmin) | CapBit(kCapSetpcap)), "cap_setpcap,cap_sys_admin");
  EXPECT_EQ(CapNames(CapBit(40)), "cap_checkpoint_restore");
  EXPECT_EQ(CapNames(CapBit(63)), "cap_63");
}

}  // namespace
}  // namespace nvmeof
