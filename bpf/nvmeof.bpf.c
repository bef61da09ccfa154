// SPDX-License-Identifier: GPL-2.0
/* NVMe-oF per-stage latency, host and target (stage model: docs/metrics.md "NVMe-oF stages").
 *
 * Each hook stamps one point (nvmeof_maps.h) of a sampled command in the in-flight table; the
 * last hook of the command turns the points it passed into stage spans and an end-to-end time.
 *
 * Per-command cost: every hook first decides "sampled?" from what its own arguments reach
 * (nvmeof_picked, sample.h) and returns at once when not, so an unsampled command touches no map
 * but the per-CPU exact counts (nv_commands). The host hashes the request's start sector and
 * address: every host hook reaches the struct request, function-entry variants included, where the
 * NVMe command is not built yet. The target hashes the command's wire fields (SLBA, command id), as
 * record.bpf.c does on both sides, so with the same N the target times the commands `record`
 * picks. A sampled command costs one in-flight entry, its stamps, and at its end one nv_paths
 * entry (all its stages) plus one end-to-end histogram.
 * The hook programs (every variant: tp_btf, raw_tp, fentry, kprobe) are nvmeof_hooks.bpf.h's,
 * shared with record.bpf.c; this file defines what each hook does here (the on_* handlers).
 * Commands are counted exactly at nvme_complete_rq / nvmet_req_complete; 1 in N is timed.
 *
 * Keys: the host keys a command by its struct request (not the command id, which the target
 * reuses); the target by its struct nvmet_req. Driver hooks get the request from their own
 * objects: blk_mq_rq_to_pdu() places the driver's request right after struct request, and
 * RDMA completions carry an ib_cqe embedded in the driver's request. */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "block_maps.h"
#include "core_shims.h"
#include "count_cache.bpf.h"
#include "hist.h"
#include "nvmeof_common.bpf.h"
#include "nvmeof_inflight.bpf.h"
#include "nvmeof_maps.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the exporter before load. */
/* Derived from bpf.sample_every (sample.h): time 1 in N commands. */
const volatile __u64 sample_every_hash_limit = ~0ULL;
/* The transport tier is on (bpf.transport_stages): only then are the target's receive hooks
 * attached, so only then does on_init take their stashes (two map lookups a command less). */
const volatile bool transport_stages = false;

/* Exact command counts per series (kind NVMEOF_KIND_COMMANDS): apart from nv_hists, so that a
 * count costs 8 bytes per CPU, not a histogram's 1,760. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, NVMEOF_SERIES_MAX);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct nvmeof_series);
  __type(value, __u64);
} nv_commands SEC(".maps");

/* Exact command counts, first stop: a slot per series (count_cache.h); nv_commands takes the
 * series whose slots others own. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, NVMEOF_COUNT_SLOTS);
  __type(key, __u32);
  __type(value, struct nvmeof_count_slot);
} nv_count_slots SEC(".maps");

/* Series name key (nvmeof_name_key) -> name: the host disk's name (gendisk address ->
 * "nvme0c1n1") or the target subsystem's NQN (nvmet_subsys address | 1). Written when a
 * series' first command completes. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u64);
  __type(value, char[NVMEOF_NQN_SIZE]);
} nv_names SEC(".maps");

/* Target controller (struct nvmet_ctrl address) -> its host NQN, for the flight records: written
 * at a controller's first recorded command (an LRU: controllers come and go). */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 1024);
  __type(key, __u64);
  __type(value, char[NVMEOF_NQN_SIZE]);
} nv_hostnqns SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct nvmeof_config);
} nv_config SEC(".maps");

/* TCP: per queue, data arrived and not yet taken by a command (nvmeof_common.bpf.h). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1 << NVMEOF_ARRIVAL_BITS);
  __type(key, __u32);
  __type(value, struct nvmeof_arrival);
} nv_arrivals SEC(".maps");

static __always_inline __u64 as_id(const void* p, bool direct) { return nv_as_id(p, direct); }

/* Host: is request `rq` (address `id`) sampled? direct: as in core_shims.h. */
static __always_inline bool host_sampled(struct request* rq, __u64 id, bool direct, struct cmd* c) {
  c->id = id;
  c->tag = NVMEOF_READ(direct, rq, __sector);
  return id && nvmeof_rq_picked(rq, direct, sample_every_hash_limit);
}

/* Target: is the command of `req` (address `id`) sampled? Its wire fields land in `w`. */
static __always_inline bool target_wire_sampled(struct nvmet_req___nv* req, __u64 id, bool direct,
                                                struct cmd* c, struct nvmeof_wire* w) {
  bool picked = id && nvmeof_target_pick(req, direct, sample_every_hash_limit, w);
  c->id = id;
  c->tag = w->slba ^ (__u64)w->cid << 48;
  return picked;
}

static __always_inline bool target_sampled(struct nvmet_req___nv* req, __u64 id, bool direct,
                                           struct cmd* c) {
  struct nvmeof_wire w = {};
  return target_wire_sampled(req, id, direct, c, &w);
}

/* A series' exact-count key as count_slot's three words (struct nvmeof_series, little endian),
 * built in registers: filling the struct's bytes and loading them back as words cost about 25
 * instructions more per command. */
union count_key {
  struct nvmeof_series s;
  __u64 w[3];
};
_Static_assert(sizeof(struct nvmeof_series) == 24 &&
                   __builtin_offsetof(struct nvmeof_series, port) == 8 &&
                   __builtin_offsetof(struct nvmeof_series, trtype) == 13 &&
                   __builtin_offsetof(struct nvmeof_series, kind) == 14,
               "count_key follows the layout of struct nvmeof_series");

static __always_inline void count_key(union count_key* k, __u64 id, __u16 port, __u8 role, __u8 op,
                                      __u8 size, __u8 trtype) {
  k->w[0] = id;
  k->w[1] = port | (__u64)role << 16 | (__u64)op << 24 | (__u64)size << 32 | (__u64)trtype << 40 |
            (__u64)NVMEOF_KIND_COMMANDS << 48;
  k->w[2] = 0;
}

/* Counts a command of series `k`; on the series' first command also keeps its name, the string
 * at `name`, or with `name_at` the string whose address is stored at `name` (read only then). */
static __always_inline void count_command(union count_key* k, __u64 name, bool name_at) {
  __u64 zero64 = 0, *c, name_key;
  char* dst;
  struct nvmeof_hist* z;
  __u32 zero = 0;
  c = count_slot(&nv_count_slots, k->w, 2); /* w[2] is 0 in every count key (count_key) */
  if (!c) c = bpf_map_lookup_elem(&nv_commands, &k->s);
  if (c) {
    *c += 1;
    if (*c > 1) return; /* a slot's first command names its series too */
  } else {
    bpf_map_update_elem(&nv_commands, &k->s, &zero64, BPF_NOEXIST);
    c = bpf_map_lookup_elem(&nv_commands, &k->s);
    if (!c) {
      nv_event(NVMEOF_NCTR_MAP_FULL);
      return;
    }
    *c += 1;
  }
  if (!name) return;
  /* First command of this series: remember the name behind its id for the labels. */
  if (name_at && bpf_probe_read_kernel(&name, sizeof(name), (void*)name)) return;
  z = bpf_map_lookup_elem(&nv_zero, &zero); /* zeroed memory, larger than a name */
  if (!z) return;
  name_key = nvmeof_name_key(k->w[0], k->s.role);
  bpf_map_update_elem(&nv_names, &name_key, z, BPF_NOEXIST);
  dst = bpf_map_lookup_elem(&nv_names, &name_key);
  if (!dst) return;
  bpf_probe_read_kernel_str(dst, NVMEOF_NQN_SIZE, (void*)name);
}

static __always_inline void host_stamp(__u64 id, struct request* rq, bool direct, int point) {
  struct cmd c;
  if (host_sampled(rq, id, direct, &c)) stamp(&c, point);
}

static __always_inline void target_stamp(__u64 id, struct nvmet_req___nv* req, bool direct,
                                         int point) {
  struct cmd c;
  if (target_sampled(req, id, direct, &c)) stamp(&c, point);
}

/* ---- host ---- */

static __always_inline void on_setup(struct request* rq, const void* cmd, bool direct) {
  struct cmd c;
  if (host_sampled(rq, as_id(rq, direct), direct, &c))
    nv_host_setup(rq, c.id, c.tag, direct, false);
}

static __always_inline void on_rdma_sent(__u64 id, struct request* rq, bool direct) {
  struct nvmeof_cmd_way* w;
  struct cmd c;
  if (!host_sampled(rq, id, direct, &c)) return;
  w = tracked(&c);
  /* The response may be processed before the send completion is polled; then the send
   * completion is not a point between posted and response, and the span stays whole. */
  if (w && !w->e.ts[NVMEOF_HP_RESPONSE] && !w->e.ts[NVMEOF_HP_SENT]) {
    w->e.ts[NVMEOF_HP_SENT] = bpf_ktime_get_ns();
  }
}

/* The host command as it went on the wire, for its flight record (sampled commands only: probed
 * reads through the driver's request, which is not a BTF-typed pointer). */
static __always_inline void host_wire(struct request* rq, bool direct, struct nvmeof_inflight* e) {
  struct nvme_request___nv* nreq = (void*)rq + bpf_core_type_size(struct request);
  struct nvme_ctrl___nv* ctrl = BPF_CORE_READ(nreq, ctrl);
  struct blk_mq_hw_ctx* hctx = NVMEOF_READ(direct, rq, mq_hctx);
  struct nvmeof_wire w = {};
  if (!nvmeof_read_wire(BPF_CORE_READ(nreq, cmd), &w, false)) return;
  e->slba = w.slba;
  e->cid = w.cid;
  e->nlb = w.nlb;
  e->opcode = w.opcode;
  e->bytes = NVMEOF_READ(direct, rq, __data_len);
  e->qid = hctx ? NVMEOF_READ(direct, hctx, queue_num) + 1 : 0; /* queue 0 is the admin queue */
  /* The command's own controller: a reconnect gives the path a new controller id. */
  e->cntlid = ctrl ? BPF_CORE_READ(ctrl, cntlid) : 0;
}

static __always_inline void on_complete_rq(struct request* rq, bool direct) {
  struct nvmeof_cmd_way* w;
  union count_key k;
  __u64 disk = host_disk(rq, direct);
  struct cmd c;
  if (!disk) return; /* admin and fabrics commands */
  count_key(&k, disk, 0, NVMEOF_ROLE_HOST, nvmeof_rq_op(rq, direct),
            nv_size_class(NVMEOF_READ(direct, rq, __data_len)), 0);
  count_command(&k, disk + bpf_core_field_offset(struct gendisk, disk_name), false);
  if (!host_sampled(rq, as_id(rq, direct), direct, &c)) return;
  w = stamp(&c, NVMEOF_HP_COMPLETE);
  if (w && flight_records) host_wire(rq, direct, &w->e);
}

static __always_inline void on_end(struct request* rq, bool direct) {
  struct cmd c;
  if (host_sampled(rq, as_id(rq, direct), direct, &c)) nv_host_end(c.id, c.tag);
}

/* ---- target ---- */

/* RDMA: the capsule's receive completion is handled: stash the time for on_init on this CPU. */
static __always_inline void on_recv(void) { recv_stash(nv_slot(nv_counters_RECV)); }

static __always_inline void on_tcp_arrival(__u64 sq) {
  if (sq) arrival_stash(&nv_arrivals, sq);
}

static __always_inline void on_init(__u64 id, struct nvmet_req___nv* req, struct nvmet_sq___nv* sq,
                                    bool direct) {
  struct nvmeof_inflight e = {};
  struct nvmeof_wire wire = {};
  /* Taken before the admin check: a keep-alive's receive left in the per-CPU stash would be the
   * next I/O command's on this CPU, of any transport, up to a second stale. */
  __u64 recv = transport_stages ? recv_take(nv_slot(nv_counters_RECV)) : 0, now;
  struct cmd c;
  if (!id || !sq || NVMEOF_READ(direct, sq, qid) == 0) return; /* 0: admin */
  if (transport_stages && !recv) recv = arrival_take(&nv_arrivals, as_id(sq, direct));
  if (!target_wire_sampled(req, id, direct, &c, &wire)) return;
  now = bpf_ktime_get_ns();
  e.ts[NVMEOF_TP_RECV] = recv_point(recv, now);
  e.ts[NVMEOF_TP_INIT] = now;
  e.slba = wire.slba;
  e.cid = wire.cid;
  e.nlb = wire.nlb;
  e.opcode = wire.opcode;
  e.qid = NVMEOF_READ(direct, sq, qid);
  nv_event(NVMEOF_NCTR_SAMPLED_TARGET);
  track(&c, &e);
}

/* The target command's controller, for its flight record: its id, and its host NQN kept once
 * per controller in nv_hostnqns. */
static __always_inline void target_identity(struct nvmet_req___nv* req, struct nvmet_sq___nv* sq,
                                            bool direct, struct nvmeof_inflight* e) {
  struct nvmet_ctrl___nv* ctrl = NVMEOF_READ(direct, sq, ctrl);
  struct nvmeof_path_hists* z;
  __u32 zero = 0;
  char* dst;
  __u64 key;
  if (!ctrl) return;
  key = as_id(ctrl, direct);
  e->ctrl = key;
  e->cntlid = NVMEOF_READ(direct, ctrl, cntlid);
  e->bytes = NVMEOF_READ(direct, req, transfer_len);
  if (!key || bpf_map_lookup_elem(&nv_hostnqns, &key)) return;
  z = bpf_map_lookup_elem(&nv_zero, &zero); /* zeroed memory, larger than a name */
  if (!z) return;
  bpf_map_update_elem(&nv_hostnqns, &key, z, BPF_NOEXIST);
  dst = bpf_map_lookup_elem(&nv_hostnqns, &key);
  if (dst)
    bpf_probe_read_kernel_str(
        dst, NVMEOF_NQN_SIZE,
        (void*)(key + bpf_core_field_offset(struct nvmet_ctrl___nv, hostnqn)));
}

static __always_inline void on_done(__u64 id, struct nvmet_req___nv* req, bool direct) {
  struct nvmet_sq___nv* sq;
  struct nvmet_subsys___nv* subsys;
  struct nvmet_port___nv* port;
  struct nvmeof_cmd_way* w;
  union count_key k;
  struct cmd c;
  __u16 portid = 0;
  __u8 opcode = 0, trtype = 0;

  if (!target_io(req, direct, &sq, &subsys, &opcode)) return;
  port = NVMEOF_READ(direct, req, port);
  if (port) {
    portid = NVMEOF_READ(direct, port, disc_addr.portid);
    trtype = NVMEOF_READ(direct, port, disc_addr.trtype);
  }
  count_key(&k, as_id(subsys, direct), portid, NVMEOF_ROLE_TARGET, nvme_op(opcode),
            nv_size_class(NVMEOF_READ(direct, req, transfer_len)), trtype);
  count_command(&k, k.w[0] + bpf_core_field_offset(struct nvmet_subsys___nv, subsysnqn), true);

  if (!target_sampled(req, id, direct, &c)) return;
  w = stamp(&c, NVMEOF_TP_DONE);
  if (!w) return;
  w->e.series = k.s; /* finish() sets the kind of each key it makes */
  if (flight_records) target_identity(req, sq, direct, &w->e);
  if (target_sent_hooked(&nv_config, trtype)) return;
  finish(&w->e, NVMEOF_TP_COUNT); /* no response hook for this transport: ends here */
  nv_flight_emit(&w->e);
  untrack(w, c.id);
}

static __always_inline void on_sent(__u64 id, struct nvmet_req___nv* req, bool direct) {
  struct nvmeof_cmd_way* w;
  struct cmd c;
  if (!target_sampled(req, id, direct, &c)) return;
  w = tracked(&c);
  if (!w || !w->e.ts[NVMEOF_TP_DONE]) return;
  w->e.ts[NVMEOF_TP_SENT] = bpf_ktime_get_ns();
  finish(&w->e, NVMEOF_TP_COUNT);
  nv_flight_emit(&w->e);
  untrack(w, c.id);
}

#include "nvmeof_hooks.bpf.h"
#include "tp_field.bpf.h"

/* ---- target, classic tracepoints (kernels without module BTF: 5.10) ----
 *
 * The programs above read nvmet's types through CO-RE, which needs the module's BTF (5.11+).
 * These read the nvmet:nvmet_req_init and nvmet_req_complete trace records instead, whose layout
 * the kernel publishes in each event's format file: the exporter sets the offsets and sizes below
 * from them before load (readers/tracepoint_format.h), and plans these programs only
 * where the format files have every field (loader/nvmeof.cc). The record names the
 * controller, queue and command id; on 5.10 init fires before the command is parsed, so only the
 * completion names the namespace (its device path), and the opcode and start are kept from one
 * to the other in nv_tp_cmds for every I/O command. A series is the namespace's device path
 * (the exporter maps it to its subsystem through configfs); its port and transport are not in
 * the records (the exporter takes the transport from the subsystem's ports). */
const volatile struct nvmeof_tp_field tp_init_ctrl = {}, tp_init_qid = {}, tp_init_cid = {},
                                      tp_init_opcode = {}, tp_init_cdw10 = {};
const volatile struct nvmeof_tp_field tp_done_ctrl = {}, tp_done_qid = {}, tp_done_cid = {},
                                      tp_done_disk = {};

struct nvmeof_tp_cmd {
  __u64 ctrl;
  __u32 qid, cid;
};
struct nvmeof_tp_start {
  __u64 start; /* 0: not timed */
  __u8 op;
  __u8 pad[7];
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct nvmeof_tp_cmd);
  __type(value, struct nvmeof_tp_start);
} nv_tp_cmds SEC(".maps");

/* The record's first NVMEOF_TP_SPAN bytes (tp_field.bpf.h), read once per program run. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u8[NVMEOF_TP_SPAN]);
} nv_tp_record SEC(".maps");

static __always_inline __u8* tp_record(void* ctx) { return tp_copy(&nv_tp_record, ctx); }

SEC("tracepoint/nvmet/nvmet_req_init")
int nv_t_init_tp(void* ctx) {
  struct nvmeof_tp_cmd key = {};
  struct nvmeof_tp_start v = {};
  __u8* rec = tp_record(ctx);
  __u32 slba_at = tp_init_cdw10.offset;
  __u64 slba;
  if (!rec) return 0;
  key.ctrl = tp_field(rec, &tp_init_ctrl);
  key.qid = (__u32)tp_field(rec, &tp_init_qid);
  key.cid = (__u32)tp_field(rec, &tp_init_cid);
  if (!key.ctrl || !key.qid) return 0; /* a connect (no controller yet), or an admin command */
  if (slba_at > NVMEOF_TP_SPAN - 8) return 0;
  slba = *(const __u64*)(rec + slba_at); /* cdw10 and cdw11 */
  v.op = nvme_op((__u8)tp_field(rec, &tp_init_opcode));
  if (nvmeof_picked(slba, key.cid, sample_every_hash_limit)) {
    v.start = bpf_ktime_get_ns();
    nv_event(NVMEOF_NCTR_SAMPLED_TARGET);
  }
  if (bpf_map_update_elem(&nv_tp_cmds, &key, &v, BPF_ANY)) nv_event(NVMEOF_NCTR_INFLIGHT_FULL);
  return 0;
}

SEC("tracepoint/nvmet/nvmet_req_complete")
int nv_t_done_tp(void* ctx) {
  struct nvmeof_tp_cmd key = {};
  struct nvmeof_tp_start* found;
  struct nvmeof_inflight e = {};
  struct nvmeof_tp_start v;
  union count_key k;
  __u8* rec = tp_record(ctx);
  __u32 disk_at = tp_done_disk.offset;
  const __u64* disk;
  __u64 id;
  if (!rec) return 0;
  key.ctrl = tp_field(rec, &tp_done_ctrl);
  key.qid = (__u32)tp_field(rec, &tp_done_qid);
  key.cid = (__u32)tp_field(rec, &tp_done_cid);
  found = bpf_map_lookup_elem(&nv_tp_cmds, &key);
  if (!found) return 0; /* admin, or begun before the programs were attached */
  v = *found;
  bpf_map_delete_elem(&nv_tp_cmds, &key);
  /* The series: a hash of the device path's first 32 bytes (DISK_NAME_LEN, as the record
   * holds it), never 0; the name is read from the record on the series' first command. */
  if (disk_at > NVMEOF_TP_SPAN - 32) return 0;
  disk = (const __u64*)(rec + disk_at);
  id = (disk[0] * 0x9E3779B97F4A7C15ULL ^ disk[1]) * 0xBF58476D1CE4E5B9ULL ^
       (disk[2] * 0xC2B2AE3D27D4EB4FULL ^ disk[3]);
  count_key(&k, id | 1, 0, NVMEOF_ROLE_TARGET, v.op, 0, NVMEOF_TRTYPE_UNKNOWN);
  count_command(&k, (__u64)ctx + disk_at, false);
  if (!v.start) return 0;
  e.ts[NVMEOF_TP_INIT] = v.start;
  e.ts[NVMEOF_TP_DONE] = bpf_ktime_get_ns();
  e.series = k.s;
  finish(&e, NVMEOF_TP_COUNT);
  return 0;
}
