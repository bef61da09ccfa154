// The `bpf` collector: eBPF stage latency histograms (block layer, NVMe-oF host and target), plus
// the facts of the attach layer as self-metrics, and the `nvmeof_exporter probe` subcommand.
#pragma once

#include <memory>
#include <ostream>

#include "base/collector.h"
#include "loader/block.h"
#include "loader/bpf_options.h"
#include "loader/lifecycle.h"
#include "loader/nvmeof.h"

namespace nvmeof {

struct CollectorOptions;  // collectors/collector_options.h

// Loads and attaches at construction. When BPF cannot be used (no CAP_BPF/CAP_PERFMON, no
// BTF, lockdown, a required hook missing) it logs why once and exports
// nvmeof_exporter_bpf_available{reason} 0; it never fails construction or exits.
// Destruction detaches and unloads everything.
std::unique_ptr<Collector> NewBpfCollector(const CollectorOptions& options);

// For tests: a collector over an already made load (fake BlockSource).
std::unique_ptr<Collector> NewBpfCollectorFrom(const CollectorOptions& options, BlockLoad load,
                                               NvmeofLoad nvmeof = {},
                                               LifecycleLoad lifecycle = {});

// `nvmeof_exporter probe`: per hook ok/missing, the mechanism it would use, required or not.
// Returns the process exit status: 0 when every required hook can attach, else 1.
int RunProbe(const CollectorOptions& options, std::ostream& out);

}  // namespace nvmeof
