// SPDX-License-Identifier: GPL-2.0
/* Block-layer stage latency: request allocated -> issued to the driver -> completed.
 *
 * Two hooks, each in four variants (fentry, kprobe, tp_btf, raw_tp); the exporter enables one
 * variant per hook with bpf_program__set_autoload before loading (loader/block_loader.cc).
 *   issue    (optional): remembers the issue time in the in-flight table; with nvmeof_host
 *                        also the setup point of NVMe-oF host commands.
 *   complete (required): counts every request, and for timed ones records the stages into a
 *                        per-CPU histogram keyed by (disk, op); with nvmeof_host also the
 *                        end point of NVMe-oF host commands (one program on the tracepoint).
 * The queue stage starts at rq->start_time_ns, which the kernel sets at request allocation
 * whenever iostats are on (the default) or a scheduler is attached, so no insert hook and no
 * hash update are needed for it. Without the issue hook, queue and device merge into the
 * end-to-end stage only. */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "block_maps.h"
#include "core_shims.h"
#include "count_cache.bpf.h"
#include "hist.h"
#include "nvmeof_common.bpf.h"
#include "nvmeof_inflight.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the exporter before load. */
/* Derived from bpf.sample_every (sample.h): time 1 in N requests; see sampled. */
const volatile __u64 sample_every_hash_limit = ~0ULL;
const volatile bool issue_hooked = true;
/* Also set up (at issue) and end (at completion) NVMe-oF host commands here
 * (nvmeof_inflight.bpf.h): the NVMe-oF collector runs with the same sample_every_hash_limit, so
 * a request sampled here is the one its host hooks time. */
const volatile bool nvmeof_host = false;

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, NVMEOF_INFLIGHT_SETS);
  __type(key, __u32);
  __type(value, struct nvmeof_inflight_set);
} inflight SEC(".maps");

/* Per (disk, op): allocated on first use, so memory follows the devices actually doing I/O. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 1024);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct nvmeof_block_key);
  __type(value, struct nvmeof_block_hist);
} block_hists SEC(".maps");

/* Exact request counts, first stop: a slot per (disk, op) (count_cache.h); the `requests` of
 * block_hists takes the keys whose slots others own. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, NVMEOF_COUNT_SLOTS);
  __type(key, __u32);
  __type(value, struct nvmeof_count_slot);
} count_slots SEC(".maps");

/* A zeroed value to insert from: too large for the 512-byte BPF stack. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct nvmeof_block_hist);
} zero_hist SEC(".maps");

/* Event counters. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, NVMEOF_CTR_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

static __always_inline void count_event(__u32 which) {
  __u64* c = bpf_map_lookup_elem(&counters, &which);
  if (c) *c += 1;
}

/* True for about one request in N (nvmeof_rq_picked: its start and tag, which issue and
 * completion both read), so a completion of an unsampled request returns before touching the
 * in-flight table (and before reading the clock). The same pick as the NVMe-oF host hooks'. */
static __always_inline bool sampled(struct request* rq, bool direct) {
  return nvmeof_rq_picked(rq, direct, sample_every_hash_limit);
}

static __always_inline struct nvmeof_inflight_set* inflight_set(__u64 rq) {
  __u32 set = (__u32)((rq * 0x9E3779B97F4A7C15ULL) >> (64 - NVMEOF_INFLIGHT_SET_BITS));
  return bpf_map_lookup_elem(&inflight, &set);
}

static __always_inline void record(struct nvmeof_block_hist* h, __u32 stage, __u64 ns) {
#ifndef NVMEOF_BPF_BEFORE_5_12
  __u32 i = nvmeof_hist_index(ns);
#else
  __u32 i = (__u32)nv_hist_bucket(ns); /* its branches checked once (nvmeof_inflight.bpf.h) */
#endif
  barrier_var(i); /* keeps the check below on the register the store uses, for the verifier */
  if (stage >= NVMEOF_STAGE_COUNT || i >= NVMEOF_HIST_BUCKETS) return;
  h->count[stage] += 1;
  h->sum_ns[stage] += ns;
  h->buckets[stage][i] += 1;
}

static __always_inline void on_issue(struct request* rq, bool direct) {
  struct nvmeof_inflight_set* s;
  int i, way = -1;
  __u64 key, sector;

  key = nv_as_id(rq, direct);
  if (!key || !sampled(rq, direct)) return;
  sector = NVMEOF_READ(direct, rq, __sector);
  /* An NVMe-oF namespace's disk, whose block series the exporter leaves out: timed as NVMe-oF
   * host commands only (a block histogram and in-flight entry less per sampled command). */
  if (nvmeof_host && nv_host_setup(rq, key, sector, direct, true)) return;
  s = inflight_set(key);
  if (!s) return;
    /* Requeued requests are issued again: reuse their way. Else take a free one. */
#pragma unroll
  for (i = 0; i < NVMEOF_INFLIGHT_WAYS; i++) {
    if (way < 0 && s->way[i].rq == key) way = i;
  }
#pragma unroll
  for (i = 0; i < NVMEOF_INFLIGHT_WAYS; i++) {
    if (way < 0 && s->way[i].rq == 0) way = i;
  }
  __u64 now = bpf_ktime_get_ns();
  if (way < 0) {
    way = (now >> 4) & (NVMEOF_INFLIGHT_WAYS - 1);
    count_event(NVMEOF_CTR_INFLIGHT_EVICTED);
  }
  s->way[way & (NVMEOF_INFLIGHT_WAYS - 1)].issue_ns = now;
  s->way[way & (NVMEOF_INFLIGHT_WAYS - 1)].rq = key;
}

static __always_inline void on_complete(struct request* rq, __u32 nr_bytes, bool direct) {
  struct nvmeof_block_key k = {};
  struct nvmeof_block_hist* h;
  __u64 now, start, issue = 0, id, kw, *c;
  __u32 zero = 0;
  bool sampled_rq;
  int i;

  /* Partial completions come first with nr_bytes < the bytes left; count the final one. */
  if (nr_bytes < NVMEOF_READ(direct, rq, __data_len)) return;

  k.disk = nvmeof_rq_disk_key(rq, direct);
  k.op = nvmeof_rq_op(rq, direct);
  kw = nvmeof_block_key_word(&k);
  c = count_slot(&count_slots, &kw, 1);
  if (c) *c += 1;
  id = nv_as_id(rq, direct);
  sampled_rq = id && sampled(rq, direct);
  if (nvmeof_host && sampled_rq && nv_host_end(id, NVMEOF_READ(direct, rq, __sector)))
    sampled_rq = false; /* as on_issue */
  if (c && !sampled_rq) return;
  h = bpf_map_lookup_elem(&block_hists, &k);
  if (!h) {
    struct nvmeof_block_hist* z = bpf_map_lookup_elem(&zero_hist, &zero);
    if (!z) return;
    bpf_map_update_elem(&block_hists, &k, z, BPF_NOEXIST);
    h = bpf_map_lookup_elem(&block_hists, &k);
    if (!h) {
      count_event(NVMEOF_CTR_MAP_FULL);
      return;
    }
  }
  if (!c) h->requests += 1;
  if (!sampled_rq) return;
  now = bpf_ktime_get_ns();
  start = NVMEOF_READ(direct, rq, start_time_ns);

  if (!issue_hooked) {
    if (start && start <= now) record(h, NVMEOF_STAGE_TOTAL, now - start);
    return;
  }

  struct nvmeof_inflight_set* s = inflight_set(id);
  if (!s) return;
#pragma unroll
  for (i = 0; i < NVMEOF_INFLIGHT_WAYS; i++) {
    if (!issue && s->way[i].rq == id) {
      issue = s->way[i].issue_ns;
      s->way[i].rq = 0;
    }
  }
  if (!issue || issue > now) return; /* not sampled, or issued before we attached */
  record(h, NVMEOF_STAGE_DEVICE, now - issue);
  if (start && start <= issue) {
    record(h, NVMEOF_STAGE_QUEUE, issue - start);
    record(h, NVMEOF_STAGE_TOTAL, now - start);
  }
}

/* issue: block:block_rq_issue fires at the top of blk_mq_start_request(). */
SEC("fentry/blk_mq_start_request")
int BPF_PROG(nvf_iss_fentry, struct request* rq) {
  on_issue(rq, true);
  return 0;
}

SEC("kprobe/blk_mq_start_request")
int BPF_KPROBE(nvf_iss_kprobe, struct request* rq) {
  on_issue(rq, false);
  return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(nvf_iss_tp_btf, struct request* rq) {
  on_issue(rq, true);
  return 0;
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(nvf_iss_raw_tp, struct request* rq) {
  on_issue(rq, false);
  return 0;
}

/* complete, where the kernel ends its own accounting (6.5+): block:block_io_done fires in
 * blk_account_io_done(), once per request, after the bio completions (direct I/O and aio
 * completion, the waiter's wakeup) that follow block_rq_complete, with the same clock reading
 * /proc/diskstats and iostat's await end at. So end to end here is the kernel's own window
 * (rq->start_time_ns to accounted done), not a part of it. The kernel skips it for requests
 * it does not account (queue/iostats 0, no I/O scheduler): the loader plans it only where
 * every disk has iostats on (loader/block.cc). ~0U: no partial completions here. */
SEC("tp_btf/block_io_done")
int BPF_PROG(nvf_done_tp_btf, struct request* rq) {
  on_complete(rq, ~0U, true);
  return 0;
}

SEC("raw_tp/block_io_done")
int BPF_PROG(nvf_done_raw_tp, struct request* rq) {
  on_complete(rq, ~0U, false);
  return 0;
}

/* complete: block:block_rq_complete fires in blk_update_request() and, for batched
 * completions, in blk_complete_request() (inlined; not reachable by fentry/kprobe). */
SEC("fentry/blk_update_request")
int BPF_PROG(nvf_cpl_fentry, struct request* rq, blk_status_t error, unsigned int nr_bytes) {
  on_complete(rq, nr_bytes, true);
  return 0;
}

SEC("kprobe/blk_update_request")
int BPF_KPROBE(nvf_cpl_kprobe, struct request* rq, blk_status_t error, unsigned int nr_bytes) {
  on_complete(rq, nr_bytes, false);
  return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(nvf_cpl_tp_btf, struct request* rq, blk_status_t error, unsigned int nr_bytes) {
  on_complete(rq, nr_bytes, true);
  return 0;
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(nvf_cpl_raw_tp, struct request* rq, blk_status_t error, unsigned int nr_bytes) {
  on_complete(rq, nr_bytes, false);
  return 0;
}
