// SPDX-License-Identifier: GPL-2.0
/* NVMe-oF per-stage latency, host and target (stage model: README "NVMe-oF stages").
 *
 * Each hook stamps one point (nvmeof_maps.h) of a sampled command in the in-flight table; the
 * last hook of the command turns the points it passed into stage spans and an end-to-end time.
 * The hook programs (every variant: tp_btf, raw_tp, fentry, kprobe) are nvmeof_hooks.bpf.h's,
 * shared with record.bpf.c; this file defines what each hook does here (the on_* handlers).
 * Commands are counted exactly at nvme_complete_rq / nvmet_req_complete; 1 in sample_every is
 * timed.
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
#include "hist.h"
#include "nvmeof_common.bpf.h"
#include "nvmeof_maps.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the exporter before load. */
const volatile __u32 sample_every = 1; /* time 1 in N commands (counted per CPU) */
const volatile bool size_classes = false;
const volatile __u8 stage_detail = NVMEOF_DETAIL_NAMESPACE; /* enum nvmeof_detail */

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, NVMEOF_INFLIGHT_MAX);
  __type(key, __u64);
  __type(value, struct nvmeof_inflight);
} nv_inflight SEC(".maps");

/* Per series (and stage span): allocated on first use. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, NVMEOF_SERIES_MAX);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct nvmeof_series);
  __type(value, struct nvmeof_hist);
} nv_hists SEC(".maps");

/* Exact command counts per series (kind NVMEOF_KIND_COMMANDS): apart from nv_hists, so that a
 * count costs 8 bytes per CPU, not a histogram's 1,760. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, NVMEOF_SERIES_MAX);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct nvmeof_series);
  __type(value, __u64);
} nv_commands SEC(".maps");

/* Host disk (gendisk address) -> its controller's instance (nvme<N>) + 1, for stage spans at
 * controller detail (0: not an nvme disk name). Parsed from the name at its first sampled
 * command. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u64);
  __type(value, __u32);
} nv_ctrl SEC(".maps");

/* A zeroed value to insert from: too large for the 512-byte BPF stack. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct nvmeof_hist);
} nv_zero SEC(".maps");

/* Series id -> name: the host disk's name (gendisk address -> "nvme0c1n1") or the target
 * subsystem's NQN (nvmet_subsys address). Written when a series' first command completes. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u64);
  __type(value, char[NVMEOF_NQN_SIZE]);
} nv_names SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct nvmeof_config);
} nv_config SEC(".maps");

/* Event counters; then the sampling counters of host and target (separate: on a node that is
 * both, one shared counter would alternate its picks between the two roles), a scratch slot
 * (see as_id) and the receive stash. */
#define SAMPLE_SLOT NVMEOF_NCTR_COUNT /* + role */
#define SCRATCH_SLOT (NVMEOF_NCTR_COUNT + 2)
#define RECV_SLOT (NVMEOF_NCTR_COUNT + 3)
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, NVMEOF_NCTR_COUNT + 4);
  __type(key, __u32);
  __type(value, __u64);
} nv_counters SEC(".maps");

static __always_inline __u64* slot(__u32 key) { return bpf_map_lookup_elem(&nv_counters, &key); }

static __always_inline void count_event(__u32 which) {
  __u64* c = slot(which);
  if (c) *c += 1;
}

static __always_inline bool sampled(__u32 role) {
  __u64* c;
  if (sample_every <= 1) return true;
  c = slot(SAMPLE_SLOT + role);
  if (!c) return false;
  return (*c)++ % sample_every == 0;
}

static __always_inline __u64 as_id(const void* p, bool direct) {
  return nvmeof_as_id(&nv_counters, SCRATCH_SLOT, p, direct);
}

static __always_inline __u8 size_class(__u64 bytes) {
  return size_classes ? nvmeof_size_class(bytes) : 0;
}

static __always_inline struct nvmeof_hist* series_hist(struct nvmeof_series* k) {
  struct nvmeof_hist* h = bpf_map_lookup_elem(&nv_hists, k);
  __u32 zero = 0;
  if (h) return h;
  struct nvmeof_hist* z = bpf_map_lookup_elem(&nv_zero, &zero);
  if (!z) return 0;
  bpf_map_update_elem(&nv_hists, k, z, BPF_NOEXIST);
  h = bpf_map_lookup_elem(&nv_hists, k);
  if (!h) count_event(NVMEOF_NCTR_MAP_FULL);
  return h;
}

/* One span of a command, what = SPAN(kind, from, to, add): with add == 0 only makes sure its
 * histogram exists (returns 1 if it cannot), else adds ns to it (at most 5 arguments). Global (not
 * static): the verifier checks a global function once, not again on each path through finish()'s
 * loop (seconds per program under TCG). */
#define SPAN(kind, from, to, add) ((kind) | (from) << 8 | (to) << 16 | (add) << 24)
__noinline int span(struct nvmeof_inflight* e, __u32 what, __u64 ns) {
  struct nvmeof_series k;
  struct nvmeof_hist* h;
  __u32 i = nvmeof_hist_index(ns);
  if (!e) return 1;
  k = e->series;
  k.kind = what & 0xff;
  k.from = (what >> 8) & 0xff;
  k.to = (what >> 16) & 0xff;
  if (k.kind == NVMEOF_KIND_STAGE && stage_detail == NVMEOF_DETAIL_CONTROLLER) {
    if (k.role != NVMEOF_ROLE_HOST) {
      k.port = 0;
      k.detail = NVMEOF_DETAIL_CONTROLLER;
    } else if (e->stage_id) {
      k.id = e->stage_id - 1;
      k.detail = NVMEOF_DETAIL_CONTROLLER;
    }
  }
  if (!(what >> 24)) return series_hist(&k) ? 0 : 1;
  h = bpf_map_lookup_elem(&nv_hists, &k);
  if (!h || i >= NVMEOF_HIST_BUCKETS) return 1;
  h->count += 1;
  h->sum_ns += ns;
  h->buckets[i] += 1;
  return 0;
}

/* Visits the command's spans between consecutive points it passed, in time order, and its
 * first-to-last time; returns how many could not be prepared/added. */
static __always_inline int spans(struct nvmeof_inflight* e, int points, int add) {
  __u64 first_ts = 0, last_ts = 0;
  int first = -1, last = -1, i, failed = 0;
#pragma unroll
  for (i = 0; i < NVMEOF_POINTS; i++) {
    __u64 t = e->ts[i];
    if (i >= points || !t || t < last_ts) continue;
    if (last >= 0) {
      failed += span(e, SPAN(NVMEOF_KIND_STAGE, last, i, add), t - last_ts);
    } else {
      first = i;
      first_ts = t;
    }
    last = i;
    last_ts = t;
  }
  if (first >= 0 && last > first) {
    failed += span(e, SPAN(NVMEOF_KIND_TOTAL, first, last, add), last_ts - first_ts);
  }
  return failed;
}

/* Records the command whole or not at all, so every stage's count equals the end-to-end
 * count: a new series' histogram is allocated in the completion context, where the kernel's
 * BPF allocator can run dry for a moment (counted as NVMEOF_NCTR_MAP_FULL). */
static __always_inline void finish(struct nvmeof_inflight* e, int points) {
  if (spans(e, points, 0) == 0) spans(e, points, 1);
}

static __always_inline void count_command(struct nvmeof_series* base, __u64 name) {
  struct nvmeof_series k = *base;
  __u64 zero64 = 0, *c;
  char* dst;
  struct nvmeof_hist* z;
  __u32 zero = 0;
  k.kind = NVMEOF_KIND_COMMANDS;
  c = bpf_map_lookup_elem(&nv_commands, &k);
  if (c) {
    *c += 1;
    return;
  }
  bpf_map_update_elem(&nv_commands, &k, &zero64, BPF_NOEXIST);
  c = bpf_map_lookup_elem(&nv_commands, &k);
  if (!c) {
    count_event(NVMEOF_NCTR_MAP_FULL);
    return;
  }
  *c += 1;
  if (!name) return;
  /* First command of this series: remember the name behind its id for the labels. */
  z = bpf_map_lookup_elem(&nv_zero, &zero); /* zeroed memory, larger than a name */
  if (!z) return;
  bpf_map_update_elem(&nv_names, &k.id, z, BPF_NOEXIST);
  dst = bpf_map_lookup_elem(&nv_names, &k.id);
  if (!dst) return;
  bpf_probe_read_kernel_str(dst, NVMEOF_NQN_SIZE, (void*)name);
}

/* Stamps `point` of a sampled command, once (a partial send retries: the first one counts). */
static __always_inline struct nvmeof_inflight* stamp(__u64 id, int point) {
  struct nvmeof_inflight* e;
  if (!id) return 0;
  e = bpf_map_lookup_elem(&nv_inflight, &id);
  if (!e || point < 0 || point >= NVMEOF_POINTS) return 0;
  if (!e->ts[point]) e->ts[point] = bpf_ktime_get_ns();
  return e;
}

/* ---- host ---- */

static __always_inline void host_series(struct request* rq, bool direct, __u64 disk,
                                        struct nvmeof_series* s) {
  s->id = disk;
  s->role = NVMEOF_ROLE_HOST;
  s->op = nvmeof_rq_op(rq, direct);
  s->size = size_class(NVMEOF_READ(direct, rq, __data_len));
}

/* At controller detail, the stage id of a host disk: its controller instance + 1, parsed from
 * its name once and kept in nv_ctrl (0: not an nvme disk name, stages stay per disk). */
static __always_inline __u64 host_stage_id(__u64 disk) {
  char name[32] = {};
  __u32* known;
  __u32 v;
  int ctrl;
  if (stage_detail != NVMEOF_DETAIL_CONTROLLER) return 0;
  known = bpf_map_lookup_elem(&nv_ctrl, &disk);
  if (known) return *known;
  bpf_probe_read_kernel_str(name, sizeof(name),
                            (void*)(disk + bpf_core_field_offset(struct gendisk, disk_name)));
  ctrl = nvmeof_ctrl_instance(name);
  v = ctrl >= 0 ? (__u32)ctrl + 1 : 0;
  bpf_map_update_elem(&nv_ctrl, &disk, &v, BPF_ANY);
  return v;
}

static __always_inline void on_setup(struct request* rq, const void* cmd, bool direct) {
  struct nvmeof_inflight e = {};
  __u64 disk = rq_disk(rq), id, start, now;
  if (!disk || !sampled(NVMEOF_ROLE_HOST)) return; /* no disk: admin and fabrics commands */
  id = as_id(rq, direct);
  if (!id) return;
  now = bpf_ktime_get_ns();
  start = NVMEOF_READ(direct, rq, start_time_ns);
  if (start && start <= now) e.ts[NVMEOF_HP_ALLOC] = start;
  e.ts[NVMEOF_HP_SETUP] = now;
  host_series(rq, direct, disk, &e.series);
  e.stage_id = host_stage_id(disk);
  /* BPF_ANY: a requeued request is set up again and timed from there. */
  if (bpf_map_update_elem(&nv_inflight, &id, &e, BPF_ANY)) count_event(NVMEOF_NCTR_INFLIGHT_FULL);
}

static __always_inline void on_rdma_sent(struct ib_wc___nv* wc) {
  struct nvmeof_inflight* e;
  __u64 id = rdma_sent_rq(wc);
  if (!id) return;
  e = bpf_map_lookup_elem(&nv_inflight, &id);
  /* The response may be processed before the send completion is polled; then the send
   * completion is not a point between posted and response, and the span stays whole. */
  if (e && !e->ts[NVMEOF_HP_RESPONSE] && !e->ts[NVMEOF_HP_SENT]) {
    e->ts[NVMEOF_HP_SENT] = bpf_ktime_get_ns();
  }
}

static __always_inline void on_complete_rq(struct request* rq, bool direct) {
  struct nvmeof_series s = {};
  __u64 disk = rq_disk(rq);
  if (!disk) return;
  host_series(rq, direct, disk, &s);
  count_command(&s, disk + bpf_core_field_offset(struct gendisk, disk_name));
  stamp(as_id(rq, direct), NVMEOF_HP_COMPLETE);
}

static __always_inline void on_end(struct request* rq, bool direct) {
  struct nvmeof_inflight* e;
  __u64 id;
  id = as_id(rq, direct);
  e = stamp(id, NVMEOF_HP_END);
  if (!e) return;
  finish(e, NVMEOF_HP_COUNT);
  bpf_map_delete_elem(&nv_inflight, &id);
}

/* ---- target ---- */

/* The capsule's receive processing starts: stash the time for on_init on this CPU. */
static __always_inline void on_recv(void) { recv_stash(slot(RECV_SLOT)); }

static __always_inline void on_init(__u64 id, struct nvmet_req___nv* req,
                                    struct nvmet_sq___nv* sq) {
  struct nvmeof_inflight e = {};
  __u64 recv = recv_take(slot(RECV_SLOT)), now;
  if (!id || BPF_CORE_READ(sq, qid) == 0 || !sampled(NVMEOF_ROLE_TARGET)) return; /* admin */
  now = bpf_ktime_get_ns();
  e.ts[NVMEOF_TP_RECV] = recv_point(recv, now);
  e.ts[NVMEOF_TP_INIT] = now;
  if (bpf_map_update_elem(&nv_inflight, &id, &e, BPF_ANY)) count_event(NVMEOF_NCTR_INFLIGHT_FULL);
}

static __always_inline void on_done(__u64 id, struct nvmet_req___nv* req) {
  struct nvmeof_series s = {};
  struct nvmet_sq___nv* sq;
  struct nvmet_subsys___nv* subsys;
  struct nvmeof_inflight* e;
  __u8 opcode = 0;

  if (!target_io(req, &sq, &subsys, &opcode)) return;
  s.id = (__u64)subsys;
  s.role = NVMEOF_ROLE_TARGET;
  s.port = BPF_CORE_READ(req, port, disc_addr.portid);
  s.trtype = BPF_CORE_READ(req, port, disc_addr.trtype);
  s.op = nvme_op(opcode);
  s.size = size_class(BPF_CORE_READ(req, transfer_len));
  count_command(&s, (__u64)BPF_CORE_READ(subsys, subsysnqn));

  e = stamp(id, NVMEOF_TP_DONE);
  if (!e) return;
  e->series = s;
  if (target_sent_hooked(&nv_config, s.trtype)) return;
  finish(e, NVMEOF_TP_COUNT); /* no response hook for this transport: ends here */
  bpf_map_delete_elem(&nv_inflight, &id);
}

static __always_inline void on_sent(__u64 req) {
  struct nvmeof_inflight* e;
  if (!req) return;
  e = bpf_map_lookup_elem(&nv_inflight, &req);
  if (!e || !e->ts[NVMEOF_TP_DONE]) return;
  e->ts[NVMEOF_TP_SENT] = bpf_ktime_get_ns();
  finish(e, NVMEOF_TP_COUNT);
  bpf_map_delete_elem(&nv_inflight, &req);
}

#include "nvmeof_hooks.bpf.h"
