// SPDX-License-Identifier: GPL-2.0
/* Connection lifecycle: RDMA-CM events, host controller state changes, failed connects and
 * keep-alive failures, and on the target Connect commands, keep-alive expiries and the
 * controllers connected now (key/value structs: lifecycle_maps.h; hook table and decoding:
 * loader/lifecycle.cc).
 *
 * No program here runs per healthy I/O command: every hooked function runs once per connection
 * event (a CM event, a state change, a Connect command, a controller's allocation or release, a
 * keep-alive timer or completion) or per I/O that a multipath head fails over, requeues or
 * routes anew (after a path changed; with the numa policy, while its path is not optimized). So
 * every program reads through bpf_probe_read_kernel (BPF_CORE_READ), whatever its mechanism: the
 * cost does not matter here, one code path does.
 *
 * Each function hook has a kprobe and an fentry variant, kprobe first (the hook table's order):
 * fentry/fexit pin the module they hook from kernel 6.0 on, and these hooks live in nvme_core,
 * nvme_fabrics, nvmet and rdma_cm, which `rmmod` must still be able to unload while the exporter
 * runs; a kprobe does not pin it (the loader detaches it when the module goes). Where a return
 * value is needed, an entry program stashes the arguments per thread (lc_stash) and the return
 * program (kretprobe or fexit) reads them back: kretprobes see no arguments. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "lifecycle_maps.h"

char LICENSE[] SEC("license") = "GPL";

/* Module types, declared locally (not in the build machine's vmlinux.h); CO-RE finds their
 * fields in the module BTF at load. Checked against Debian 6.1.0-57 and 6.12.117: the same
 * fields in both. Enums are declared as enums: libbpf does not relocate an int onto an enum. */
enum nvme_ctrl_state___lc { NVME_CTRL_NEW___lc = 0, NVME_CTRL_DELETING___lc = 4 };
enum rdma_cm_event_type___lc { RDMA_CM_EVENT_ADDR_RESOLVED___lc = 0 };

struct nvmf_ctrl_options___lc {
  char* transport;
  char* traddr;
  char* trsvcid;
} __attribute__((preserve_access_index));

struct nvme_ctrl___lc {
  enum nvme_ctrl_state___lc state;
  int instance;
  struct nvmf_ctrl_options___lc* opts;
  __u32 nanagrpid; /* CONFIG_NVME_MULTIPATH */
} __attribute__((preserve_access_index));

/* A multipath head (CONFIG_NVME_MULTIPATH): its disk, and the I/O it requeued for want of a
 * usable path, which requeue_work resubmits. */
struct nvme_ns_head___lc {
  struct gendisk* disk;
  struct bio_list requeue_list;
  struct work_struct requeue_work;
} __attribute__((preserve_access_index));

/* nvme_failover_req's path: the request's queue is the path disk's, whose queuedata is the
 * struct nvme_ns of that path (one controller). */
struct nvme_ns___lc {
  struct nvme_ctrl___lc* ctrl;
  struct nvme_ns_head___lc* head;
} __attribute__((preserve_access_index));

/* One group of the ANA log page (include/linux/nvme.h; grpid is little endian, as is BPF on
 * the architectures Debian builds this for). */
struct nvme_ana_group_desc___lc {
  __u32 grpid;
  __u8 state;
} __attribute__((preserve_access_index));

struct nvmet_subsys___lc {
  char* subsysnqn;
} __attribute__((preserve_access_index));

struct nvmet_ctrl___lc {
  struct nvmet_subsys___lc* subsys;
  bool reset_tbkas;
  struct kref ref;
  struct delayed_work ka_work;
  char hostnqn[256];
} __attribute__((preserve_access_index));

union nvme_result___lc {
  __u32 u32;
} __attribute__((preserve_access_index));

struct nvme_completion___lc {
  union nvme_result___lc result;
  __u16 status; /* little endian: (SCT << 8 | SC) << 1 | phase, and the DNR/MORE bits */
} __attribute__((preserve_access_index));

struct nvmet_sq___lc {
  struct nvmet_ctrl___lc* ctrl;
} __attribute__((preserve_access_index));

/* nvmet_alloc_ctrl() took (subsysnqn, hostnqn, req, kato, ctrlp) and returned a status up to
 * 6.12; newer kernels (Debian's 7.2) pass one struct nvmet_alloc_ctrl_args * and return the
 * controller, or NULL. Whether this type exists tells the two apart (CO-RE, at load). */
struct nvmet_alloc_ctrl_args___lc {
  char* subsysnqn;
} __attribute__((preserve_access_index));

struct nvmet_req___lc {
  struct nvme_completion___lc* cqe;
  struct nvmet_sq___lc* sq;
} __attribute__((preserve_access_index));

struct ib_device___lc {
  char name[64];
} __attribute__((preserve_access_index));

struct rdma_cm_id___lc {
  struct ib_device___lc* device;
  __u32 port_num; /* u32 since 5.12 ("RDMA: Support more than 255 rdma ports"), u8 before */
} __attribute__((preserve_access_index));

struct rdma_id_private___lc {
  struct rdma_cm_id___lc id;
} __attribute__((preserve_access_index));

struct rdma_cm_event___lc {
  enum rdma_cm_event_type___lc event;
  int status;
} __attribute__((preserve_access_index));

/* Counts per event key; entries are never deleted, so counters only grow. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, NVMEOF_LC_COUNTS_MAX);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct nvmeof_lc_key);
  __type(value, __u64);
} lc_counts SEC(".maps");

/* Target controllers connected now: inserted when nvmet_alloc_ctrl succeeds, removed at
 * nvmet_ctrl_free. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, NVMEOF_LC_CTRLS_MAX);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u64);
  __type(value, struct nvmeof_lc_ctrl);
} lc_ctrls SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, NVMEOF_LC_LOST_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} lc_lost SEC(".maps");

/* The ANA state each host controller last reported per group: nvme_update_ana_state runs for
 * every group at every ANA log read (a change notice, a failed-over ANA error, a reconnect),
 * mostly repeating the state, so only a change is counted. Keyed by the controller's address,
 * not its instance number: a new controller that reuses a deleted one's number counts its
 * first states. A controller's entries go when it is deleted (forget_ana), since a new one may
 * be allocated at its address; LRU for groups past the first 16. */
struct lc_ana_key {
  __u64 ctrl;
  __u32 grpid;
  __u32 pad;
};
struct lc_ana_last {
  __u32 state;
  __u32 pad;
  __u64 since_ns; /* when it was first read in this state (bpf_ktime_get_ns) */
};
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 1024);
  __type(key, struct lc_ana_key);
  __type(value, struct lc_ana_last);
} lc_ana_last SEC(".maps");

/* Per multipath head (its address): since when its I/O is stalled (0: not stalled), and how
 * many failed-over bios its requeue list holds that its requeue work has not counted yet.
 * LRU: a deleted head ages out. */
struct lc_head {
  __u64 stall_start_ns;
  __u64 failover_bios;
};
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 1024);
  __type(key, __u64);
  __type(value, struct lc_head);
} lc_heads SEC(".maps");

/* Which function's call a stash belongs to: calls nest (nvmf_dev_write -> ... ->
 * nvmf_connect_admin_queue -> nvme_change_ctrl_state; nvme_requeue_work -> __nvme_find_path),
 * so each has its own. */
enum lc_fn {
  FN_STATE = 1,
  FN_DEVWRITE,
  FN_ADMINQ,
  FN_TCONNECT_ADMIN,
  FN_TCONNECT_IO,
  FN_ALLOC,
  FN_FIND_PATH,
  FN_REQUEUE
};

struct lc_stash_key {
  __u64 tid;
  __u32 fn;
  __u32 pad;
};

struct lc_stash {
  __u64 ptr;
  __u64 ptr2;
  __s32 status;
  __u32 state;
  char nqn[NVMEOF_LC_NQN_SIZE];
};

/* LRU: a call whose return was never seen (return program missing) does not leak an entry. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 1024);
  __type(key, struct lc_stash_key);
  __type(value, struct lc_stash);
} lc_stash SEC(".maps");

/* Scratch values, too large for the 512-byte BPF stack. */
struct lc_scratch {
  struct nvmeof_lc_key key;
  struct nvmeof_lc_ctrl ctrl;
  struct lc_stash stash;
  __u64 walk_n; /* count_bios */
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct lc_scratch);
} lc_scratch SEC(".maps");

static __always_inline struct lc_scratch* scratch(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&lc_scratch, &zero);
}

static __always_inline void lost(__u32 which) {
  __u64* c = bpf_map_lookup_elem(&lc_lost, &which);
  if (c) *c += 1;
}

static __always_inline struct nvmeof_lc_key* new_key(__u32 kind) {
  struct lc_scratch* s = scratch();
  if (!s) return 0;
  __builtin_memset(&s->key, 0, sizeof(s->key));
  s->key.kind = kind;
  return &s->key;
}

static __always_inline void add(struct nvmeof_lc_key* k, __u64 n) {
  __u64* v = bpf_map_lookup_elem(&lc_counts, k);
  if (v) {
    __sync_fetch_and_add(v, n);
    return;
  }
  if (bpf_map_update_elem(&lc_counts, k, &n, BPF_NOEXIST) == 0) return;
  v = bpf_map_lookup_elem(&lc_counts, k); /* another CPU inserted it meanwhile */
  if (v) {
    __sync_fetch_and_add(v, n);
  } else {
    lost(NVMEOF_LC_LOST_COUNTS);
  }
}

static __always_inline void count(struct nvmeof_lc_key* k) { add(k, 1); }

static __always_inline struct lc_stash* stash_new(__u32 fn) {
  struct lc_stash_key key = {.tid = bpf_get_current_pid_tgid(), .fn = fn};
  struct lc_scratch* s = scratch();
  if (!s) return 0;
  __builtin_memset(&s->stash, 0, sizeof(s->stash));
  if (bpf_map_update_elem(&lc_stash, &key, &s->stash, BPF_ANY) != 0) return 0;
  return bpf_map_lookup_elem(&lc_stash, &key);
}

static __always_inline struct lc_stash* stash_get(__u32 fn) {
  struct lc_stash_key key = {.tid = bpf_get_current_pid_tgid(), .fn = fn};
  return bpf_map_lookup_elem(&lc_stash, &key);
}

static __always_inline void stash_drop(__u32 fn) {
  struct lc_stash_key key = {.tid = bpf_get_current_pid_tgid(), .fn = fn};
  bpf_map_delete_elem(&lc_stash, &key);
}

/* An NVMe status as the host's submit path returns it (cqe status >> 1, with DNR and MORE) ->
 * SCT << 8 | SC; errors (< 0) stay. */
static __always_inline __s32 nvme_status(long ret) {
  return ret > 0 ? (__s32)(ret & 0x7ff) : (__s32)ret;
}

/* ---- RDMA-CM ---- */

static __always_inline void on_cm_event(void* id_priv, void* event) {
  struct rdma_id_private___lc* idp = id_priv;
  struct rdma_cm_event___lc* ev = event;
  struct ib_device___lc* dev;
  struct nvmeof_lc_key* k = new_key(NVMEOF_LC_CM_EVENT);
  if (!k || !idp || !ev) return;
  k->a = (__u32)BPF_CORE_READ(ev, event);
  k->b = BPF_CORE_READ(ev, status);
  /* Read with the field's own size, whichever it is here. */
  k->c = (__u32)BPF_CORE_READ_BITFIELD_PROBED(&idp->id, port_num);
  dev = BPF_CORE_READ(idp, id.device);
  if (dev) bpf_core_read_str(k->name, sizeof(dev->name), &dev->name);
  count(k);
}

/* ---- host ---- */

/* A controller being deleted: its groups' last ANA states go (lc_ana_last), so a controller
 * allocated later at the same address counts its first states (as one at a new address does)
 * instead of inheriting these. Group ids run 1..nanagrpid; the first 16 are forgotten, the rest
 * age out of the LRU. */
static __always_inline void forget_ana(struct nvme_ctrl___lc* ctrl) {
  struct lc_ana_key key = {.ctrl = (__u64)ctrl};
  __u32 n, g;
  if (!bpf_core_field_exists(ctrl->nanagrpid)) return;
  n = BPF_CORE_READ(ctrl, nanagrpid);
#pragma unroll
  for (g = 1; g <= 16; g++) {
    key.grpid = g;
    if (g <= n) bpf_map_delete_elem(&lc_ana_last, &key);
  }
}

static __always_inline void on_state_entry(void* ctrl, __u32 new_state) {
  struct lc_stash* s = stash_new(FN_STATE);
  if (!s) return;
  s->ptr = (__u64)ctrl;
  s->status = (__s32)BPF_CORE_READ((struct nvme_ctrl___lc*)ctrl, state);
  s->state = new_state;
}

static __always_inline void on_state_exit(long ret) {
  struct lc_stash* s = stash_get(FN_STATE);
  struct nvmeof_lc_key* k;
  struct nvme_ctrl___lc* ctrl;
  __s32 from;
  __u32 to;
  if (!s) return;
  ctrl = (struct nvme_ctrl___lc*)s->ptr;
  from = s->status;
  to = s->state;
  stash_drop(FN_STATE);
  /* A bool: only the low byte is the return value. */
  if (!(ret & 0xff) || !ctrl) return;
  if (to == bpf_core_enum_value(enum nvme_ctrl_state___lc, NVME_CTRL_DELETING___lc))
    forget_ana(ctrl);
  if (!(k = new_key(NVMEOF_LC_STATE))) return;
  k->a = (__u32)BPF_CORE_READ(ctrl, instance);
  k->b = from;
  k->c = to;
  count(k);
}

static __always_inline void on_keep_alive_end(struct request* rq, __u8 status) {
  struct nvmeof_lc_key* k;
  void* ctrl;
  if (!status || !rq) return;
  ctrl = BPF_CORE_READ(rq, end_io_data);
  if (!ctrl || !(k = new_key(NVMEOF_LC_KA_FAIL))) return;
  k->a = (__u32)BPF_CORE_READ((struct nvme_ctrl___lc*)ctrl, instance);
  count(k);
}

/* `nvme connect` writes its option string to /dev/nvme-fabrics: nvmf_dev_write() creates the
 * controller in the writer's thread and returns -errno when that fails. */
static __always_inline void on_devwrite_entry(const void* ubuf, __u64 len) {
  struct lc_stash* s = stash_new(FN_DEVWRITE);
  if (!s) return;
  s->ptr = (__u64)ubuf;
  s->ptr2 = len;
}

static __always_inline void on_devwrite_exit(long ret) {
  struct lc_stash* s = stash_get(FN_DEVWRITE);
  struct nvmeof_lc_key* k;
  __u64 n;
  if (!s) return;
  if (ret < 0 && (k = new_key(NVMEOF_LC_CONNECT_FAIL))) {
    k->a = NVMEOF_LC_OPTS_STRING;
    /* The Connect command's NVMe status when that was the failure: the transports turn it
     * into -EIO. */
    k->b = s->status ? s->status : (__s32)ret;
    n = s->ptr2;
    if (n > NVMEOF_LC_NAME_SIZE - 1) n = NVMEOF_LC_NAME_SIZE - 1;
    bpf_probe_read_user(k->name, n, (const void*)s->ptr);
    count(k);
  }
  stash_drop(FN_DEVWRITE);
}

static __always_inline void on_adminq_entry(void* ctrl) {
  struct lc_stash* s = stash_new(FN_ADMINQ);
  if (s) s->ptr = (__u64)ctrl;
}

/* A failed admin queue Connect: within `nvme connect` its status goes to that write's count;
 * else it is a reconnect (the controller's reconnect work), counted here with the target
 * address from the controller's options. */
static __always_inline void on_adminq_exit(long ret) {
  struct lc_stash* s = stash_get(FN_ADMINQ);
  struct lc_stash* w;
  struct nvmeof_lc_key* k;
  struct nvmf_ctrl_options___lc* o;
  struct nvme_ctrl___lc* ctrl;
  if (!s) return;
  ctrl = (struct nvme_ctrl___lc*)s->ptr;
  stash_drop(FN_ADMINQ);
  if (ret != 0 && ctrl) {
    w = stash_get(FN_DEVWRITE);
    if (w) {
      w->status = nvme_status(ret);
    } else if ((k = new_key(NVMEOF_LC_CONNECT_FAIL))) {
      k->a = NVMEOF_LC_OPTS_FIELDS;
      k->b = nvme_status(ret);
      o = BPF_CORE_READ(ctrl, opts);
      if (o) {
        bpf_probe_read_kernel_str(&k->name[0], NVMEOF_LC_TRADDR_AT, BPF_CORE_READ(o, transport));
        bpf_probe_read_kernel_str(&k->name[NVMEOF_LC_TRADDR_AT],
                                  NVMEOF_LC_TRSVCID_AT - NVMEOF_LC_TRADDR_AT,
                                  BPF_CORE_READ(o, traddr));
        bpf_probe_read_kernel_str(&k->name[NVMEOF_LC_TRSVCID_AT], 32, BPF_CORE_READ(o, trsvcid));
      }
      count(k);
    }
  }
}

/* ---- host multipath ---- */

/* A command that failed with a path error (an ANA state, a transport abort) or whose path is
 * going away is requeued on the multipath head for another path: counted on the path it
 * left. Runs per such command, never on a path's healthy I/O. */
static __always_inline struct lc_head* head_state(struct nvme_ns_head___lc* head) {
  __u64 key = (__u64)head;
  struct lc_head zero = {}, *h = bpf_map_lookup_elem(&lc_heads, &key);
  if (h || !head) return h;
  bpf_map_update_elem(&lc_heads, &key, &zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&lc_heads, &key);
}

static __always_inline void stall_open(struct lc_head* h) {
  if (h && !h->stall_start_ns) h->stall_start_ns = bpf_ktime_get_ns();
}

struct bio_walk {
  struct bio* bio;
  __u64* n; /* in lc_scratch, not on the stack: see count_bios */
};

static long bio_step(__u64 i, void* ctx) {
  struct bio_walk* w = ctx;
  struct bio* bio = w->bio; /* a local: CO-RE relocates the read from it, not bio_walk's field */
  if (!bio) return 1;
  *w->n += 1;
  w->bio = BPF_CORE_READ(bio, bi_next);
  return 0;
}

/* The bios of a chain (bi_next), up to a bound no requeue list or request reaches. bpf_loop
 * (5.17+; these hooks need module BTF, so 6.1+ here): a bounded loop of that length is too
 * many instructions for the verifier. The count lives in a map value: a counter on the stack
 * is an exact value per iteration, and newer verifiers (7.2) then check the callback once per
 * count without converging, past their instruction limit. */
static __always_inline __u64 count_bios(struct bio* bio) {
  struct lc_scratch* s = scratch();
  struct bio_walk w = {.bio = bio};
  if (!s) return 0;
  s->walk_n = 0;
  w.n = &s->walk_n;
  bpf_loop(1 << 16, bio_step, &w, 0);
  return s->walk_n;
}

/* Its bios go to the head's requeue list (blk_steal_bios): the requeue work counts them there
 * and leaves them out of the I/O without a usable path. */
static __always_inline void on_failover(struct request* req) {
  struct nvme_ns___lc* ns;
  struct nvmeof_lc_key* k;
  struct lc_head* h;
  if (!req) return;
  ns = BPF_CORE_READ(req, q, queuedata);
  if (!ns) return;
  if ((h = head_state(BPF_CORE_READ(ns, head)))) {
    __sync_fetch_and_add(&h->failover_bios, count_bios(BPF_CORE_READ(req, bio)));
    stall_open(h);
  }
  if (!(k = new_key(NVMEOF_LC_FAILOVER))) return;
  k->a = (__u32)BPF_CORE_READ(ns, ctrl, instance);
  count(k);
}

/* A key of `kind` named by the head's disk (nvme<X>n<Y>). */
static __always_inline struct nvmeof_lc_key* head_key(__u32 kind, struct nvme_ns_head___lc* head) {
  struct nvmeof_lc_key* k = new_key(kind);
  struct gendisk* disk = BPF_CORE_READ(head, disk);
  if (k && disk) bpf_core_read_str(k->name, 32 /* DISK_NAME_LEN */, &disk->disk_name);
  return k;
}

/* __nvme_find_path(head, node): the head looks for a usable path when it has no current one
 * (after a path changed or failed, and with the numa policy while the current path is not
 * optimized). It returns none when no path is usable: the I/O is then requeued, or failed when
 * no path can come back (nvme_ns_head_submit_bio), and the head's stall begins. Runs per such
 * I/O only. */
static __always_inline void on_find_path_entry(void* head) {
  struct lc_stash* s = stash_new(FN_FIND_PATH);
  if (s) s->ptr = (__u64)head;
}

static __always_inline void on_find_path_exit(long ret) {
  struct lc_stash* s = stash_get(FN_FIND_PATH);
  struct nvme_ns_head___lc* head;
  if (!s) return;
  head = (struct nvme_ns_head___lc*)s->ptr;
  stash_drop(FN_FIND_PATH);
  if (ret || !head) return;
  stall_open(head_state(head));
  s = stash_get(FN_REQUEUE); /* resubmitted by the requeue work, and still no path */
  if (s && s->ptr == (__u64)head) s->status = 1;
}

/* nvme_requeue_work(work): takes the head's whole requeue list and resubmits it. What the list
 * holds beyond the failed-over bios was requeued for want of a usable path (also where the
 * round-robin policy met its current path unusable without calling __nvme_find_path): counted
 * here, once per requeue, as the kernel's io_requeue_no_usable_path_count does. A stall ends
 * when a run resubmitted I/O, none of it found no path, and nothing is requeued again at its
 * end: every requeued I/O is on a path. */
static __always_inline void on_requeue_entry(void* work) {
  struct nvme_ns_head___lc* head;
  struct nvmeof_lc_key* k;
  struct lc_stash* s;
  struct lc_head* h;
  __u64 n, failed_over;
  if (!work) return;
  head = (void*)work - bpf_core_field_offset(struct nvme_ns_head___lc, requeue_work);
  n = count_bios(BPF_CORE_READ(head, requeue_list.head));
  if (!n || !(h = head_state(head))) return; /* a kick with nothing requeued */
  failed_over = h->failover_bios < n ? h->failover_bios : n;
  __sync_fetch_and_add(&h->failover_bios, -failed_over);
  if (n > failed_over && (k = head_key(NVMEOF_LC_NO_PATH, head))) add(k, n - failed_over);
  stall_open(h); /* requeued without a failover seen, and no path found before */
  if ((s = stash_new(FN_REQUEUE))) s->ptr = (__u64)head;
}

static __always_inline void stall_close(struct nvme_ns_head___lc* head) {
  __u64 key = (__u64)head, ns, bound = 1000000;
  struct lc_head* h = bpf_map_lookup_elem(&lc_heads, &key);
  struct nvmeof_lc_key* k;
  __u32 b = 0;
  if (!h || !h->stall_start_ns) return;
  ns = bpf_ktime_get_ns() - h->stall_start_ns;
  h->stall_start_ns = 0;
  for (; b < NVMEOF_LC_STALL_BUCKETS && ns > bound; ++b) bound <<= 1;
  if ((k = head_key(NVMEOF_LC_STALL, head))) {
    k->a = b;
    count(k);
    k->kind = NVMEOF_LC_STALL_SUM_US;
    k->a = 0;
    add(k, ns / 1000);
  }
}

static __always_inline void on_requeue_exit(void) {
  struct lc_stash* s = stash_get(FN_REQUEUE);
  struct nvme_ns_head___lc* head;
  __s32 no_path;
  if (!s) return;
  head = (struct nvme_ns_head___lc*)s->ptr;
  no_path = s->status;
  stash_drop(FN_REQUEUE);
  if (!no_path && head && !BPF_CORE_READ(head, requeue_list.head)) stall_close(head);
}

#define NVME_ANA_CHANGE 0x0f

/* One group descriptor of an ANA log the controller just read; counted only when its state
 * differs from the one last seen for this controller and group (lc_ana_last). The log is read
 * under the controller's ana_lock, so calls for one controller do not race. */
static __always_inline void on_ana_state(void* ctrl, void* desc) {
  struct nvme_ana_group_desc___lc* d = desc;
  struct lc_ana_key key = {.ctrl = (__u64)ctrl};
  struct lc_ana_last *last, now = {};
  struct nvmeof_lc_key* k;
  __u32 instance;
  if (!ctrl || !d) return;
  key.grpid = BPF_CORE_READ(d, grpid);
  now.state = BPF_CORE_READ(d, state);
  last = bpf_map_lookup_elem(&lc_ana_last, &key);
  if (last && last->state == now.state) return;
  now.since_ns = bpf_ktime_get_ns();
  instance = (__u32)BPF_CORE_READ((struct nvme_ctrl___lc*)ctrl, instance);
  /* Leaving `change` (NVME_ANA_CHANGE): the time the group spent in it, as this host read it. */
  if (last && last->state == NVME_ANA_CHANGE && (k = new_key(NVMEOF_LC_ANA_CHANGE_US))) {
    k->a = instance;
    k->b = (__s32)key.grpid;
    add(k, (now.since_ns - last->since_ns) / 1000);
  }
  bpf_map_update_elem(&lc_ana_last, &key, &now, BPF_ANY);
  if (!(k = new_key(NVMEOF_LC_ANA))) return;
  k->a = instance;
  k->b = (__s32)key.grpid;
  k->c = now.state;
  count(k);
}

/* ---- target ---- */

static __always_inline void on_tconnect_entry(void* req, __u32 fn) {
  struct lc_stash* s;
  stash_drop(FN_ALLOC); /* a stale one of an earlier call that failed before allocating */
  s = stash_new(fn);
  if (s) s->ptr = (__u64)req;
}

static __always_inline void read_subsys_nqn(char* dst, struct nvmet_ctrl___lc* ctrl) {
  struct nvmet_subsys___lc* subsys = BPF_CORE_READ(ctrl, subsys);
  if (subsys) bpf_probe_read_kernel_str(dst, NVMEOF_LC_NQN_SIZE, BPF_CORE_READ(subsys, subsysnqn));
}

/* The result of a Connect command, read back from its completion entry when the execute
 * function returns: it has set the status there (nvmet_req_complete) just before. The entry
 * is the transport's, reused only once the host sent a new command on that queue, which it
 * does after it received this completion. */
static __always_inline void on_tconnect_exit(__u32 fn, __u32 queue) {
  struct lc_stash* s = stash_get(fn);
  struct lc_stash* alloc;
  struct nvmeof_lc_key* k;
  struct nvmet_req___lc* req;
  struct nvme_completion___lc* cqe;
  struct nvmet_ctrl___lc* ctrl;
  if (!s) return;
  req = (struct nvmet_req___lc*)s->ptr;
  stash_drop(fn);
  if (!req || !(k = new_key(NVMEOF_LC_TARGET_CONNECT))) return;
  k->a = queue;
  cqe = BPF_CORE_READ(req, cqe);
  if (!cqe) return;
  k->b = (__s32)((BPF_CORE_READ(cqe, status) >> 1) & 0x7ff);
  k->c = BPF_CORE_READ(cqe, result.u32);
  alloc = stash_get(FN_ALLOC);
  if (alloc) { /* the NQN the host asked for, also when there is no such subsystem */
    bpf_probe_read_kernel_str(k->name, NVMEOF_LC_NQN_SIZE, alloc->nqn);
    stash_drop(FN_ALLOC);
  } else if ((ctrl = BPF_CORE_READ(req, sq, ctrl))) {
    read_subsys_nqn(k->name, ctrl);
  }
  count(k);
}

static __always_inline void on_alloc_entry(const char* subsysnqn, void* ctrlp) {
  struct lc_stash* s = stash_new(FN_ALLOC);
  if (!s) return;
  s->ptr = (__u64)ctrlp;
  bpf_probe_read_kernel_str(s->nqn, sizeof(s->nqn), subsysnqn);
}

/* nvmet_alloc_ctrl()'s entry, either form (nvmet_alloc_ctrl_args___lc). */
static __always_inline void on_alloc_entry_any(void* arg0, void* arg4) {
  if (bpf_core_type_exists(struct nvmet_alloc_ctrl_args___lc)) {
    on_alloc_entry(BPF_CORE_READ((struct nvmet_alloc_ctrl_args___lc*)arg0, subsysnqn), 0);
  } else {
    on_alloc_entry(arg0, arg4);
  }
}

static __always_inline void on_alloc_exit(long ret) {
  struct lc_stash* s = stash_get(FN_ALLOC);
  struct lc_scratch* sc;
  struct nvmet_ctrl___lc* ctrl = 0;
  __u64 id;
  if (!s) return;
  if (bpf_core_type_exists(struct nvmet_alloc_ctrl_args___lc)) {
    ctrl = (struct nvmet_ctrl___lc*)ret; /* NULL: not allocated */
  } else {
    if ((ret & 0xffff) != 0 || !s->ptr) return; /* u16 status: 0 = allocated */
    if (bpf_probe_read_kernel(&ctrl, sizeof(ctrl), (void*)s->ptr) != 0) return;
  }
  if (!ctrl) return;
  if (!(sc = scratch())) return;
  __builtin_memset(&sc->ctrl, 0, sizeof(sc->ctrl));
  sc->ctrl.created_ns = bpf_ktime_get_ns();
  read_subsys_nqn(sc->ctrl.nqn, ctrl);
  bpf_core_read_str(sc->ctrl.hostnqn, sizeof(sc->ctrl.hostnqn), &ctrl->hostnqn);
  id = (__u64)ctrl;
  if (bpf_map_update_elem(&lc_ctrls, &id, &sc->ctrl, BPF_ANY) != 0) lost(NVMEOF_LC_LOST_CTRLS);
}

static __always_inline void on_ctrl_free(void* ref) {
  __u64 id = (__u64)ref - bpf_core_field_offset(struct nvmet_ctrl___lc, ref);
  bpf_map_delete_elem(&lc_ctrls, &id);
}

/* The timer also runs when commands came in since it was armed (traffic-based keep-alive):
 * then it re-arms itself. Only with no traffic does it expire the controller. */
static __always_inline void on_ka_timer(void* work) {
  struct nvmet_ctrl___lc* ctrl =
      (void*)((__u64)work - bpf_core_field_offset(struct nvmet_ctrl___lc, ka_work));
  struct nvmeof_lc_key* k;
  if (BPF_CORE_READ(ctrl, reset_tbkas) || !(k = new_key(NVMEOF_LC_KA_EXPIRY))) return;
  read_subsys_nqn(k->name, ctrl);
  count(k);
}

/* ---- programs: kprobe and fentry (or kretprobe and fexit) per hook ---- */

SEC("tp_btf/cm_event_handler")
int BPF_PROG(lc_cm_tp_btf, void* id_priv, void* event) {
  on_cm_event(id_priv, event);
  return 0;
}
SEC("raw_tp/cm_event_handler")
int BPF_PROG(lc_cm_raw_tp, void* id_priv, void* event) {
  on_cm_event(id_priv, event);
  return 0;
}
SEC("kprobe/cma_cm_event_handler")
int BPF_KPROBE(lc_cm_kprobe, void* id_priv, void* event) {
  on_cm_event(id_priv, event);
  return 0;
}
SEC("fentry/cma_cm_event_handler")
int BPF_PROG(lc_cm_fentry, void* id_priv, void* event) {
  on_cm_event(id_priv, event);
  return 0;
}

/* Entry + return pairs: NAME_kprobe/NAME_fentry stash, NAME_kretprobe/NAME_fexit count. */
#define LC_ENTRY(name, fn, body, ...)          \
  SEC("kprobe/" #fn)                           \
  int BPF_KPROBE(name##_kprobe, __VA_ARGS__) { \
    body;                                      \
    return 0;                                  \
  }                                            \
  SEC("fentry/" #fn)                           \
  int BPF_PROG(name##_fentry, __VA_ARGS__) {   \
    body;                                      \
    return 0;                                  \
  }
#define LC_RETURN(name, fn, body, ...)                \
  SEC("kretprobe/" #fn)                               \
  int BPF_KRETPROBE(name##_kretprobe, long ret) {     \
    body;                                             \
    return 0;                                         \
  }                                                   \
  SEC("fexit/" #fn)                                   \
  int BPF_PROG(name##_fexit, __VA_ARGS__, long ret) { \
    body;                                             \
    return 0;                                         \
  }

/* A return program of a function returning void: fexit has no return value to read. */
#define LC_RETURN_VOID(name, fn, body, ...) \
  SEC("kretprobe/" #fn)                     \
  int BPF_KRETPROBE(name##_kretprobe) {     \
    body;                                   \
    return 0;                               \
  }                                         \
  SEC("fexit/" #fn)                         \
  int BPF_PROG(name##_fexit, __VA_ARGS__) { \
    body;                                   \
    return 0;                               \
  }

LC_ENTRY(lc_state, nvme_change_ctrl_state, on_state_entry(ctrl, new_state), void* ctrl,
         __u32 new_state)
LC_RETURN(lc_state_ret, nvme_change_ctrl_state, on_state_exit(ret), void* ctrl, __u32 new_state)
/* 6.12; 6.1.0-57 has none: its keep-alive completion is inlined in nvme_keep_alive_work. */
LC_ENTRY(lc_ka_end, nvme_keep_alive_end_io, on_keep_alive_end(rq, status), struct request* rq,
         __u8 status)
/* Both in nvme_core's multipath.c (CONFIG_NVME_MULTIPATH). nvme_failover_req is called from
 * core.c, so never inlined; nvme_update_ana_state is static but passed as nvme_parse_ana_log's
 * callback. nvme_update_ns_ana_state (per namespace) is left alone: static, and a group's state
 * is one event however many namespaces it holds. */
LC_ENTRY(lc_failover, nvme_failover_req, on_failover(req), struct request* req)
/* Static in multipath.c, not inlined in Debian's 5.10 to 7.2 (symbol tables). */
LC_ENTRY(lc_findpath, __nvme_find_path, on_find_path_entry(head), void* head, int node)
LC_RETURN(lc_findpath_ret, __nvme_find_path, on_find_path_exit(ret), void* head, int node)
LC_ENTRY(lc_requeue, nvme_requeue_work, on_requeue_entry(work), struct work_struct* work)
LC_RETURN_VOID(lc_requeue_ret, nvme_requeue_work, on_requeue_exit(), struct work_struct* work)
LC_ENTRY(lc_ana, nvme_update_ana_state, on_ana_state(ctrl, desc), void* ctrl, void* desc,
         void* data)
LC_ENTRY(lc_devwrite, nvmf_dev_write, on_devwrite_entry(ubuf, len), void* file, const void* ubuf,
         __u64 len)
LC_RETURN(lc_devwrite_ret, nvmf_dev_write, on_devwrite_exit(ret), void* file, const void* ubuf,
          __u64 len, void* pos)
LC_ENTRY(lc_adminq, nvmf_connect_admin_queue, on_adminq_entry(ctrl), void* ctrl)
LC_RETURN(lc_adminq_ret, nvmf_connect_admin_queue, on_adminq_exit(ret), void* ctrl)
LC_ENTRY(lc_aconn, nvmet_execute_admin_connect, on_tconnect_entry(req, FN_TCONNECT_ADMIN),
         void* req)
LC_RETURN(lc_aconn_ret, nvmet_execute_admin_connect,
          on_tconnect_exit(FN_TCONNECT_ADMIN, NVMEOF_LC_QUEUE_ADMIN), void* req)
LC_ENTRY(lc_iconn, nvmet_execute_io_connect, on_tconnect_entry(req, FN_TCONNECT_IO), void* req)
LC_RETURN(lc_iconn_ret, nvmet_execute_io_connect,
          on_tconnect_exit(FN_TCONNECT_IO, NVMEOF_LC_QUEUE_IO), void* req)
/* Either form of nvmet_alloc_ctrl (nvmet_alloc_ctrl_args___lc): the new one's fentry and fexit do
 * not load (one argument), its kprobes do. */
LC_ENTRY(lc_alloc, nvmet_alloc_ctrl, on_alloc_entry_any(subsysnqn, ctrlp), void* subsysnqn,
         const char* hostnqn, void* req, __u32 kato, void* ctrlp)
LC_RETURN(lc_alloc_ret, nvmet_alloc_ctrl, on_alloc_exit(ret), const char* subsysnqn,
          const char* hostnqn, void* req, __u32 kato, void* ctrlp)
LC_ENTRY(lc_free, nvmet_ctrl_free, on_ctrl_free(ref), void* ref)
LC_ENTRY(lc_ka_timer, nvmet_keep_alive_timer, on_ka_timer(work), void* work)

#include "lifecycle_tp.bpf.h"
