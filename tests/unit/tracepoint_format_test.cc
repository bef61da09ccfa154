#include "readers/tracepoint_format.h"

#include <gtest/gtest.h>

namespace nvmeof {
namespace {

// Debian's 5.10.0-32 format files, saved by the VM suite's smoke scenario (format-*.txt), as a
// sysfs root: tests/fixtures/tracefs-5.10/kernel/tracing/events/nvmet/<event>/format.
TEST(TracepointFormat, NvmetRecordsOf510) {
  const std::string root = std::string(NVMEOF_FIXTURES) + "/tracefs-5.10";
  std::string error;
  const auto done = ReadTracepointFormat(root, "nvmet/nvmet_req_complete", &error);
  ASSERT_EQ(done.size(), 10u) << error;
  EXPECT_EQ(done.at("ctrl").offset, 8);
  EXPECT_EQ(done.at("ctrl").size, 8);
  EXPECT_EQ(done.at("disk").offset, 16);  // an array, by its name
  EXPECT_EQ(done.at("disk").size, 32);
  EXPECT_EQ(done.at("qid").offset, 48);
  EXPECT_EQ(done.at("cid").size, 4);  // an int here, a u16 in init's record
  EXPECT_EQ(done.at("status").offset, 64);
  const auto init = ReadTracepointFormat(root, "nvmet/nvmet_req_init", &error);
  ASSERT_EQ(init.size(), 15u) << error;
  EXPECT_EQ(init.at("ctrl").offset, 16);
  EXPECT_EQ(init.at("cid").size, 2);
  EXPECT_EQ(init.at("opcode").offset, 62);
  EXPECT_EQ(init.at("cdw10").offset, 80);
  EXPECT_EQ(init.at("cdw10").size, 24);
  EXPECT_TRUE(error.empty()) << error;
}

// The slots of a program's rodata get their field's offset and size; a field or an event the
// kernel lacks leaves its slot 0, which the prober then names for the hook (Variant::fields).
TEST(TracepointFormat, SlotsFromTheFormatFiles) {
  const std::string root = std::string(NVMEOF_FIXTURES) + "/tracefs-5.10";
  volatile nvmeof_tp_field status{}, cdw10{}, missing{}, no_event{};
  const TracepointSlot slots[] = {
      {"nvmet/nvmet_req_complete", "status", &status},
      {"nvmet/nvmet_req_init", "cdw10", &cdw10},
      {"nvmet/nvmet_req_init", "no_such_field", &missing},
      {"nvmet/no_such_event", "qid", &no_event},
  };
  SetTracepointFields(root, slots);
  EXPECT_EQ(status.offset, 64);
  EXPECT_EQ(status.size, 2);
  EXPECT_EQ(cdw10.offset, 80);
  EXPECT_EQ(cdw10.size, 24);
  EXPECT_EQ(missing.offset + missing.size, 0);
  EXPECT_EQ(no_event.offset + no_event.size, 0);
}

TEST(TracepointFormat, OddLinesAreSkipped) {
  const auto f = ParseTracepointFormat(
      "\tfield:int qid;\toffset:48;\tsize:4;\tsigned:1;\n"
      "\tfield:int broken;\toffset:x;\tsize:4;\n"    // not a number
      "\tfield:int huge;\toffset:70000;\tsize:4;\n"  // past 16 bits
      "\tfield:;\toffset:1;\tsize:1;\n"              // no name
      "\tfield:int nosize;\toffset:4;\n"             // no size
      "garbage without fields\n"
      "\tfield:u8 last;\toffset:60;\tsize:1;\tsigned:0;");  // no final newline
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f.at("qid").offset, 48);
  EXPECT_EQ(f.at("last").size, 1);
}

TEST(TracepointFormat, MissingFileSaysWhy) {
  std::string error;
  EXPECT_TRUE(ReadTracepointFormat("/nonexistent", "nvmet/nvmet_req_init", &error).empty());
  EXPECT_NE(error.find("nvmet/nvmet_req_init"), std::string::npos) << error;
}

}  // namespace
}  // namespace nvmeof
