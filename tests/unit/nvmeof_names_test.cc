#include "readers/nvmeof_names.h"

#include <gtest/gtest.h>

#include <string>

#include "loader/nvmeof.h"

namespace nvmeof {
namespace {

// tests/fixtures/configfs: ssd-pool on port 1 (rdma) with /dev/nvme0n1 and /dev/nvme1n1;
// null-test on ports 2 and 3 (both tcp) with /dev/nullb0.
TEST(NvmeofNames, TargetsByDevicePath) {
  const auto t = NvmetTargetsByDevicePath(std::string(NVMEOF_FIXTURES) + "/configfs");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.at("/dev/nvme0n1").nqn, "nqn.2024-06.io.example:ssd-pool");
  EXPECT_EQ(t.at("/dev/nvme0n1").transport, "rdma");
  EXPECT_EQ(t.at("/dev/nvme1n1").nqn, "nqn.2024-06.io.example:ssd-pool");
  EXPECT_EQ(t.at("/dev/nullb0").nqn, "nqn.2024-06.io.example:null-test");
  EXPECT_EQ(t.at("/dev/nullb0").transport, "tcp");  // two ports, one transport
  EXPECT_TRUE(NvmetTargetsByDevicePath("/nonexistent").empty());
}

// A plan whose target init and completion attach through different kinds of program would
// never end a command: the classic tracepoint one is dropped, saying why.
TEST(NvmeofNames, ClassicTracepointsOnlyInPairs) {
  const HookSpec init{
      .name = "nvmet_req_init", .required = true, .module = "nvmet", .variants = {}};
  const HookSpec done{
      .name = "nvmet_req_complete", .required = true, .module = "nvmet", .variants = {}};
  const Variant tp{Mechanism::kTracepoint, "nvmet/nvmet_req_init", "nv_t_init_tp"};
  const Variant btf{Mechanism::kTpBtf, "nvmet_req_complete", "nv_t_done_tp_btf"};
  AttachPlan mixed;
  mixed.hooks = {{&init, tp, {}, ""}, {&done, btf, {}, ""}};
  PairNvmetTracepoints(&mixed);
  EXPECT_FALSE(mixed.hooks[0].chosen);
  ASSERT_EQ(mixed.hooks[0].rejected.size(), 1u);
  EXPECT_EQ(mixed.hooks[0].rejected[0].second, "nvmet_req_complete attaches through tp_btf");
  EXPECT_TRUE(mixed.hooks[1].chosen);
  EXPECT_FALSE(mixed.RequiredOk());  // so the collector says the required hook is missing

  const Variant tp_done{Mechanism::kTracepoint, "nvmet/nvmet_req_complete", "nv_t_done_tp"};
  AttachPlan paired;
  paired.hooks = {{&init, tp, {}, ""}, {&done, tp_done, {}, ""}};
  PairNvmetTracepoints(&paired);
  EXPECT_TRUE(paired.hooks[0].chosen && paired.hooks[1].chosen);
}

}  // namespace
}  // namespace nvmeof
