/* The NVMe-oF in-flight table: a sampled command's setup (host), stamps, and at its last point
 * its stage spans and end-to-end time (finish). nvmeof.bpf.c includes it, and so does
 * block.bpf.c, whose issue and completion programs set up and end NVMe-oF host commands when
 * both collectors run: one program on each of block_rq_issue and block_rq_complete instead of
 * two (a program run per request less at each: dispatch is most of what a hook costs). The exporter
 * shares these maps between the two objects (loader/block_loader.cc). Include after
 * vmlinux.h and the libbpf headers.
 */
#ifndef NVMEOF_BPF_NVMEOF_INFLIGHT_BPF_H_
#define NVMEOF_BPF_NVMEOF_INFLIGHT_BPF_H_

#include "classes.h"
#include "core_shims.h"
#include "hist.h"
#include "nvmeof_common.bpf.h"
#include "nvmeof_maps.h"

/* Set by the exporter before load (the same in both objects). */
const volatile __u8 stage_detail = NVMEOF_DETAIL_NAMESPACE; /* enum nvmeof_detail */
const volatile bool size_classes = false;
/* The end to end is served with the stages' identity (bpf.stage_detail, bpf.command_detail: all
 * but per-controller stages with per-namespace end to end): it lives in their nv_paths entry. */
const volatile bool total_in_paths = true;
/* The flight recorder is on (bpf.flight_recorder): a sampled command's end writes its record to
 * nv_flight. */
const volatile bool flight_records = false;

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, NVMEOF_CMD_SETS);
  __type(key, __u32);
  __type(value, struct nvmeof_cmd_set);
} nv_inflight SEC(".maps");

/* End-to-end histograms per series (kind NVMEOF_KIND_TOTAL) where they are not in nv_paths
 * (total_in_paths): allocated on first use. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, NVMEOF_SERIES_MAX);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct nvmeof_series);
  __type(value, struct nvmeof_hist);
} nv_hists SEC(".maps");

/* Stage histograms per series and set of points passed (nvmeof_path_hists). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, NVMEOF_SERIES_MAX);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct nvmeof_series);
  __type(value, struct nvmeof_path_hists);
} nv_paths SEC(".maps");

/* A zeroed value to insert from: too large for the 512-byte BPF stack. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct nvmeof_path_hists);
} nv_zero SEC(".maps");

/* Flight records (struct nvmeof_flight_record), read by the exporter every second, or when
 * woken (nv_flight_emit). */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, NVMEOF_FLIGHT_RING_BYTES);
} nv_flight SEC(".maps");

/* Event counters (nvmeof_maps.h), a scratch slot (see nv_as_id) and the receive stash. */
NVMEOF_COUNTERS(nv_counters, NVMEOF_NCTR_COUNT, nv_slot, nv_event)

/* A command as each of its hooks finds it: its address (the in-flight key) and a tag that
 * tells two commands of one reused request apart (host: the start sector; target: SLBA and
 * command id), so that a hook never stamps an entry its command's setup did not make (one left
 * by a command whose last hook was missed, e.g. a kprobe skipped on recursion). */
struct cmd {
  __u64 id, tag;
};

static __always_inline struct nvmeof_cmd_set* cmd_set(__u64 id) {
  __u32 set = (__u32)((id * 0x9E3779B97F4A7C15ULL) >> (64 - NVMEOF_CMD_SET_BITS));
  return bpf_map_lookup_elem(&nv_inflight, &set);
}

/* The in-flight way of command `c`, or 0. */
static __always_inline struct nvmeof_cmd_way* tracked(const struct cmd* c) {
  struct nvmeof_cmd_set* s;
  int i;
  if (!c->id) return 0;
  s = cmd_set(c->id);
  if (!s) return 0;
#pragma unroll
  for (i = 0; i < NVMEOF_CMD_WAYS; i++) {
    if (s->way[i].id == c->id && s->way[i].e.tag == c->tag) return &s->way[i];
  }
  return 0;
}

#ifndef NVMEOF_BPF_BEFORE_5_12
/* Claims free way `w` for command `id`. */
static __always_inline bool claim_way(struct nvmeof_cmd_way* w, __u64 id) {
  return __sync_val_compare_and_swap(&w->id, 0, id) == 0;
}
#else
/* Kernels before 5.12 have no BPF compare-and-swap or exchange (their verifier refuses a
 * program holding one: "BPF_STX uses reserved fields"), only the atomic add, whose result a
 * program cannot read. So a claim adds `id` to the free way and owns it if the way then holds
 * exactly `id`; CPUs that raced see the sum (two kernel addresses add up to a non-canonical
 * one, never a command's) and take their add back, and the loser moves on to the next way.
 * Releases subtract the owner's id (untrack), so a racer's add is never lost. */
static __always_inline bool claim_way(struct nvmeof_cmd_way* w, __u64 id) {
  __sync_fetch_and_add(&w->id, id);
  if (*(volatile __u64*)&w->id == id) return true;
  __sync_fetch_and_add(&w->id, -id);
  return false;
}
#endif

/* Starts tracking command `id` with `e` (again if it is tracked: a requeued request is set up
 * again and timed from there). A full set drops the command, counted. */
static __always_inline void track(const struct cmd* c, struct nvmeof_inflight* e) {
  struct nvmeof_cmd_set* s;
  __u64 id = c->id;
  int i;
  if (!id) return;
  e->tag = c->tag;
  s = cmd_set(id);
  if (!s) return;
#pragma unroll
  for (i = 0; i < NVMEOF_CMD_WAYS; i++) {
    if (s->way[i].id == id || (s->way[i].id == 0 && claim_way(&s->way[i], id))) {
      s->way[i].e = *e;
      return;
    }
  }
  nv_event(NVMEOF_NCTR_INFLIGHT_FULL);
}

/* Frees the way of command `id` (its reads are done: the swap orders them before another CPU's
 * claim; the atomic add of kernels before 5.12 is a full barrier on x86, not on arm64). */
static __always_inline void untrack(struct nvmeof_cmd_way* w, __u64 id) {
#ifndef NVMEOF_BPF_BEFORE_5_12
  (void)id;
  __sync_lock_test_and_set(&w->id, 0);
#else
  __sync_fetch_and_add(&w->id, -id);
#endif
}

/* Stamps `point` of a sampled command, once (a partial send retries: the first one counts). */
static __always_inline struct nvmeof_cmd_way* stamp(const struct cmd* c, int point) {
  struct nvmeof_cmd_way* w = tracked(c);
  if (!w || point < 0 || point >= NVMEOF_POINTS) return 0;
  if (!w->e.ts[point]) w->e.ts[point] = bpf_ktime_get_ns();
  return w;
}

/* The value of `k` in `map` (nv_hists or nv_paths), inserted zeroed if new. */
static __always_inline void* hist_entry(void* map, struct nvmeof_series* k) {
  void* h = bpf_map_lookup_elem(map, k);
  __u32 zero = 0;
  void* z;
  if (h) return h;
  z = bpf_map_lookup_elem(&nv_zero, &zero);
  if (!z) return 0;
  bpf_map_update_elem(map, k, z, BPF_NOEXIST);
  h = bpf_map_lookup_elem(map, k);
  if (!h) nv_event(NVMEOF_NCTR_MAP_FULL);
  return h;
}

/* Global (not static): the verifier checks it once, not again at each of finish()'s spans.
 * Kernels before 5.12 take no pointer argument in a global function ("Arg#0 type PTR in
 * nv_hist_add() is not supported yet"): their build inlines the add but keeps the bucket
 * index, whose branches would multiply finish()'s paths past the verifier's 1M-instruction
 * limit, in a global function of a scalar. */
#ifndef NVMEOF_BPF_BEFORE_5_12
__noinline int nv_hist_add(struct nvmeof_hist* h, __u64 ns) {
  __u32 i = nvmeof_hist_index(ns);
#else
__noinline int nv_hist_bucket(__u64 ns) { return (int)nvmeof_hist_index(ns); }

static __always_inline int nv_hist_add(struct nvmeof_hist* h, __u64 ns) {
  __u32 i = (__u32)nv_hist_bucket(ns);
#endif
  barrier_var(i); /* keeps the check below on the register the store uses, for the verifier */
  if (!h || i >= NVMEOF_HIST_BUCKETS) return 0;
  h->count += 1;
  h->sum_ns += ns;
  h->buckets[i] += 1;
  return 0;
}

/* The command's stages (spans between consecutive points it passed, in time order) and its
 * first-to-last time, recorded whole or not at all, so every stage's count equals the
 * end-to-end count: a new series' entries are allocated in the completion context, where the
 * kernel's BPF allocator can run dry for a moment (counted as NVMEOF_NCTR_MAP_FULL). */
static __always_inline void finish(struct nvmeof_inflight* e, int points) {
  struct nvmeof_series k = e->series;
  struct nvmeof_path_hists* p;
  struct nvmeof_hist* total;
  __u64 first_ts = 0, last_ts = 0;
  int first = -1, last = -1, i;
  __u8 mask = 0;
#pragma unroll
  for (i = 0; i < NVMEOF_POINTS; i++) {
    __u64 t = e->ts[i];
    if (i >= points || !t || t < last_ts) continue;
    if (first < 0) {
      first = i;
      first_ts = t;
    }
    mask |= 1 << i;
    last = i;
    last_ts = t;
  }
  if (first < 0 || last <= first) return;
  if (!total_in_paths) {
    /* Stage spans keyed by controller, the end to end by disk or port: in a map of its own. */
    k.kind = NVMEOF_KIND_TOTAL;
    k.from = first;
    k.to = last;
    total = hist_entry(&nv_hists, &k);
    if (!total) return;
  }
  k.kind = NVMEOF_KIND_STAGE;
  k.from = 0;
  k.to = 0;
  k.points = mask;
  if (stage_detail == NVMEOF_DETAIL_CONTROLLER) {
    if (k.role != NVMEOF_ROLE_HOST) {
      k.port = 0;
      k.detail = NVMEOF_DETAIL_CONTROLLER;
    } else if (e->stage_id) {
      k.id = e->stage_id - 1;
      k.detail = NVMEOF_DETAIL_CONTROLLER;
    }
  }
  p = hist_entry(&nv_paths, &k);
  if (!p) return;
  /* Its span (first -> last) follows from the points: one hash lookup per command less. */
  if (total_in_paths) total = &p->total;
  nv_hist_add(total, last_ts - first_ts);
  last_ts = first_ts;
#pragma unroll
  for (i = 1; i < NVMEOF_POINTS; i++) {
    if (i <= first || !(mask & (1 << i))) continue;
    nv_hist_add(&p->stage[i - 1], e->ts[i] - last_ts);
    last_ts = e->ts[i];
  }
}

/* Writes the flight record of sampled command `e`, which ended on this node. No wakeup but
 * when the ring is half full: the exporter polls, so a record costs no scheduler work in the
 * completion path. Global (not
 * static) where kernels allow it, as nv_hist_add: verified once, not at each caller. */
#ifndef NVMEOF_BPF_BEFORE_5_12
__noinline int nv_flight_emit(struct nvmeof_inflight* e) {
#else
static __always_inline int nv_flight_emit(struct nvmeof_inflight* e) {
#endif
  struct nvmeof_flight_record* r;
  int i;
  if (!e || !flight_records) return 0;
  r = bpf_ringbuf_reserve(&nv_flight, sizeof(*r), 0);
  if (!r) {
    nv_event(NVMEOF_NCTR_FLIGHT_LOST);
    return 0;
  }
#pragma unroll
  for (i = 0; i < NVMEOF_POINTS; i++) r->ts[i] = e->ts[i];
  r->series = e->series.id;
  r->ctrl = e->ctrl;
  r->slba = e->slba;
  r->bytes = e->bytes;
  r->cid = e->cid;
  r->nlb = e->nlb;
  r->qid = e->qid;
  r->cntlid = e->cntlid;
  r->port = e->series.port;
  r->role = e->series.role;
  r->opcode = e->opcode;
  r->trtype = e->series.trtype;
  /* The reader polls every second; it is woken only when the ring is half full. */
  bpf_ringbuf_submit(r, bpf_ringbuf_query(&nv_flight, BPF_RB_AVAIL_DATA) > NVMEOF_FLIGHT_WAKE_BYTES
                            ? BPF_RB_FORCE_WAKEUP
                            : BPF_RB_NO_WAKEUP);
  return 0;
}

/* Host disk (gendisk address) -> its controller's instance (nvme<N>) + 1, for stage spans at
 * controller detail (0: not an nvme disk name), parsed from the name at its first sampled
 * command; and NVMEOF_CTRL_UNTIMED_BLOCK, which the exporter sets (nvmeof_maps.h). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u64);
  __type(value, __u32);
} nv_ctrl SEC(".maps");

/* nv_counters' address as a number, once known (nvmeof_as_id). */
static __u64 nv_counters_addr;

/* A pointer argument as a number (nvmeof_as_id). */
static __always_inline __u64 nv_as_id(const void* p, bool direct) {
  return nvmeof_as_id(&nv_counters, nv_counters_SCRATCH, &nv_counters_addr, p, direct);
}

static __always_inline __u8 nv_size_class(__u64 bytes) {
  return size_classes ? nvmeof_size_class(bytes) : 0;
}

/* The request's disk as a number (direct: a plain load, then through map memory, as_id). */
static __always_inline __u64 host_disk(struct request* rq, bool direct) {
  return nvmeof_rq_disk(rq, direct, &nv_counters, nv_counters_SCRATCH, &nv_counters_addr);
}

static __always_inline void host_series(struct request* rq, bool direct, __u64 disk,
                                        struct nvmeof_series* s) {
  s->id = disk;
  s->role = NVMEOF_ROLE_HOST;
  s->op = nvmeof_rq_op(rq, direct);
  s->size = nv_size_class(NVMEOF_READ(direct, rq, __data_len));
}

/* A host disk's nv_ctrl value: its controller instance + 1 (0: not an nvme disk name), parsed
 * from its name once, and NVMEOF_CTRL_UNTIMED_BLOCK once the exporter set it; 0 where nothing
 * needs it (namespace detail). */
static __always_inline __u32 host_ctrl(__u64 disk) {
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

/* Host: sets up the in-flight entry of sampled request `rq` (address `id`, start sector `tag`)
 * at its setup point:
 * nvme:nvme_setup_cmd in nvmeof.bpf.c, or block:block_rq_issue in block.bpf.c
 * (nvme_start_request(), right after the driver built the command), which sees every disk's
 * requests: any_disk keeps only NVMe disks (nvme*: the ones nvme_setup_cmd sees). */
/* True when the disk's block series are not served (NVMEOF_CTRL_UNTIMED_BLOCK). */
static __always_inline bool nv_host_setup(struct request* rq, __u64 id, __u64 tag, bool direct,
                                          bool any_disk) {
  struct nvmeof_inflight e = {};
  struct cmd c = {.id = id, .tag = tag};
  __u64 disk = host_disk(rq, direct), start, now;
  __u32 prefix = 0, ctrl;
  if (!disk) return false; /* admin and fabrics commands */
  if (any_disk) {
    /* A plain load where the chain is BTF-typed (the verifier allows a load within one array
     * member); a helper call costs several times as much, twice a sampled command
     * (the host's path disk and the target's backing disk). */
    if (direct && !bpf_core_field_exists(((struct request___old*)0)->rq_disk))
      prefix = *(const __u32*)rq->q->disk->disk_name;
    else
      bpf_probe_read_kernel(&prefix, sizeof(prefix),
                            (void*)(disk + bpf_core_field_offset(struct gendisk, disk_name)));
    if (prefix != ('n' | 'v' << 8 | 'm' << 16 | 'e' << 24)) return false;
  }
  now = bpf_ktime_get_ns();
  start = NVMEOF_READ(direct, rq, start_time_ns);
  if (start && start <= now) e.ts[NVMEOF_HP_ALLOC] = start;
  e.ts[NVMEOF_HP_SETUP] = now;
  host_series(rq, direct, disk, &e.series);
  ctrl = host_ctrl(disk);
  if (stage_detail == NVMEOF_DETAIL_CONTROLLER) e.stage_id = ctrl & ~NVMEOF_CTRL_UNTIMED_BLOCK;
  e.untimed_block = ctrl & NVMEOF_CTRL_UNTIMED_BLOCK;
  nv_event(NVMEOF_NCTR_SAMPLED_HOST);
  track(&c, &e);
  return e.untimed_block;
}

/* The host request `id` (start sector `sector`) ends in the block layer: if it is tracked,
 * stamp its end and record it; true when its disk's block series are not served. Its own clock
 * read: sharing the block program's would keep a register live across finish() and make the
 * verifier walk it twice (30% more load time). */
static __always_inline bool nv_host_end(__u64 id, __u64 sector) {
  struct cmd c = {.id = id, .tag = sector};
  struct nvmeof_cmd_way* w = stamp(&c, NVMEOF_HP_END);
  bool untimed_block;
  if (!w) return false;
  untimed_block = w->e.untimed_block;
  finish(&w->e, NVMEOF_HP_COUNT);
  nv_flight_emit(&w->e);
  untrack(w, id);
  return untimed_block; /* the block program need not time it (nv_host_setup) */
}

#endif /* NVMEOF_BPF_NVMEOF_INFLIGHT_BPF_H_ */
