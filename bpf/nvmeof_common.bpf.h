/* Pure helpers of the NVMe-oF programs, shared by nvmeof.bpf.c and record.bpf.c: how a hook
 * gets from its arguments to the command's key, disk, op and size class. One home for them, so
 * the two objects cannot drift apart on how they find the same command (libbpf-tools style:
 * BPF objects share code through headers). Nothing here owns a map: a helper that needs one
 * takes it as an argument. Include after vmlinux.h and the libbpf headers. */
#ifndef NVMEOF_BPF_NVMEOF_COMMON_BPF_H_
#define NVMEOF_BPF_NVMEOF_COMMON_BPF_H_

#include "classes.h"
#include "core_shims.h"
#include "nvmeof_maps.h"
#include "sample.h"

/* A pointer argument as a plain number. In tp_btf/fentry programs the verifier types pointer
 * arguments and forbids arithmetic or hashing on them, but lets a privileged program subtract
 * one pointer from another: `p` less the address of the map `m` is a number, and adding that
 * address back as a number gives p's. The address comes once through the map's memory (a store
 * turns a pointer into a number: a slot of the per-CPU array `m` at `scratch`) and stays in
 * `*base`, so a call costs 4 instructions, not a map lookup. raw_tp/kprobe arguments are
 * numbers already. */
static __always_inline __u64 nvmeof_as_id(void* m, __u32 scratch, __u64* base, const void* p,
                                          bool direct) {
  volatile __u64* s;
  __u64 off, b;
  if (!direct) return (__u64)p;
  off = (__u64)p - (__u64)m;
  barrier_var(off); /* the compiler may not fold m into the addition below: number - pointer */
  b = *base;
  if (!b) {
    s = bpf_map_lookup_elem(m, &scratch);
    if (!s) return 0;
    *s = (__u64)m;
    b = *s;
    *base = b;
  }
  return off + b;
}

/* The wire fields of an NVMe command (NVMe base spec: opcode byte 0, command id bytes 2-3,
 * SLBA in CDW10-11 at byte 40, NLB in CDW12 bits 15:0 at byte 48). */
struct nvmeof_wire {
  __u64 slba;
  __u16 cid, nlb;
  __u8 opcode;
};

struct nvmeof_wire_raw {
  __u8 opcode, flags;
  __u16 cid;
  __u32 nsid;
  __u64 cdw2_3, mptr, prp1, prp2, slba;
  __u16 nlb;
} __attribute__((packed));

/* direct: `cmd` came from a BTF-typed chain (tp_btf/fentry: plain loads); else one
 * bpf_probe_read_kernel of the 50 bytes (one helper call costs less than several small ones). */
static __always_inline bool nvmeof_read_wire(const void* cmd, struct nvmeof_wire* w, bool direct) {
  struct nvmeof_wire_raw raw;
  if (!cmd) return false;
  if (direct) {
    /* Loads within struct nvme_command's members (common: opcode, command_id, cdw10-12):
     * 6.1's verifier rejects a load across two members (SLBA spans cdw10 and cdw11). */
    w->opcode = *(const __u8*)cmd;
    w->cid = *(const __u16*)((const char*)cmd + 2);
    w->slba = *(const __u32*)((const char*)cmd + 40) |
              (__u64) * (const __u32*)((const char*)cmd + 44) << 32;
    w->nlb = *(const __u16*)((const char*)cmd + 48);
    return true;
  }
  if (bpf_probe_read_kernel(&raw, sizeof(raw), cmd)) return false;
  w->opcode = raw.opcode;
  w->cid = raw.cid;
  w->slba = raw.slba;
  w->nlb = raw.nlb;
  return true;
}

/* Target: is the command of `req` one of the 1 in N? By its wire fields (read into `w`),
 * so both objects and the host side of record.bpf.c pick the same commands. */
static __always_inline bool nvmeof_target_pick(struct nvmet_req___nv* req, bool direct, __u64 limit,
                                               struct nvmeof_wire* w) {
  if (!req) return false;
  return nvmeof_read_wire(NVMEOF_READ(direct, req, cmd), w, direct) &&
         nvmeof_picked_cmd(w->slba, w->cid, limit);
}

/* The struct request of a driver's per-request data (blk_mq_rq_to_pdu() places it right after
 * struct request). */
static __always_inline __u64 rq_from_pdu(__u64 pdu) {
  return pdu ? pdu - bpf_core_type_size(struct request) : 0;
}

/* bpf_rdonly_cast (6.2+; the verifier turns it into a move): a number as a read-only typed
 * pointer, whose fields are then plain loads (one that faults reads 0), where a number needs a
 * bpf_probe_read_kernel call per field. vmlinux types
 * only. Weak: where the kernel lacks it, the programs that call it are not loaded (the hook
 * table's variants name it: loader/nvmeof.cc), and libbpf leaves the call unresolved. */
extern void* bpf_rdonly_cast(const void* obj, __u32 btf_id) __ksym __weak;

static __always_inline struct request* rq_cast(__u64 rq) {
  return (struct request*)bpf_rdonly_cast((const void*)rq, bpf_core_type_id_kernel(struct request));
}

/* The request's disk. Keyed by its address, not its dev_t: NVMe multipath path disks
 * (nvme0c1n1) are hidden and have no dev_t. */
static __always_inline __u64 rq_disk(struct request* rq) {
  if (bpf_core_field_exists(((struct request___old*)0)->rq_disk)) {
    return (__u64)BPF_CORE_READ((struct request___old*)rq, rq_disk);
  }
  return (__u64)BPF_CORE_READ(rq, q, disk);
}

/* rq_disk as a number, with plain loads where `rq` is BTF-typed (`direct`) on kernels without
 * rq->rq_disk; the disk pointer becomes a number through map `m` (nvmeof_as_id). */
static __always_inline __u64 nvmeof_rq_disk(struct request* rq, bool direct, void* m, __u32 scratch,
                                            __u64* base) {
  if (direct && !bpf_core_field_exists(((struct request___old*)0)->rq_disk))
    return nvmeof_as_id(m, scratch, base, rq->q->disk, true);
  return rq_disk(rq);
}

/* The host request whose command capsule a send completion belongs to: the completion's ib_cqe
 * is the one embedded in the driver's request (nvme_rdma_request.sqe.cqe). */
static __always_inline __u64 rdma_sent_rq_of(__u64 cqe) {
  __u64 req = cqe - bpf_core_field_offset(struct nvme_rdma_qe___nv, cqe) -
              bpf_core_field_offset(struct nvme_rdma_request___nv, sqe);
  return cqe ? rq_from_pdu(req) : 0;
}

static __always_inline __u64 rdma_sent_rq(struct ib_wc___nv* wc) {
  return rdma_sent_rq_of((__u64)BPF_CORE_READ(wc, wr_cqe));
}

/* The nvmet_req inside an nvmet_rdma_rsp, from the completion's ib_cqe at `cqe_offset`. */
static __always_inline __u64 rdma_rsp_req(struct ib_wc___nv* wc, __u64 cqe_offset) {
  __u64 cqe = (__u64)BPF_CORE_READ(wc, wr_cqe);
  if (!cqe) return 0;
  return cqe - cqe_offset + bpf_core_field_offset(struct nvmet_rdma_rsp___nv, req);
}

/* RDMA: the target's receive stash `s` (a per-CPU slot of the object's counters): the receive
 * hook puts the time the capsule's receive completion is handled there, and nvmet_req_init(),
 * which follows on this CPU in the same call, takes it (and clears it for the next capsule). */
static __always_inline void recv_stash(__u64* s) {
  if (s) *s = bpf_ktime_get_ns();
}

static __always_inline __u64 recv_take(__u64* s) {
  __u64 recv = 0;
  if (s) {
    recv = *s;
    *s = 0;
  }
  return recv;
}

/* TCP: the time data last arrived on a queue's socket and no command took it yet, per queue (a
 * slot of an array map, found by a hash of the queue's nvmet_sq address): the socket's
 * data_ready callback runs in softirq, on another CPU than the queue's io_work, so the per-CPU
 * stash above cannot carry it. Two queues whose hashes meet share a slot: the later arrival
 * takes it, and the other queue's next command starts at init. */
struct nvmeof_arrival {
  __u64 sq; /* struct nvmet_sq address */
  __u64 ts;
};
#define NVMEOF_ARRIVAL_BITS 12

static __always_inline struct nvmeof_arrival* arrival_slot(void* arrivals, __u64 sq) {
  __u32 i = (__u32)((sq * 0x9E3779B97F4A7C15ULL) >> (64 - NVMEOF_ARRIVAL_BITS));
  return bpf_map_lookup_elem(arrivals, &i);
}

/* Data arrived on the socket of the queue at `sq`: the first arrival no command took yet. */
static __always_inline void arrival_stash(void* arrivals, __u64 sq) {
  struct nvmeof_arrival* a = arrival_slot(arrivals, sq);
  if (!a || (a->sq == sq && a->ts)) return;
  a->ts = bpf_ktime_get_ns();
  a->sq = sq;
}

/* nvmet_req_init() of a command of the queue at `sq` takes its arrival (0: none). */
static __always_inline __u64 arrival_take(void* arrivals, __u64 sq) {
  struct nvmeof_arrival* a = arrival_slot(arrivals, sq);
  __u64 ts;
  if (!a || a->sq != sq) return 0;
  ts = a->ts;
  a->ts = 0;
  return ts;
}

/* The taken stash as the command's receive point, or 0: a stash older than a second belongs to
 * a command received without reaching init here. */
static __always_inline __u64 recv_point(__u64 recv, __u64 now) {
  return recv && recv <= now && now - recv < 1000000000ULL ? recv : 0;
}

/* A target I/O command's submission queue and subsystem, and its opcode (0 if unreadable);
 * false for admin commands and commands without a subsystem. direct: as in core_shims.h. */
static __always_inline bool target_io(struct nvmet_req___nv* req, bool direct,
                                      struct nvmet_sq___nv** sq, struct nvmet_subsys___nv** subsys,
                                      __u8* opcode) {
  struct nvmet_ctrl___nv* ctrl;
  void* cmd;
  *sq = NVMEOF_READ(direct, req, sq);
  if (!*sq || NVMEOF_READ(direct, *sq, qid) == 0) return false;
  ctrl = NVMEOF_READ(direct, *sq, ctrl);
  if (!ctrl) return false;
  *subsys = NVMEOF_READ(direct, ctrl, subsys);
  if (!*subsys) return false;
  cmd = NVMEOF_READ(direct, req, cmd);
  if (!cmd) return true;
  if (direct)
    *opcode = *(const __u8*)cmd;
  else
    bpf_probe_read_kernel(opcode, 1, cmd);
  return true;
}

/* Whether a response hook (the target's `sent` point) is attached for transport `trtype`, by
 * the object's config array map `config`: if not, a target command ends at done. */
static __always_inline bool target_sent_hooked(void* config, __u8 trtype) {
  struct nvmeof_config* cfg;
  __u32 zero = 0;
  cfg = bpf_map_lookup_elem(config, &zero);
  return cfg && trtype < 32 && (cfg->target_sent_hooked & (1U << trtype));
}

/* A per-CPU array of `count` event counters, then a scratch slot (map##_SCRATCH, for
 * nvmeof_as_id) and a receive stash (map##_RECV, for recv_stash), with its two accessors:
 * slot_fn(key), the slot's address, and event_fn(which), +1 on a counter. The exporter's and
 * record's objects each declare one. */
#define NVMEOF_COUNTERS(map, count, slot_fn, event_fn)                                         \
  enum { map##_SCRATCH = (count), map##_RECV = (count) + 1 };                                  \
  struct {                                                                                     \
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                                   \
    __uint(max_entries, (count) + 2);                                                          \
    __type(key, __u32);                                                                        \
    __type(value, __u64);                                                                      \
  } map SEC(".maps");                                                                          \
  static __always_inline __u64* slot_fn(__u32 key) { return bpf_map_lookup_elem(&map, &key); } \
  static __always_inline void event_fn(__u32 which) {                                          \
    __u64* c = slot_fn(which);                                                                 \
    if (c) *c += 1;                                                                            \
  }

#endif /* NVMEOF_BPF_NVMEOF_COMMON_BPF_H_ */
