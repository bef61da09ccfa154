// Connection lifecycle: decoding of bpf/lifecycle.bpf.c's counter keys into bounded labels,
// and the families EmitLifecycle writes for a snapshot.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "collectors/bpf_series.h"
#include "loader/bpf_options.h"
#include "loader/lifecycle.h"
#include "readers/tracepoint_format.h"
#include "tests/unit/sink_query.h"

namespace nvmeof {
namespace {

nvmeof_lc_key Key(std::uint32_t kind, std::uint32_t a, std::int32_t b, std::uint32_t c,
                  const std::string& name = "") {
  nvmeof_lc_key k{};
  k.kind = kind;
  k.a = a;
  k.b = b;
  k.c = c;
  std::memcpy(k.name, name.data(), std::min(name.size(), sizeof(k.name) - 1));
  return k;
}

TEST(BpfLifecycleNames, CmEventsStatesAndStatusesAreBounded) {
  EXPECT_EQ(CmEventName(0), "addr_resolved");
  EXPECT_EQ(CmEventName(8), "rejected");
  EXPECT_EQ(CmEventName(15), "timewait_exit");
  EXPECT_EQ(CmEventName(16), "other");
  EXPECT_EQ(CmEventStatus(9, 0), "ok");
  EXPECT_EQ(CmEventStatus(8, 28), "consumer_defined");
  EXPECT_EQ(CmEventStatus(8, 8), "invalid_service_id");
  EXPECT_EQ(CmEventStatus(8, 1000), "other");
  EXPECT_EQ(CmEventStatus(7, -110), "ETIMEDOUT");
  EXPECT_EQ(CmEventStatus(8, -111), "ECONNREFUSED");  // iWARP rejects carry an errno
  EXPECT_EQ(CmEventStatus(6, -4095), "other");
  EXPECT_EQ(CmEventStatus(6, 5), "other");
  EXPECT_EQ(CtrlStateName(1), "live");
  EXPECT_EQ(CtrlStateName(5), "deleting_noio");
  EXPECT_EQ(CtrlStateName(7), "unknown");
  EXPECT_EQ(ErrnoLabel(-111), "ECONNREFUSED");
  EXPECT_EQ(ErrnoLabel(-9999), "other");
}

TEST(BpfLifecycleNames, ConnectStatusTellsInvalidSubsystemByItsAttribute) {
  EXPECT_EQ(ConnectStatusName(0, 0), "success");
  EXPECT_EQ(ConnectStatusName(0x184, 0), "invalid_host");
  EXPECT_EQ(ConnectStatusName(0x181, 0), "controller_busy");
  // IPO_IATTR_CONNECT_DATA(subsysnqn) = 1 << 16 | offsetof(nvmf_connect_data, subsysnqn)
  EXPECT_EQ(ConnectStatusName(0x182, (1U << 16) | 256), "invalid_subsystem");
  EXPECT_EQ(ConnectStatusName(0x182, (1U << 16) | 512), "invalid_parameters");  // hostnqn
  EXPECT_EQ(ConnectStatusName(0x7ff, 0), "other");
}

TEST(BpfLifecycleConnectTarget, FromOptionStringAndFromReconnectFields) {
  auto t = ParseConnectTarget(Key(NVMEOF_LC_CONNECT_FAIL, NVMEOF_LC_OPTS_STRING, -111, 0,
                                  "nqn=nqn.x:y,transport=tcp,traddr=10.0.0.1,trsvcid=4420,"
                                  "hostnqn=nqn.h\n"));
  EXPECT_EQ(t.transport, "tcp");
  EXPECT_EQ(t.traddr, "10.0.0.1");
  EXPECT_EQ(t.trsvcid, "4420");
  nvmeof_lc_key f = Key(NVMEOF_LC_CONNECT_FAIL, NVMEOF_LC_OPTS_FIELDS, 0x182, 0, "rdma");
  std::strcpy(f.name + NVMEOF_LC_TRADDR_AT, "fe80::1%eth0");
  std::strcpy(f.name + NVMEOF_LC_TRSVCID_AT, "4420");
  t = ParseConnectTarget(f);
  EXPECT_EQ(t.transport, "rdma");
  EXPECT_EQ(t.traddr, "fe80::1%eth0");
  EXPECT_EQ(t.trsvcid, "4420");
  // Not a plain address: bounded.
  t = ParseConnectTarget(
      Key(NVMEOF_LC_CONNECT_FAIL, 0, -5, 0, "transport=weird,traddr=a\"b{c},trsvcid=1"));
  EXPECT_EQ(t.transport, "other");
  EXPECT_EQ(t.traddr, "other");
}

TEST(BpfLifecycleFolder, KeepsTheFirstHostNqnsForLifeAndFoldsTheRest) {
  HostnqnFolder f(2);
  EXPECT_EQ(f.Label("h1"), "h1");
  EXPECT_EQ(f.Label("h2"), "h2");
  EXPECT_EQ(f.Label("h3"), "other");
  EXPECT_EQ(f.Label("h3"), "other");
  EXPECT_EQ(f.Label("h1"), "h1");
  EXPECT_EQ(f.folded(), 1U);
  EXPECT_EQ(f.Label("h4"), "other");
  EXPECT_EQ(f.folded(), 2U);
}

std::vector<std::string> Names(const std::vector<HookSpec>& hooks) {
  std::vector<std::string> names;
  for (const auto& h : hooks) names.emplace_back(h.name);
  return names;
}

// The classic tracepoint hooks stand in for the CO-RE ones only where the module has no BTF:
// elsewhere they are neither planned nor reported.
TEST(BpfLifecycleHooks, ClassicTracepointHooksOnlyWithoutModuleBtf) {
  // None for the host's keep-alives: nvme_core's tracepoints fire per I/O command.
  EXPECT_EQ(Names(LifecycleModuleHooks("nvme_core", false)),
            Names(LifecycleModuleHooks("nvme_core", true)));
  const auto nvmet = Names(LifecycleModuleHooks("nvmet", false));
  for (const char* h : {"nvmet_req_init_connect", "nvmet_req_complete_connect",
                        "nvmet_execute_admin_connect_return"}) {
    EXPECT_EQ(std::count(nvmet.begin(), nvmet.end(), h), 1) << h;
  }
  EXPECT_EQ(Names(LifecycleModuleHooks("nvmet", true)).size(), nvmet.size() - 2);
  EXPECT_EQ(Names(LifecycleModuleHooks("nvme_fabrics", false)),
            Names(LifecycleModuleHooks("nvme_fabrics", true)));
}

// Every field a classic tracepoint program reads is in Debian 5.10.0-32's records (the format
// files the lifecycle VM scenario saved there: tests/fixtures/tracefs-5.10), so none of those
// hooks is refused there for a missing field.
TEST(BpfLifecycleHooks, ClassicTracepointFieldsAreIn510Records) {
  const std::string root = std::string(NVMEOF_FIXTURES) + "/tracefs-5.10";
  int hooks = 0;
  for (const auto& h : LifecycleHooks()) {
    if (!h.without_module_btf) continue;
    ++hooks;
    ASSERT_EQ(h.variants.size(), 1U) << h.name;
    const Variant& v = h.variants[0];
    EXPECT_EQ(v.mechanism, Mechanism::kTracepoint) << h.name;
    std::string error;
    const auto format = ReadTracepointFormat(root, v.target, &error);
    ASSERT_FALSE(format.empty()) << error;
    for (std::string_view rest = v.fields; !rest.empty();) {
      const auto comma = rest.find(',');
      const std::string field(rest.substr(0, comma));
      rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
      EXPECT_TRUE(format.count(field)) << v.target << " has no field " << field;
    }
  }
  EXPECT_EQ(hooks, 2);  // the target's Connects (not the host's keep-alives: lifecycle_tp.bpf.h)
}

TEST(BpfLifecycleEmit, EveryFamilyWithBoundedLabels) {
  LifecycleSnapshot snap;
  snap.counts = {
      {Key(NVMEOF_LC_CM_EVENT, 8, 28, 1, "rxe0"), 2},
      {Key(NVMEOF_LC_CM_EVENT, 9, 0, 1, "rxe0"), 5},
      {Key(NVMEOF_LC_STATE, 3, 1, 2), 1},  // nvme3 live -> resetting
      {Key(NVMEOF_LC_STATE, 3, 9, 1), 1},  // an unknown old state
      {Key(NVMEOF_LC_CONNECT_FAIL, NVMEOF_LC_OPTS_STRING, 0x184, 0,
           "nqn=a,transport=tcp,traddr=10.0.0.1,trsvcid=4420"),
       1},
      {Key(NVMEOF_LC_CONNECT_FAIL, NVMEOF_LC_OPTS_STRING, -111, 0,
           "nqn=b,transport=tcp,traddr=10.0.0.1,trsvcid=4420"),
       4},
      {Key(NVMEOF_LC_CONNECT_FAIL, NVMEOF_LC_OPTS_STRING, -111, 0,
           "nqn=c,transport=tcp,traddr=10.0.0.1,trsvcid=4420"),
       1},  // another NQN, same target address: summed
      {Key(NVMEOF_LC_KA_FAIL, 3, 0, 0), 1},
      {Key(NVMEOF_LC_TARGET_CONNECT, NVMEOF_LC_QUEUE_ADMIN, 0, 0, "nqn.s1"), 3},
      {Key(NVMEOF_LC_TARGET_CONNECT, NVMEOF_LC_QUEUE_ADMIN, 0x182, (1U << 16) | 256, "nqn.gone"),
       1},
      {Key(NVMEOF_LC_TARGET_CONNECT, NVMEOF_LC_QUEUE_IO, 0, 0), 2},  // no NQN: 5.10's records
      {Key(NVMEOF_LC_KA_EXPIRY, 0, 0, 0, "nqn.s1"), 1},
      {Key(99, 0, 0, 0), 1},  // a kind this build does not know: skipped
  };
  nvmeof_lc_ctrl c{};
  std::strcpy(c.nqn, "nqn.s1");
  // In map order, not age order: h1's controller is the oldest, so h1 keeps its name.
  for (auto [h, t] : {std::pair{"h3", 30}, {"h2", 20}, {"h1", 10}, {"h1", 40}}) {
    std::strcpy(c.hostnqn, h);
    c.created_ns = t;
    snap.ctrls.push_back(c);
  }
  snap.lost[NVMEOF_LC_LOST_COUNTS] = 7;
  HostnqnFolder folder(1);
  MetricSink sink;
  EmitLifecycle(
      snap, folder, [](const std::string& nqn) { return nqn == "nqn.s1"; }, sink);

  EXPECT_EQ(Value(sink, "nvmeof_rdma_cm_events_total",
                  {{"event", "rejected"},
                   {"status", "consumer_defined"},
                   {"rdma_device", "rxe0"},
                   {"rdma_port", "1"}}),
            2);
  EXPECT_EQ(
      Value(sink, "nvmeof_rdma_cm_events_total", {{"event", "established"}, {"status", "ok"}}), 5);
  EXPECT_EQ(Value(sink, "nvmeof_controller_state_transitions_total",
                  {{"controller", "nvme3"}, {"from", "live"}, {"to", "resetting"}}),
            1);
  EXPECT_EQ(Value(sink, "nvmeof_controller_state_transitions_total", {{"from", "unknown"}}), 1);
  EXPECT_EQ(Value(sink, "nvmeof_controller_connect_failures_total",
                  {{"transport", "tcp"},
                   {"traddr", "10.0.0.1"},
                   {"trsvcid", "4420"},
                   {"error", "ECONNREFUSED"}}),
            5);
  EXPECT_EQ(Value(sink, "nvmeof_controller_connect_failures_total", {{"error", "invalid_host"}}),
            1);
  EXPECT_EQ(Value(sink, "nvmeof_controller_keep_alive_failures_total", {{"controller", "nvme3"}}),
            1);
  EXPECT_EQ(Value(sink, "nvmeof_target_connects_total",
                  {{"nqn", "nqn.s1"}, {"queue", "admin"}, {"result", "success"}}),
            3);
  EXPECT_EQ(Value(sink, "nvmeof_target_connects_total",
                  {{"nqn", "other"}, {"result", "invalid_subsystem"}}),
            1);
  EXPECT_EQ(Value(sink, "nvmeof_target_connects_total",
                  {{"nqn", ""}, {"queue", "io"}, {"result", "success"}}),
            2);  // not known, which is not "other" (no such subsystem here)
  EXPECT_EQ(Value(sink, "nvmeof_target_keep_alive_expiries_total", {{"nqn", "nqn.s1"}}), 1);
  EXPECT_EQ(Value(sink, "nvmeof_target_controllers", {{"nqn", "nqn.s1"}, {"hostnqn", "h1"}}), 2);
  EXPECT_EQ(Value(sink, "nvmeof_target_controllers", {{"nqn", "nqn.s1"}, {"hostnqn", "other"}}), 2);
  EXPECT_EQ(Count(sink, "nvmeof_target_controllers"), 2);
  EXPECT_EQ(Value(sink, "nvmeof_exporter_bpf_hostnqn_folded_total"), 2);
  EXPECT_EQ(
      Value(sink, "nvmeof_exporter_bpf_lifecycle_lost_events_total", {{"reason", "counts_full"}}),
      7);
}

TEST(BpfLifecycleNames, AnaStatesAreBounded) {
  EXPECT_EQ(AnaStateName(1), "optimized");
  EXPECT_EQ(AnaStateName(2), "non-optimized");
  EXPECT_EQ(AnaStateName(3), "inaccessible");
  EXPECT_EQ(AnaStateName(4), "persistent-loss");
  EXPECT_EQ(AnaStateName(0x0f), "change");
  EXPECT_EQ(AnaStateName(0), "other");
  EXPECT_EQ(AnaStateName(5), "other");
}

// Failovers per path (controller) and ANA state changes per controller, group and new state:
// the keys of two controllers of one subsystem, one of which lost its group for a while.
TEST(BpfLifecycleEmit, FailoversAndAnaTransitions) {
  LifecycleSnapshot snap;
  snap.counts = {
      {Key(NVMEOF_LC_FAILOVER, 2, 0, 0), 37}, {Key(NVMEOF_LC_FAILOVER, 1, 0, 0), 1},
      {Key(NVMEOF_LC_ANA, 1, 1, 1), 1},     // nvme1 group 1 optimized (at connect)
      {Key(NVMEOF_LC_ANA, 2, 1, 1), 2},     // nvme2: at connect and back
      {Key(NVMEOF_LC_ANA, 2, 1, 3), 1},     // nvme2 group 1 inaccessible
      {Key(NVMEOF_LC_ANA, 2, 7, 0x0e), 1},  // a reserved state value: bounded
      {Key(NVMEOF_LC_ANA, 2, 8, 0x0f), 1},  // change
  };
  HostnqnFolder folder(1);
  MetricSink sink;
  EmitLifecycle(
      snap, folder, [](const std::string&) { return false; }, sink);
  EXPECT_EQ(Value(sink, "nvmeof_path_failovers_total", {{"controller", "nvme2"}}), 37);
  EXPECT_EQ(Value(sink, "nvmeof_path_failovers_total", {{"controller", "nvme1"}}), 1);
  EXPECT_EQ(Count(sink, "nvmeof_path_failovers_total"), 2);
  EXPECT_EQ(Value(sink, "nvmeof_path_ana_transitions_total",
                  {{"controller", "nvme2"}, {"ana_group", "1"}, {"state", "optimized"}}),
            2);
  EXPECT_EQ(Value(sink, "nvmeof_path_ana_transitions_total",
                  {{"controller", "nvme2"}, {"ana_group", "1"}, {"state", "inaccessible"}}),
            1);
  EXPECT_EQ(Value(sink, "nvmeof_path_ana_transitions_total",
                  {{"controller", "nvme1"}, {"ana_group", "1"}, {"state", "optimized"}}),
            1);
  EXPECT_EQ(
      Value(sink, "nvmeof_path_ana_transitions_total", {{"ana_group", "7"}, {"state", "other"}}),
      1);
  EXPECT_EQ(
      Value(sink, "nvmeof_path_ana_transitions_total", {{"ana_group", "8"}, {"state", "change"}}),
      1);
  EXPECT_EQ(Count(sink, "nvmeof_path_ana_transitions_total"), 5);
}

// I/O without a usable path per head, and its stalls as one histogram per head: bucket a holds
// stalls of at most 2^a ms, the last one longer ones; the sum is in microseconds. Time in the
// ANA change state per controller and group, in microseconds too.
TEST(BpfLifecycleEmit, NoUsablePathStallsAndAnaChange) {
  LifecycleSnapshot snap;
  snap.counts = {
      {Key(NVMEOF_LC_NO_PATH, 0, 0, 0, "nvme0n1"), 412},
      {Key(NVMEOF_LC_NO_PATH, 0, 0, 0, "nvme1n2"), 3},
      {Key(NVMEOF_LC_STALL, 0, 0, 0, "nvme0n1"), 2},                        // <= 1 ms
      {Key(NVMEOF_LC_STALL, 12, 0, 0, "nvme0n1"), 1},                       // <= 4.096 s
      {Key(NVMEOF_LC_STALL, NVMEOF_LC_STALL_BUCKETS, 0, 0, "nvme0n1"), 1},  // > 131 s
      {Key(NVMEOF_LC_STALL_SUM_US, 0, 0, 0, "nvme0n1"), 140000900},
      {Key(NVMEOF_LC_STALL, NVMEOF_LC_STALL_BUCKETS + 1, 0, 0, "nvme9n9"), 5},  // out of range
      {Key(NVMEOF_LC_ANA_CHANGE_US, 2, 1, 0), 2500000},
  };
  HostnqnFolder folder(1);
  MetricSink sink;
  EmitLifecycle(
      snap, folder, [](const std::string&) { return false; }, sink);
  EXPECT_EQ(Value(sink, "nvmeof_namespace_no_usable_path_total", {{"nvme_namespace", "nvme0n1"}}),
            412);
  EXPECT_EQ(Value(sink, "nvmeof_namespace_no_usable_path_total", {{"nvme_namespace", "nvme1n2"}}),
            3);
  auto h = Select(sink, "nvmeof_namespace_failover_stall_seconds");
  ASSERT_EQ(h.size(), 1U);  // nvme9n9's key is out of range: no series
  EXPECT_EQ(Label(*h[0], "nvme_namespace"), "nvme0n1");
  const auto& hist = h[0]->histogram;
  EXPECT_EQ(hist.sample_count, 4U);
  EXPECT_DOUBLE_EQ(hist.sample_sum, 140.0009);
  ASSERT_EQ(hist.bucket.size(), static_cast<size_t>(NVMEOF_LC_STALL_BUCKETS) + 1);  // and +Inf
  EXPECT_DOUBLE_EQ(hist.bucket[0].upper_bound, 0.001);
  EXPECT_EQ(hist.bucket[0].cumulative_count, 2U);
  EXPECT_DOUBLE_EQ(hist.bucket[12].upper_bound, 4.096);
  EXPECT_EQ(hist.bucket[11].cumulative_count, 2U);
  EXPECT_EQ(hist.bucket[12].cumulative_count, 3U);
  EXPECT_DOUBLE_EQ(hist.bucket[NVMEOF_LC_STALL_BUCKETS - 1].upper_bound, 131.072);
  EXPECT_EQ(hist.bucket[NVMEOF_LC_STALL_BUCKETS - 1].cumulative_count, 3U);
  EXPECT_DOUBLE_EQ(Value(sink, "nvmeof_path_ana_change_seconds_total",
                         {{"controller", "nvme2"}, {"ana_group", "1"}}),
                   2.5);
}

// The multipath hooks are nvme_core's, optional like every lifecycle hook, kprobe first.
TEST(BpfLifecycleHooks, MultipathHooksAreOptionalKprobeFirst) {
  const auto core = LifecycleModuleHooks("nvme_core", true);
  for (const char* name :
       {"nvme_failover_req", "nvme_update_ana_state", "__nvme_find_path", "__nvme_find_path_return",
        "nvme_requeue_work", "nvme_requeue_work_return"}) {
    auto it = std::find_if(core.begin(), core.end(), [&](const auto& h) { return h.name == name; });
    ASSERT_NE(it, core.end()) << name;
    EXPECT_FALSE(it->required) << name;
    EXPECT_EQ(it->gate, "nvme_core") << name;
    ASSERT_EQ(it->variants.size(), 2U) << name;
    EXPECT_EQ(it->variants[0].mechanism, Mechanism::kKprobe) << name;
    EXPECT_EQ(it->variants[1].mechanism, Mechanism::kFentry) << name;
  }
}

TEST(BpfLifecycleOptions, HostnqnLimitFromYaml) {
  BpfOptions o;
  std::string error;
  EXPECT_EQ(o.hostnqn_limit, 64U);
  ASSERT_TRUE(ParseBpfOptions(YAML::Load("hostnqn_limit: 2"), &o, &error)) << error;
  EXPECT_EQ(o.hostnqn_limit, 2U);
  EXPECT_FALSE(ParseBpfOptions(YAML::Load("hostnqn_limit: many"), &o, &error));
  EXPECT_NE(error.find("bpf.hostnqn_limit"), std::string::npos) << error;
}

}  // namespace
}  // namespace nvmeof
