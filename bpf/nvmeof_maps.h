/* Map keys and values of nvmeof.bpf.c, shared with the exporter (C and C++).
 *
 * A command is timed at a fixed list of points (below). Each stage is the span between two
 * consecutive points that the command actually passed; the exporter names the span from its
 * (from, to) pair, so a point whose hook is missing merges its two neighbouring stages into one
 * wider, differently named stage instead of giving a wrong one (loader/nvmeof.cc). */
#ifndef NVMEOF_BPF_NVMEOF_MAPS_H_
#define NVMEOF_BPF_NVMEOF_MAPS_H_

#include "classes.h"
#include "hist.h"
#include "tp_field.h"

enum nvmeof_role {
  NVMEOF_ROLE_HOST = 0,
  NVMEOF_ROLE_TARGET = 1,
};

/* Host (initiator) points of one request, in time order. */
enum nvmeof_host_point {
  NVMEOF_HP_ALLOC = 0,    /* rq->start_time_ns: request allocated (needs iostats) */
  NVMEOF_HP_SETUP = 1,    /* nvme:nvme_setup_cmd: the driver builds the command */
  NVMEOF_HP_POSTED = 2,   /* nvme_rdma_post_send / nvme_tcp_try_send_cmd_pdu */
  NVMEOF_HP_SENT = 3,     /* nvme_rdma_send_done: the capsule's send completion (RDMA) */
  NVMEOF_HP_RESPONSE = 4, /* blk_mq_complete_request_remote: response received */
  NVMEOF_HP_COMPLETE = 5, /* nvme:nvme_complete_rq */
  NVMEOF_HP_END = 6,      /* block:block_rq_complete: the request ended */
  NVMEOF_HP_COUNT = 7,
};

/* Target points of one command, in time order. */
enum nvmeof_target_point {
  NVMEOF_TP_RECV = 0, /* nvmet_rdma_recv_done / nvmet_tcp_data_ready: capsule received */
  NVMEOF_TP_INIT = 1, /* nvmet:nvmet_req_init */
  NVMEOF_TP_DATA = 2, /* nvmet_rdma_read_data_done: host data pulled (writes beyond inline) */
  NVMEOF_TP_EXEC = 3, /* nvmet_bdev_execute_rw / nvmet_file_execute_rw: backing I/O issued */
  NVMEOF_TP_DONE = 4, /* nvmet:nvmet_req_complete */
  NVMEOF_TP_SENT = 5, /* nvmet_rdma_release_rsp / nvmet_try_send_response: response out */
  NVMEOF_TP_COUNT = 6,
};

#define NVMEOF_POINTS 7 /* max of the two */

/* What a series entry holds. */
enum nvmeof_kind {
  NVMEOF_KIND_STAGE = 0,    /* one stage: span (from, to) */
  NVMEOF_KIND_TOTAL = 1,    /* end to end on this node: first point -> last point */
  NVMEOF_KIND_COMMANDS = 2, /* exact command count (every command, not sampled) in count */
};

/* How much identity a stage span keeps (bpf.stage_detail). The end-to-end time and the exact
 * command count always keep the full identity: disk (host) or subsystem and port (target). */
enum nvmeof_detail {
  NVMEOF_DETAIL_NAMESPACE = 0,  /* per disk / per (subsystem, port) */
  NVMEOF_DETAIL_CONTROLLER = 1, /* host: per controller instance (id); target: per subsystem */
};

/* Transport types as in the NVMe-oF spec (NVMF_TRTYPE_*); the host's come from sysfs. */
#define NVMEOF_TRTYPE_RDMA 1
#define NVMEOF_TRTYPE_FC 2
#define NVMEOF_TRTYPE_TCP 3
#define NVMEOF_TRTYPE_LOOP 254
/* Not in what the hook saw (the classic tracepoints of 5.10): the exporter looks it up */
#define NVMEOF_TRTYPE_UNKNOWN 255

/* Size classes of the optional `size` label (NVMEOF_SIZE_CLASSES): classes.h. */

struct nvmeof_series {
  /* host: struct gendisk address, or the controller instance (nvme<N>) at controller detail;
   * target: struct nvmet_subsys address */
  unsigned long long id;
  unsigned short port;  /* target: nvmet port id; host: 0 */
  unsigned char role;   /* enum nvmeof_role */
  unsigned char op;     /* enum nvmeof_block_op (block_maps.h) */
  unsigned char size;   /* size class + 1; 0 when size classes are off */
  unsigned char trtype; /* target: NVMEOF_TRTYPE_*; host: 0 */
  unsigned char kind;   /* enum nvmeof_kind */
  unsigned char from;   /* first point of the span */
  unsigned char to;     /* last point of the span */
  unsigned char detail; /* enum nvmeof_detail; stage spans only */
  /* nv_paths keys (kind NVMEOF_KIND_STAGE, from = to = 0): bit i set for each point i the
   * command passed; 0 in every other key */
  unsigned char points;
  unsigned char pad[5];
};

/* A series' key in nv_names, and what the exporter forgets by (Forget): its id, with bit 0 set
 * for a target's. A host disk and a target subsystem are both kmalloc-1k objects (776 and 768
 * bytes on 6.12), so a subsystem made at a freed disk's address would otherwise take the disk's
 * name, and forgetting the disk would drop the subsystem's counts. Both are aligned addresses:
 * bit 0 is free. */
static inline unsigned long long nvmeof_name_key(unsigned long long id, unsigned int role) {
  return id | (role == NVMEOF_ROLE_TARGET ? 1ULL : 0ULL);
}

struct nvmeof_hist {
  unsigned long long count;
  unsigned long long sum_ns;
  unsigned long long buckets[NVMEOF_HIST_BUCKETS];
};

/* The stages of the sampled commands of one series that passed the same points (the key's
 * `points`), in one entry: stage[i - 1] is the span that ends at point i and starts at the
 * previous point in `points`. One lookup per command finds them all; the loader turns each used
 * slot into the (from, to) stage series the exporter serves. */
struct nvmeof_path_hists {
  struct nvmeof_hist stage[NVMEOF_POINTS - 1];
  /* The same commands' end to end, first to last point of `points` (kind NVMEOF_KIND_TOTAL),
   * where it is served with the stages' identity (total_in_paths, nvmeof_inflight.bpf.h); else
   * it is in nv_hists and this one stays empty. */
  struct nvmeof_hist total;
};

/* One sampled command in flight: its points (0 = not passed) and its series identity. */
struct nvmeof_inflight {
  unsigned long long ts[NVMEOF_POINTS];
  struct nvmeof_series series;
  /* host, at controller detail: the controller instance + 1 that keys its stage spans;
   * 0: they stay keyed by series.id (namespace detail, or a disk name that is not nvme's) */
  unsigned int stage_id;
  /* host: its disk's block series are not served (NVMEOF_CTRL_UNTIMED_BLOCK), so the block
   * program that ends it times nothing more for it (block.bpf.c) */
  unsigned int untimed_block;
  /* tells two commands of one reused request apart (nvmeof.bpf.c, struct cmd) */
  unsigned long long tag;
  /* The command as on the wire, for its flight record (struct nvmeof_flight_record): host at
   * nvme_complete_rq, target at nvmet_req_init and nvmet_req_complete. */
  unsigned long long slba;
  unsigned long long ctrl; /* target: struct nvmet_ctrl address (its host NQN: nv_hostnqns) */
  unsigned int bytes;
  unsigned short cid, nlb, qid, cntlid;
  unsigned char opcode;
  unsigned char pad[7];
};

/* One sampled command, written to the ring buffer nv_flight when it ends on this node: the
 * exporter's flight recorder (loader/flight_recorder.h). Names are looked up by address:
 * `series` in nv_names (host disk, target subsystem NQN), `ctrl` in nv_hostnqns. */
struct nvmeof_flight_record {
  unsigned long long ts[NVMEOF_POINTS]; /* as nvmeof_inflight.ts */
  unsigned long long series;            /* nvmeof_series.id: gendisk / nvmet_subsys address */
  unsigned long long ctrl;              /* target: nvmet_ctrl address; host: 0 */
  unsigned long long slba;
  unsigned int bytes;
  unsigned short cid, nlb, qid, cntlid;
  unsigned short port;  /* target: nvmet port id */
  unsigned char role;   /* enum nvmeof_role */
  unsigned char opcode; /* NVMe I/O opcode (0x02 read, 0x01 write, ...) */
  unsigned char trtype; /* target: NVMEOF_TRTYPE_*; host: 0 (the exporter knows the disk's) */
  unsigned char pad[3];
};

/* The kernel ring buffer of flight records (bytes, a power of 2): at 1 in 32 and 100k commands
 * a second, about 330 KB/s, read every second, or sooner once half full (about 10,000 records):
 * at 1 in 1 and 100k commands a second, every 0.1 s. */
#define NVMEOF_FLIGHT_RING_BYTES (2u << 20)
#define NVMEOF_FLIGHT_WAKE_BYTES (NVMEOF_FLIGHT_RING_BYTES / 2)

/* Per-CPU event counters (index into the `nv_counters` array map). */
enum nvmeof_counter {
  NVMEOF_NCTR_INFLIGHT_FULL = 0,  /* a sampled command found no room in the in-flight table */
  NVMEOF_NCTR_MAP_FULL = 1,       /* a new series did not fit into nv_hists or nv_paths */
  NVMEOF_NCTR_SAMPLED_HOST = 2,   /* host commands picked for timing (at setup) */
  NVMEOF_NCTR_SAMPLED_TARGET = 3, /* target commands picked for timing (at init) */
  NVMEOF_NCTR_FLIGHT_LOST = 4,    /* a flight record found no room in nv_flight */
  NVMEOF_NCTR_COUNT = 5,
};

/* Runtime switches the exporter writes (it attaches hooks of modules loaded later). */
struct nvmeof_config {
  /* Bit (1 << trtype) set: a response-sent hook is attached for that transport, so target
   * commands end at NVMEOF_TP_SENT; otherwise at NVMEOF_TP_DONE. */
  unsigned int target_sent_hooked;
  unsigned int pad;
};

/* The in-flight table: NVMEOF_INFLIGHT_MAX sampled commands in sets of NVMEOF_CMD_WAYS, found
 * by a hash of the command's address. A way is claimed with a compare-and-swap of its `id` and
 * freed by swapping 0 in: no lock and no allocation per command (a hash map update and delete
 * cost about as much as all the other work on a sampled command). */
#define NVMEOF_INFLIGHT_MAX 16384
#define NVMEOF_CMD_WAYS 4
#define NVMEOF_CMD_SET_BITS 12
#define NVMEOF_CMD_SETS (1U << NVMEOF_CMD_SET_BITS) /* * WAYS = NVMEOF_INFLIGHT_MAX */

struct nvmeof_cmd_way {
  unsigned long long id; /* struct request / nvmet_req address; 0: free */
  struct nvmeof_inflight e;
};

struct nvmeof_cmd_set {
  struct nvmeof_cmd_way way[NVMEOF_CMD_WAYS];
};
/* Set by the exporter in an nv_ctrl value (host disk -> controller instance + 1): the collector
 * leaves out this disk's block series (an NVMe-oF namespace's disk: collectors/bpf.cc), so the
 * block programs need not time its sampled requests; its commands are timed as NVMe-oF ones. */
#define NVMEOF_CTRL_UNTIMED_BLOCK (1U << 31)

/* Default entries of nv_hists, nv_commands, nv_names and nv_ctrl; the exporter sets nv_hists
 * from bpf.map_memory_max and the CPU count at load (loader/nvmeof_loader.cc). */
#define NVMEOF_SERIES_MAX 4096
#define NVMEOF_NQN_SIZE 224 /* NVMF_NQN_SIZE (223) + NUL; also holds a disk name (32) */

/* The controller instance in a host disk's name: nvme<subsys>c<ctrl>n<ns> (a multipath path
 * disk) or nvme<ctrl>n<ns> (no native multipath); -1 if it is neither. */
static inline int nvmeof_ctrl_instance(const char* name) {
  int a = 0, b = 0, after_c = 0, digits = 0, i;
  if (name[0] != 'n' || name[1] != 'v' || name[2] != 'm' || name[3] != 'e') return -1;
#ifdef __bpf__
#pragma unroll
#endif
  for (i = 4; i < 24; i++) {
    char c = name[i];
    if (c >= '0' && c <= '9') {
      if (after_c)
        b = b * 10 + (c - '0');
      else
        a = a * 10 + (c - '0');
      if (a > 0xffff || b > 0xffff) return -1;
      digits++;
    } else if (c == 'c' && !after_c && digits) {
      after_c = 1;
      digits = 0;
    } else {
      break;
    }
  }
  if (!digits) return -1;
  return after_c ? b : a;
}

#endif /* NVMEOF_BPF_NVMEOF_MAPS_H_ */
