// `nvmeof_exporter record`: loads bpf/record.bpf.c (live.h) and writes its records to
// record files (record_file.h).
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "base/fd.h"
#include "base/files.h"
#include "base/log.h"
#include "loader/nvmeof.h"
#include "loader/record_file.h"
#include "profile/cli.h"
#include "profile/commands.h"
#include "profile/live.h"
#include "profile/record_spool.h"

namespace nvmeof::profile {

namespace {

struct RecordArgs {
  std::uint64_t sample_every = 1, duration = 0, ring_mib = NVMEOF_RECORD_RING_DEFAULT >> 20;
  std::string role = "host", output;
  BpfOptions bpf;
};

const std::vector<FlagSpec>& RecordFlags() {
  static const std::vector<FlagSpec> flags = {
      {"output", FlagSpec::kValue,
       "Write the records to FILE (required); --role=both writes FILE.host.jsonl and\n"
       "FILE.target.jsonl.",
       'o', "FILE"},
      {"sample-every", FlagSpec::kValue,
       "Record 1 in N commands, chosen on (slba, cid): host and target with the same N keep\n"
       "the same commands. Default 1.",
       's', "N"},
      {"duration", FlagSpec::kValue,
       "Stop after SECONDS, in [1, 86400]. Default: at Ctrl-C or SIGTERM.", 0, "SECONDS"},
      {"role", FlagSpec::kValue, "host, target or both. Default host.", 0, "ROLE"},
      {"ring-size", FlagSpec::kValue,
       "BPF ring buffer in MiB, a power of 2 in [1, 1024]. Default 16.", 0, "MIB"},
      BpfMechanismFlag(),
      kHelpFlag,
  };
  return flags;
}

// -1 to go on; else the exit status (0 after --help, 2 for bad usage).
int ParseRecordArgs(const std::vector<std::string>& args, RecordArgs* r, std::ostream& out,
                    std::ostream& err) {
  static const std::string usage =
      Usage("record -o FILE [flags]",
            "Records sampled NVMe-oF commands, one JSON line each, until --duration or Ctrl-C\n"
            "(root; docs/profiling.md).",
            RecordFlags());
  ParsedArgs p;
  if (int rc = ParseCommand("record", args, RecordFlags(), usage, 0, &p, out, err); rc >= 0)
    return rc;
  std::string e;
  if (!GetSampleEvery(p, &r->sample_every, &e) || !ApplyBpfFlags(p, &r->bpf, &e))
    return UsageError("record", e, err);
  if (auto v = p.Get("duration"); v && !ParseCount(*v, 86400, &r->duration)) {
    return UsageError("record",
                      "--duration: \"" + *v + "\" is not a number of seconds in [1, 86400]", err);
  }
  if (auto v = p.Get("role")) {
    r->role = *v;
    if (r->role != "host" && r->role != "target" && r->role != "both")
      return UsageError("record", "--role: \"" + *v + "\" is not host, target or both", err);
  }
  // A power of 2 (the kernel's rule for ring buffers), 1 MiB to 1 GiB.
  if (auto v = p.Get("ring-size");
      v && (!ParseCount(*v, 1024, &r->ring_mib) || (r->ring_mib & (r->ring_mib - 1)))) {
    return UsageError("record", "--ring-size: \"" + *v + "\" is not a power of 2 MiB in [1, 1024]",
                      err);
  }
  if (auto v = p.Get("output")) r->output = *v;
  if (r->output.empty()) return UsageError("record", "-o FILE is required (see --help)", err);
  return -1;
}

// FILE, or with --role=both FILE.host.jsonl / FILE.target.jsonl.
std::string PathOf(const RecordArgs& r, bool host) {
  if (r.role != "both") return r.output;
  return r.output + (host ? ".host.jsonl" : ".target.jsonl");
}

// What both roles' headers share: this node, its kernel, -s N.
RecordHeader NodeHeader(std::uint64_t sample_every) {
  RecordHeader header;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  header.hostname = host;
  struct utsname u {};
  if (uname(&u) == 0) header.kernel = u.release;
  header.sample_every = sample_every;
  header.clock = "CLOCK_MONOTONIC";
  return header;
}

struct Written {
  std::uint64_t host_records, target_records, dropped;
  std::uint64_t nvme_disk_ios;  // the kernel's own count over the recording (NvmeDiskIos)
};

// I/Os the kernel completed on nvme* disks (/sys/block/*/stat: reads + writes), the witness
// that commands ran while record saw none. Local PCIe drives count too: record sees them as well.
std::uint64_t NvmeDiskIos() {
  std::uint64_t ios = 0;
  for (const auto& disk : ListDir("/sys/block")) {
    if (disk.rfind("nvme", 0) != 0) continue;
    std::istringstream stat(ReadFile("/sys/block/" + disk + "/stat").value_or(""));
    std::uint64_t f[5] = {};
    if (stat >> f[0] >> f[1] >> f[2] >> f[3] >> f[4]) ios += f[0] + f[4];
  }
  return ios;
}

// Ends the files (their end lines, from the kernel's counters `start` to `end`), closes them
// and says what each holds. 0, or 1 on a write error.
int FinishFiles(const std::uint64_t (&start)[NVMEOF_RCTR_COUNT],
                const std::uint64_t (&end)[NVMEOF_RCTR_COUNT], const RecordArgs& r,
                std::ofstream& host_out, std::ofstream& target_out, const Written& w,
                std::ostream& err) {
  const bool want_host = r.role != "target", want_target = r.role != "host";
  const std::uint64_t host_records = w.host_records, target_records = w.target_records;
  const std::string host_path = PathOf(r, true), target_path = PathOf(r, false);
  // Records the kernel could not keep (ring full, in-flight table full, a program run the kernel
  // skipped: recursion), on this node: when both roles are recorded together the count is the
  // node's, written to both files.
  const std::uint64_t lost = end[NVMEOF_RCTR_LOST] - start[NVMEOF_RCTR_LOST] +
                             end[NVMEOF_RCTR_INFLIGHT_FULL] - start[NVMEOF_RCTR_INFLIGHT_FULL];
  const std::uint64_t host_cmds = end[NVMEOF_RCTR_HOST_COMMANDS] - start[NVMEOF_RCTR_HOST_COMMANDS];
  const std::uint64_t target_cmds =
      end[NVMEOF_RCTR_TARGET_COMMANDS] - start[NVMEOF_RCTR_TARGET_COMMANDS];
  if (want_host) WriteEnd(host_records, lost, host_out, host_cmds);
  if (want_target) WriteEnd(target_records, lost, target_out, target_cmds);
  host_out.close();
  target_out.close();
  if ((want_host && !host_out) || (want_target && !target_out)) {
    err << "nvmeof_exporter record: write error\n";
    return 1;
  }
  if (want_host)
    err << "record: " << host_path << ": " << host_records << " host records of " << host_cmds
        << " commands, " << lost << " lost\n";
  if (want_target)
    err << "record: " << target_path << ": " << target_records << " target records of "
        << target_cmds << " commands, " << lost << " lost\n";
  if (w.dropped) err << "record: " << w.dropped << " out-of-order points dropped\n";
  // A recording that holds nothing measured nothing: say so and fail, rather than leave files
  // that read as "no I/O" (hooks can attach and never fire, as on a kernel whose tracepoint
  // moved).
  int rc = 0;
  auto nothing = [&](const char* role, std::uint64_t records, std::uint64_t cmds) {
    if (records > 0) return;
    // 1 in N: none of 8N commands sampled happens by chance with odds below 1 in e^8.
    if (cmds >= 8 * r.sample_every) {
      err << "nvmeof_exporter record: recorded none of " << cmds << " " << role
          << " commands counted (1 in " << r.sample_every << " sampled)\n";
      rc = 1;
    }
  };
  if (want_host) nothing("host", host_records, host_cmds);
  if (want_target) nothing("target", target_records, target_cmds);
  if (host_records + target_records == 0 && rc == 0) {
    err << "nvmeof_exporter record: recorded nothing: ";
    if (want_host && host_cmds == 0 && w.nvme_disk_ios > 0) {
      err << "the kernel completed " << w.nvme_disk_ios
          << " I/Os on nvme disks, but no host hook fired (see the hooks above)\n";
    } else {
      err << "no NVMe-oF command " << (want_host ? "completed on this host" : "reached this target")
          << (want_host && want_target ? " or target" : "") << " while recording\n";
    }
    rc = 1;
  }
  return rc;
}

// Spools the ring's records of the roles asked until --duration, Ctrl-C/SIGTERM or a spool
// write error, then what the ring still holds. False (said on err) on an error.
bool RecordUntilStopped(RecordSource& source, RecordSpool& spool, const RecordArgs& r,
                        std::ostream& err) {
  const bool want_host = r.role != "target", want_target = r.role != "host";
  bool spooled = true;
  auto on_record = [&](const nvmeof_record& k) {
    if (k.role == NVMEOF_ROLE_HOST ? want_host : want_target) spooled = spool.Add(k) && spooled;
  };
  err << "record: recording" << (r.duration ? " for " + std::to_string(r.duration) + " s" : "")
      << " (1 in " << r.sample_every << " commands); Ctrl-C ends\n";
  const auto t0 = std::chrono::steady_clock::now();
  {
    StopSignals signals;
    while (!StopRequested() && spooled) {
      if (r.duration && std::chrono::steady_clock::now() - t0 >= std::chrono::seconds(r.duration))
        break;
      const int n = source.Poll(100, on_record);
      if (n < 0 && n != -EINTR) {
        err << "nvmeof_exporter record: ring buffer: " << ErrnoName(n) << "\n";
        return false;
      }
    }
  }
  while (spooled && source.Poll(0, on_record) > 0) {
  }
  if (!spooled) err << "nvmeof_exporter record: " << spool.error() << "\n";
  return spooled;
}

}  // namespace

int RunRecord(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  RecordArgs r;
  if (int rc = ParseRecordArgs(args, &r, out, err); rc >= 0) return rc;
  const std::uint64_t sample_every = r.sample_every, ring_mib = r.ring_mib;
  const std::string& role = r.role;
  const BpfOptions& bpf = r.bpf;
  const bool want_host = role != "target", want_target = role != "host";
  const std::string host_path = PathOf(r, true), target_path = PathOf(r, false);
  RecordOptions ro;
  ro.sample_every = static_cast<std::uint32_t>(sample_every);
  ro.ring_bytes = static_cast<std::uint32_t>(ring_mib << 20);
  ro.host = want_host;
  ro.target = want_target;
  RecordLoad load = LoadRecord(Paths{}, bpf, ro);
  if (!load.source) {
    err << "nvmeof_exporter record: cannot load the record eBPF programs: "
        << load.availability.reason << ": " << load.availability.detail << "\n";
    return 1;
  }
  for (const auto& h : load.plan.hooks) {
    err << "record: hook " << h.hook->name << ": "
        << (h.chosen ? std::string(MechanismName(h.chosen->mechanism)) : "missing") << "\n";
  }
  // A role whose frame did not attach would record nothing.
  if (auto missing = MissingFrame(load.plan, want_host, want_target); !missing.empty()) {
    err << "nvmeof_exporter record: " << missing
        << " (see the hooks above): nothing could be recorded\n";
    return 1;
  }
  const RecordHeader header = NodeHeader(sample_every);
  std::ofstream host_out, target_out;
  auto open = [&](std::ofstream& f, const std::string& path, const char* file_role, bool is_host) {
    f.open(path, std::ios::binary | std::ios::trunc);
    if (!f) {
      err << "nvmeof_exporter record: cannot write " << path << "\n";
      return false;
    }
    RecordHeader h = header;
    h.role = file_role;
    h.mechanism = FrameMechanism(load.plan, is_host);
    WriteHeader(h, f);
    return true;
  };
  if (want_host && !open(host_out, host_path, "host", true)) return 1;
  if (want_target && !open(target_out, target_path, "target", false)) return 1;

  RecordSpool spool;
  if (auto e = spool.OpenBeside(r.output); !e.empty()) {
    err << "nvmeof_exporter record: " << e << "\n";
    return 1;
  }
  std::uint64_t start[NVMEOF_RCTR_COUNT] = {}, end[NVMEOF_RCTR_COUNT] = {};
  load.source->Counters(start);
  const std::uint64_t ios_before = NvmeDiskIos();
  if (!RecordUntilStopped(*load.source, spool, r, err)) return 1;
  load.source->Counters(end);
  const std::uint64_t nvme_disk_ios = std::max(NvmeDiskIos(), ios_before) - ios_before;
  load.source.reset();  // detaches the programs: the files are written off the measured load

  Written w{0, 0, 0, nvme_disk_ios};
  Record line;  // reused: no allocation per record
  const std::string e = spool.ForEach([&](const nvmeof_record& k) {
    const bool is_host = k.role == NVMEOF_ROLE_HOST;
    FromKernel(k, &line, &w.dropped);
    WriteRecord(line, is_host ? host_out : target_out);
    ++(is_host ? w.host_records : w.target_records);
  });
  if (!e.empty()) {
    err << "nvmeof_exporter record: " << e << "\n";
    return 1;
  }
  return FinishFiles(start, end, r, host_out, target_out, w, err);
}

}  // namespace nvmeof::profile
