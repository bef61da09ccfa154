// SPDX-License-Identifier: GPL-2.0
/* Per-command records of NVMe-oF commands, host and target (`nvmeof_exporter record`, and
 * `top` without --from). Record layout: record_maps.h.
 *
 * Its own object with its own maps, so it never disturbs a running exporter's counts: the
 * programs attach beside nvmeof.bpf.c's. They are the same programs, nvmeof_hooks.bpf.h's (same
 * names, so the hook table NvmeofHooks(), loader/nvmeof.cc, and the attach planner serve
 * both objects), calling this file's on_* handlers; the points are nvmeof_maps.h's. What
 * differs is the end of a command: here it goes whole, with every point's timestamp and the
 * identifiers both sides see (qid, cid, slba, nlb, cntlid, subsystem NQN), into a BPF ring
 * buffer (size set at load; a full ring drops the record and counts it, NVMEOF_RCTR_LOST).
 *
 * Sampling is deterministic on fields host and target both see: a command is recorded when a
 * hash of its starting LBA and command id, taken from the NVMe command itself (what goes on the
 * wire), is at or below the limit of 1 in N (sample.h). The host and the target with the same -s N
 * so record the same commands, and `report` can join them.
 *
 * The host's command is built inside nvme_setup_cmd(): the tracepoint at its end (tp_btf,
 * raw_tp) passes it, and those programs decide there. The function-entry variants (fentry,
 * kprobe) run before it is built: they track every command and decide at nvme_complete_rq. */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "block_maps.h"
#include "core_shims.h"
#include "count_cache.bpf.h"
#include "nvmeof_common.bpf.h"
#include "nvmeof_maps.h"
#include "record_maps.h"

char LICENSE[] SEC("license") = "GPL";

/* Derived from `record -s N` (sample.h): record 1 in N commands; see above. */
const volatile __u64 sample_every_hash_limit = ~0ULL;

/* Module types this object reads beyond core_shims.h's (nvme-core, nvme-fabrics, nvmet). Field
 * names as in Debian 6.1 and 6.12; CO-RE finds their offsets in the module BTF at load. */
struct nvme_ctrl___rec;
struct nvmf_host___rec {
  char nqn[NVMEOF_NQN_SIZE]; /* NVMF_NQN_SIZE; only its offset is used */
} __attribute__((preserve_access_index));

struct nvmf_ctrl_options___rec {
  char* transport; /* "rdma", "tcp", "fc", "loop" */
  char* subsysnqn;
  struct nvmf_host___rec* host; /* the host NQN this controller connected with */
} __attribute__((preserve_access_index));

struct nvme_ctrl___rec {
  unsigned short cntlid;
  struct nvmf_ctrl_options___rec* opts; /* NULL on PCIe */
} __attribute__((preserve_access_index));

/* nvme_req(rq): the start of every NVMe driver's per-request data. */
struct nvme_request___rec {
  void* cmd; /* struct nvme_command */
  struct nvme_ctrl___rec* ctrl;
} __attribute__((preserve_access_index));

struct nvmet_ctrl___rec {
  unsigned short cntlid;
  char hostnqn[NVMEOF_NQN_SIZE]; /* NVMF_NQN_FIELD_LEN; only its offset is used */
} __attribute__((preserve_access_index));

struct nvmet_sq___rec {
  struct nvmet_ctrl___rec* ctrl;
} __attribute__((preserve_access_index));

/* A command in flight; the record is built from it at the end. */
struct rec_inflight {
  __u64 ts[NVMEOF_POINTS];
  __u64 slba;
  __u64 disk;    /* host: gendisk address (for its name) */
  __u64 nqn;     /* address of the subsystem NQN string */
  __u64 hostnqn; /* address of the host NQN string */
  __u32 bytes;
  __u16 nlb, qid, cid, cntlid;
  __u8 role, opcode, trtype;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, NVMEOF_RECORD_INFLIGHT_MAX);
  __type(key, __u64);
  __type(value, struct rec_inflight);
} rec_inflight SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, NVMEOF_RECORD_RING_DEFAULT);
} rec_ring SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, NVMEOF_RECORD_GROUPS_MAX);
  __type(key, struct nvmeof_record_group);
  __type(value, __u64);
} rec_groups SEC(".maps");

/* Exact group counts, first stop: a slot per group (count_cache.h); rec_groups takes the groups
 * whose slots others own. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, NVMEOF_COUNT_SLOTS);
  __type(key, __u32);
  __type(value, struct nvmeof_count_slot);
} rec_group_slots SEC(".maps");

/* Group id -> name (host disk name, target subsystem NQN), written on the group's first command. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, NVMEOF_RECORD_GROUPS_MAX);
  __type(key, __u64);
  __type(value, char[NVMEOF_NQN_SIZE]);
} rec_names SEC(".maps");

/* Host disk (group id) -> NVMEOF_TRTYPE_*, kept on its groups' first commands: the host's group
 * keys leave the transport 0 and the loader fills it in (RecordSource::Groups). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, NVMEOF_RECORD_GROUPS_MAX);
  __type(key, __u64);
  __type(value, __u8);
} rec_trtypes SEC(".maps");

struct rec_zero_name {
  char s[NVMEOF_NQN_SIZE];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct rec_zero_name);
} rec_zero SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct nvmeof_config);
} rec_config SEC(".maps");

/* TCP: per queue, data arrived and not yet taken by a command (nvmeof_common.bpf.h). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1 << NVMEOF_ARRIVAL_BITS);
  __type(key, __u32);
  __type(value, struct nvmeof_arrival);
} rec_arrivals SEC(".maps");

/* Counters (record_maps.h), a scratch slot (see as_id) and the target's receive stash. */
NVMEOF_COUNTERS(rec_counters, NVMEOF_RCTR_COUNT, slot, count_event)

static __u64 rec_counters_addr; /* nvmeof_as_id */

static __always_inline __u64 as_id(const void* p, bool direct) {
  return nvmeof_as_id(&rec_counters, rec_counters_SCRATCH, &rec_counters_addr, p, direct);
}

/* Both sides compute this from the same wire fields (x86 and arm64 are little endian, as the
 * wire). */
static __always_inline bool sampled(const struct nvmeof_wire* w) {
  return nvmeof_picked_cmd(w->slba, w->cid, sample_every_hash_limit);
}

/* Every command, exactly, per group; the group's name is kept on its first command. True on a
 * group's first command (on a CPU whose slot holds it, each CPU's first). */
static __always_inline bool count_group(struct nvmeof_record_group* k, __u64 name) {
  __u64* c = count_slot(&rec_group_slots, (const __u64*)k, sizeof(*k) / 8);
  __u64 one = 1;
  __u32 zero = 0;
  count_event(k->role == NVMEOF_ROLE_HOST ? NVMEOF_RCTR_HOST_COMMANDS
                                          : NVMEOF_RCTR_TARGET_COMMANDS);
  if (!c) c = bpf_map_lookup_elem(&rec_groups, k);
  if (c) {
    *c += 1;
    if (*c > 1) return false; /* a slot's first command names its group too */
  } else {
    bpf_map_update_elem(&rec_groups, k, &one, BPF_NOEXIST);
  }
  if (name && !bpf_map_lookup_elem(&rec_names, &k->id)) {
    struct rec_zero_name* z = bpf_map_lookup_elem(&rec_zero, &zero);
    char* dst;
    if (!z) return true;
    bpf_map_update_elem(&rec_names, &k->id, z, BPF_NOEXIST);
    dst = bpf_map_lookup_elem(&rec_names, &k->id);
    if (dst) bpf_probe_read_kernel_str(dst, NVMEOF_NQN_SIZE, (void*)name);
  }
  return true;
}

static __always_inline struct rec_inflight* stamp(__u64 id, int point) {
  struct rec_inflight* e;
  if (!id) return 0;
  e = bpf_map_lookup_elem(&rec_inflight, &id);
  if (!e || point < 0 || point >= NVMEOF_POINTS) return 0;
  if (!e->ts[point]) e->ts[point] = bpf_ktime_get_ns();
  return e;
}

/* Set by the function-entry variants of setup, which track every command until
 * nvme_complete_rq decides (its unsampled entries must be deleted there). */
bool setup_at_entry = false;

/* Host: is the request at `rq` (struct request) sampled? By the wire fields of its command,
 * nvme_req(rq)->cmd, built by the time any hook after setup runs. */
static __always_inline bool host_sampled(__u64 rq) {
  struct nvmeof_wire w = {};
  struct nvme_request___rec* nreq;
  if (!rq) return false;
  if (sample_every_hash_limit == ~0ULL) return true;
  nreq = (struct nvme_request___rec*)(rq + bpf_core_type_size(struct request));
  return nvmeof_read_wire(BPF_CORE_READ(nreq, cmd), &w, false) && sampled(&w);
}

/* Host: is the request `rq` at `id` sampled, as sampled() decides on its command's wire fields?
 * A read or write is decided from the request itself, with plain loads where `rq` is BTF-typed:
 * its wire SLBA is blk_rq_pos() in logical blocks (nvme_setup_rw()) and its command id's low 12
 * bits are rq->tag (sample.h). That spares the two bpf_probe_read_kernel calls of
 * host_sampled() (about 170 instructions) at each of a command's host hooks. Other commands
 * (cdw10-11 of a DSM is no LBA) and untyped `rq` read the built command.
 * __sector is still the first sector at the final completion: blk_update_request() advances it
 * only for a partial one. */
static __always_inline bool host_pick(struct request* rq, __u64 id, bool direct) {
  __u32 lbs, shift = 0;
  int i;
  if (!id) return false;
  if (sample_every_hash_limit == ~0ULL) return true;
  if (!direct || nvmeof_rq_op(rq, true) > 1) return host_sampled(id); /* read 0, write 1 */
  lbs = rq->q->limits.logical_block_size;
#pragma unroll
  for (i = 0; i < 7; i++) shift += (512u << shift) < lbs; /* 512 B .. 64 KiB blocks */
  return nvmeof_picked_cmd(rq->__sector >> shift, (__u32)rq->tag, sample_every_hash_limit);
}

/* Each hook decides alone: an unsampled command costs no lookup of the in-flight table. */
static __always_inline void host_stamp(__u64 id, struct request* rq, bool direct, int point) {
  if (host_pick(rq, id, direct)) stamp(id, point);
}

static __always_inline void target_stamp(__u64 id, struct nvmet_req___nv* req, bool direct,
                                         int point) {
  struct nvmeof_wire w = {};
  if (id && nvmeof_target_pick(req, direct, sample_every_hash_limit, &w)) stamp(id, point);
}

/* The command ended on this node: its record goes to the ring buffer. */
static __always_inline void emit(struct rec_inflight* e) {
  struct nvmeof_record* r = bpf_ringbuf_reserve(&rec_ring, sizeof(*r), 0);
  int i;
  if (!r) {
    count_event(NVMEOF_RCTR_LOST);
    return;
  }
#pragma unroll
  for (i = 0; i < NVMEOF_POINTS; i++) r->ts[i] = e->ts[i];
  r->slba = e->slba;
  r->bytes = e->bytes;
  r->nlb = e->nlb;
  r->qid = e->qid;
  r->cid = e->cid;
  r->cntlid = e->cntlid;
  r->role = e->role;
  r->opcode = e->opcode;
  r->trtype = e->trtype;
  r->disk[0] = 0;
  r->nqn[0] = 0;
  if (e->disk) {
    bpf_probe_read_kernel_str(r->disk, sizeof(r->disk),
                              (void*)(e->disk + bpf_core_field_offset(struct gendisk, disk_name)));
  }
  if (e->nqn) bpf_probe_read_kernel_str(r->nqn, sizeof(r->nqn), (void*)e->nqn);
  r->hostnqn[0] = 0;
  if (e->hostnqn) bpf_probe_read_kernel_str(r->hostnqn, sizeof(r->hostnqn), (void*)e->hostnqn);
  /* No wakeup per record (at QD1 every record would wake the reader, which polls every 100
   * ms anyway: an IPI and two context switches per record, more than all the programs);
   * a quarter-full ring wakes it at once. */
  bpf_ringbuf_submit(r, bpf_ringbuf_query(&rec_ring, BPF_RB_AVAIL_DATA) >
                                bpf_ringbuf_query(&rec_ring, BPF_RB_RING_SIZE) / 4
                            ? BPF_RB_FORCE_WAKEUP
                            : BPF_RB_NO_WAKEUP);
}

/* ---- host ---- */

/* cmd: the built command (tracepoint variants), or 0 (function entry: decided at
 * nvme_complete_rq). */
static __always_inline void on_setup(struct request* rq, const void* cmd, bool direct) {
  struct rec_inflight e = {};
  struct nvmeof_wire w = {};
  __u64 disk, id, start, now;
  if (cmd) {
    if (!nvmeof_read_wire(cmd, &w, direct) || !sampled(&w)) return;
  } else if (!setup_at_entry) {
    setup_at_entry = true;
  }
  disk = nvmeof_rq_disk(rq, direct, &rec_counters, rec_counters_SCRATCH, &rec_counters_addr);
  if (!disk) return; /* admin and fabrics commands */
  id = as_id(rq, direct);
  if (!id) return;
  now = bpf_ktime_get_ns();
  start = NVMEOF_READ(direct, rq, start_time_ns);
  if (start && start <= now) e.ts[NVMEOF_HP_ALLOC] = start;
  e.ts[NVMEOF_HP_SETUP] = now;
  e.role = NVMEOF_ROLE_HOST;
  e.disk = disk;
  /* BPF_ANY: a requeued request is set up again and timed from there. */
  if (bpf_map_update_elem(&rec_inflight, &id, &e, BPF_ANY)) count_event(NVMEOF_RCTR_INFLIGHT_FULL);
}

static __always_inline void on_rdma_sent(__u64 id, struct request* rq, bool direct) {
  struct rec_inflight* e;
  if (!host_pick(rq, id, direct)) return;
  e = bpf_map_lookup_elem(&rec_inflight, &id);
  if (e && !e->ts[NVMEOF_HP_RESPONSE] && !e->ts[NVMEOF_HP_SENT]) {
    e->ts[NVMEOF_HP_SENT] = bpf_ktime_get_ns();
  }
}

/* The transport's name as NVMEOF_TRTYPE_* (0 for PCIe, which has no fabrics options). */
static __always_inline __u8 host_trtype(struct nvmf_ctrl_options___rec* opts) {
  char t[4] = {};
  const char* name;
  if (!opts) return 0;
  name = BPF_CORE_READ(opts, transport);
  if (!name || bpf_probe_read_kernel_str(t, sizeof(t), name) < 0) return 0;
  if (t[0] == 'r' && t[1] == 'd') return NVMEOF_TRTYPE_RDMA;
  if (t[0] == 't' && t[1] == 'c') return NVMEOF_TRTYPE_TCP;
  if (t[0] == 'f' && t[1] == 'c') return NVMEOF_TRTYPE_FC;
  if (t[0] == 'l' && t[1] == 'o') return NVMEOF_TRTYPE_LOOP;
  return 0;
}

static __always_inline void on_complete_rq(struct request* rq, bool direct) {
  struct nvme_request___rec* nreq;
  struct nvme_ctrl___rec* ctrl;
  struct nvmf_ctrl_options___rec* opts;
  struct nvmeof_record_group g = {};
  struct rec_inflight* e;
  struct blk_mq_hw_ctx* hctx;
  struct nvmeof_wire w = {};
  __u64 disk, id, host;
  __u32 op;
  bool wire = false;
  __u8 trtype;
  disk = nvmeof_rq_disk(rq, direct, &rec_counters, rec_counters_SCRATCH, &rec_counters_addr);
  if (!disk) return;
  id = as_id(rq, direct);
  nreq = (struct nvme_request___rec*)(id + bpf_core_type_size(struct request));
  /* A read or write is counted and decided from the request (host_pick), its NVMe opcode
   * nvme_setup_rw()'s; other commands from the command built. */
  op = nvmeof_rq_op(rq, direct);
  if (direct && op <= 1) {
    g.opcode = op ? 0x01 : 0x02; /* REQ_OP_WRITE: nvme_cmd_write; REQ_OP_READ: nvme_cmd_read */
  } else {
    if (!nvmeof_read_wire(BPF_CORE_READ(nreq, cmd), &w, false)) return;
    wire = true;
    g.opcode = w.opcode;
  }
  g.id = disk;
  g.role = NVMEOF_ROLE_HOST;
  g.size = nvmeof_size_class(NVMEOF_READ(direct, rq, __data_len));
  /* The host's groups are the disk's (trtype 0), its transport kept once per group in
   * rec_trtypes, which the loader puts in the key: reading it per command (the controller,
   * its options, the transport's name) cost about 340 instructions. */
  if (count_group(&g, disk + bpf_core_field_offset(struct gendisk, disk_name))) {
    ctrl = BPF_CORE_READ(nreq, ctrl);
    trtype = host_trtype(ctrl ? BPF_CORE_READ(ctrl, opts) : 0);
    bpf_map_update_elem(&rec_trtypes, &disk, &trtype, BPF_ANY);
  }

  if (wire ? !sampled(&w) : !host_pick(rq, id, direct)) {
    if (setup_at_entry) bpf_map_delete_elem(&rec_inflight, &id);
    return;
  }
  if (!wire && !nvmeof_read_wire(BPF_CORE_READ(nreq, cmd), &w, false)) return;
  e = stamp(id, NVMEOF_HP_COMPLETE);
  if (!e) return;
  ctrl = BPF_CORE_READ(nreq, ctrl);
  opts = ctrl ? BPF_CORE_READ(ctrl, opts) : 0;
  e->slba = w.slba;
  e->cid = w.cid;
  e->nlb = w.nlb;
  e->opcode = w.opcode;
  e->trtype = host_trtype(opts);
  e->bytes = NVMEOF_READ(direct, rq, __data_len);
  hctx = BPF_CORE_READ(rq, mq_hctx);
  e->qid = hctx ? BPF_CORE_READ(hctx, queue_num) + 1 : 0;
  e->cntlid = ctrl ? BPF_CORE_READ(ctrl, cntlid) : 0;
  e->nqn = opts ? (__u64)BPF_CORE_READ(opts, subsysnqn) : 0;
  host = opts ? (__u64)BPF_CORE_READ(opts, host) : 0;
  e->hostnqn = host ? host + bpf_core_field_offset(struct nvmf_host___rec, nqn) : 0;
}

/* Whether `rq` may be an NVMe request, by its disk's name ("nvme*"), read with plain loads where
 * `rq` is BTF-typed: block_rq_complete fires for every disk, and host_pick() may read the
 * driver data after struct request as an NVMe one (two bpf_probe_read_kernel calls; on another
 * driver's request, of whatever that holds). Elsewhere host_pick() decides alone. */
static __always_inline bool maybe_nvme(struct request* rq, bool direct) {
  struct gendisk* disk;
  if (!direct || bpf_core_field_exists(((struct request___old*)0)->rq_disk)) return true;
  disk = rq->q->disk;
  return disk && disk->disk_name[0] == 'n' && disk->disk_name[1] == 'v' &&
         disk->disk_name[2] == 'm' && disk->disk_name[3] == 'e';
}

static __always_inline void on_end(struct request* rq, bool direct) {
  struct rec_inflight* e;
  __u64 id;
  if (!maybe_nvme(rq, direct)) return;
  id = as_id(rq, direct);
  if (!host_pick(rq, id, direct)) return;
  e = stamp(id, NVMEOF_HP_END);
  if (!e) return;
  if (e->ts[NVMEOF_HP_COMPLETE]) emit(e); /* not completed through NVMe: not a command */
  bpf_map_delete_elem(&rec_inflight, &id);
}

/* ---- target ---- */

/* The capsule's receive processing starts: stash the time for on_init on this CPU. */
static __always_inline void on_recv(void) { recv_stash(slot(rec_counters_RECV)); }

static __always_inline void on_tcp_arrival(__u64 sq) {
  if (sq) arrival_stash(&rec_arrivals, sq);
}

static __always_inline void on_init(__u64 id, struct nvmet_req___nv* req, struct nvmet_sq___nv* sq,
                                    bool direct) {
  struct rec_inflight e = {};
  struct nvmeof_wire w = {};
  __u64 recv = recv_take(slot(rec_counters_RECV)), now;
  __u16 qid;
  if (!id || !sq) return;
  qid = NVMEOF_READ(direct, sq, qid);
  if (qid == 0) return; /* admin */
  if (!recv) recv = arrival_take(&rec_arrivals, as_id(sq, direct));
  if (!nvmeof_read_wire(NVMEOF_READ(direct, req, cmd), &w, direct) || !sampled(&w)) return;
  now = bpf_ktime_get_ns();
  e.ts[NVMEOF_TP_RECV] = recv_point(recv, now);
  e.ts[NVMEOF_TP_INIT] = now;
  e.role = NVMEOF_ROLE_TARGET;
  e.qid = qid;
  e.cid = w.cid;
  e.slba = w.slba;
  e.nlb = w.nlb;
  e.opcode = w.opcode;
  if (bpf_map_update_elem(&rec_inflight, &id, &e, BPF_ANY)) count_event(NVMEOF_RCTR_INFLIGHT_FULL);
}

static __always_inline void on_done(__u64 id, struct nvmet_req___nv* req, bool direct) {
  struct nvmeof_record_group g = {};
  struct nvmet_sq___nv* sq;
  struct nvmet_subsys___nv* subsys;
  struct nvmet_port___nv* port;
  struct nvmet_ctrl___rec* tctrl;
  struct rec_inflight* e;
  struct nvmeof_wire w = {};
  __u8 opcode = 0;

  if (!target_io(req, direct, &sq, &subsys, &opcode)) return;
  port = NVMEOF_READ(direct, req, port);
  g.id = as_id(subsys, direct);
  g.role = NVMEOF_ROLE_TARGET;
  g.trtype = port ? NVMEOF_READ(direct, port, disc_addr.trtype) : 0;
  g.opcode = opcode;
  g.size = nvmeof_size_class(NVMEOF_READ(direct, req, transfer_len));
  count_group(&g, (__u64)NVMEOF_READ(direct, subsys, subsysnqn));

  if (!nvmeof_target_pick(req, direct, sample_every_hash_limit, &w)) return;
  e = stamp(id, NVMEOF_TP_DONE);
  if (!e) return;
  e->trtype = g.trtype;
  e->bytes = NVMEOF_READ(direct, req, transfer_len);
  tctrl = (struct nvmet_ctrl___rec*)NVMEOF_READ(direct, (struct nvmet_sq___rec*)sq, ctrl);
  if (tctrl) {
    e->cntlid = NVMEOF_READ(direct, tctrl, cntlid);
    e->hostnqn = as_id(tctrl, direct) + bpf_core_field_offset(struct nvmet_ctrl___rec, hostnqn);
  }
  e->nqn = (__u64)NVMEOF_READ(direct, subsys, subsysnqn);
  if (target_sent_hooked(&rec_config, g.trtype)) return;
  emit(e); /* no response hook for this transport: ends here */
  bpf_map_delete_elem(&rec_inflight, &id);
}

static __always_inline void on_sent(__u64 id, struct nvmet_req___nv* req, bool direct) {
  struct rec_inflight* e;
  struct nvmeof_wire w = {};
  if (!id || !nvmeof_target_pick(req, direct, sample_every_hash_limit, &w)) return;
  e = bpf_map_lookup_elem(&rec_inflight, &id);
  if (!e || !e->ts[NVMEOF_TP_DONE]) return;
  e->ts[NVMEOF_TP_SENT] = bpf_ktime_get_ns();
  emit(e);
  bpf_map_delete_elem(&rec_inflight, &id);
}

#include "nvmeof_hooks.bpf.h"
