// What every collector is built from: a leaf header that collectors include (the registry
// includes it too, never the other way round).
#pragma once

#include <memory>

#include "base/collector.h"
#include "collectors/kubernetes.h"
#include "collectors/nvme_host.h"
#include "collectors/nvmet.h"
#include "collectors/pfc.h"
#include "collectors/rdma.h"
#include "collectors/rdma_netlink.h"
#include "collectors/tcp.h"
#include "loader/bpf_options.h"
#include "loader/flight_recorder.h"

namespace nvmeof {

// The filesystem roots and each collector's own options
// (declared next to it; the config section of each is named after the collector).
struct CollectorOptions {
  Paths paths;
  RdmaOptions rdma;  // rdma.devices also selects the devices of pfc and rdma_netlink
  PfcOptions pfc;
  NvmeHostOptions nvme_host;
  NvmetOptions nvmet;
  BpfOptions bpf;
  RdmaNetlinkOptions rdma_netlink;
  TcpOptions tcp;
  KubernetesOptions kubernetes;
  // The flight recorder the bpf collector fills and takes exemplars from, shared with the web
  // server's /api/v1/commands; null when it is off (bpf.flight_recorder_max_bytes: 0).
  std::shared_ptr<FlightRecorder> flight;
};

}  // namespace nvmeof
