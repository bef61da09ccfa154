/* Lifecycle counters from the classic tracepoints, for kernels without module BTF (5.10),
 * included at the end of lifecycle.bpf.c: the target's Connect commands.
 *
 * There the hooks above cannot load: they read nvmet's types through CO-RE, which needs the
 * module's BTF (5.11+). These programs read the nvmet:nvmet_req_init and nvmet_req_complete
 * trace records instead, at the offsets of each event's format file, which the exporter sets
 * below before load (loader/lifecycle_loader.cc); it plans them only where the module
 * has no BTF and the format files have every field (loader/lifecycle.cc).
 *
 * Unlike the hooks above, these tracepoints fire for every I/O command, so each program returns
 * at once for one: init after reading the opcode with a 1-byte bpf_probe_read_kernel, the
 * completion after one array load while no Connect is in flight (lc_tp_waiting). The kernel
 * builds their records anyway: the NVMe-oF collector's 5.10 target programs read them. The
 * host's keep-alives would need nvme:nvme_setup_cmd and nvme_complete_rq, whose records the
 * kernel then builds for every host command too: a cost per command (tests/bench/README.md)
 * to count a rare event; not hooked.
 *
 * A Connect is known by its command id and the task both of its tracepoints fire in: the init
 * record has no controller yet (the queue is not bound to one until it completes) and the queue
 * id 0 also for an I/O queue's Connect (set when it completes), and hosts that connect at once
 * send their Connects under the same command id (the VM scenario's reconnecting hosts lost one
 * of three to a key of the command id alone); nvmet executes a Connect where it received it and
 * completes it there (its queue's work item, or the RDMA completion handler), so the two
 * records come from one task. What each record holds: docs/metrics.md "Connection lifecycle". */
#include "tp_field.bpf.h"

#define NVME_FABRICS_COMMAND 0x7f
#define NVME_FABRICS_CONNECT 0x01

const volatile struct nvmeof_tp_field lc_tinit_cid = {}, lc_tinit_opcode = {}, lc_tinit_fctype = {},
                                      lc_tinit_cdw10 = {};
const volatile struct nvmeof_tp_field lc_tdone_qid = {}, lc_tdone_cid = {}, lc_tdone_result = {},
                                      lc_tdone_status = {};

struct lc_tp_key {
  __u32 cid;
  __u32 pid; /* the task the tracepoints fire in */
};

/* Connects in flight -> the Connect's queue (its command's QID field: 0 admin, else I/O).
 * Never an I/O command. LRU: one whose completion never came (its queue torn down first) does
 * not leak. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 256);
  __type(key, struct lc_tp_key);
  __type(value, __u32);
} lc_tp_cmds SEC(".maps");

/* How many lc_tp_cmds entries there are: the completion program looks no further while it is
 * 0. An entry the LRU evicts leaves it high (a lookup per completion until a completion drops
 * the count again), never low. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} lc_tp_waiting SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u8[NVMEOF_TP_SPAN]);
} lc_tp_record SEC(".maps");

static __always_inline __u8* lc_tp_copy(void* ctx) { return tp_copy(&lc_tp_record, ctx); }

static __always_inline __u64* lc_tp_waiting_count(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&lc_tp_waiting, &zero);
}

static __always_inline struct lc_tp_key lc_tp_key_of(__u32 cid) {
  struct lc_tp_key key = {.cid = cid, .pid = (__u32)bpf_get_current_pid_tgid()};
  return key;
}

static __always_inline void lc_tp_wait(const struct lc_tp_key* key, __u32 qid) {
  __u64* n = lc_tp_waiting_count();
  if (!n) return;
  if (bpf_map_update_elem(&lc_tp_cmds, key, &qid, BPF_NOEXIST) == 0) {
    __sync_fetch_and_add(n, 1);
  } else {
    bpf_map_update_elem(&lc_tp_cmds, key, &qid, BPF_EXIST);
  }
}

static __always_inline void lc_tp_forget(const struct lc_tp_key* key) {
  __u64* n = lc_tp_waiting_count();
  if (n && bpf_map_delete_elem(&lc_tp_cmds, key) == 0) __sync_fetch_and_add(n, -1);
}

static __always_inline bool lc_tp_idle(void) {
  __u64* n = lc_tp_waiting_count();
  return !n || !*n;
}

/* ---- target: Connect commands ---- */

SEC("tracepoint/nvmet/nvmet_req_init")
int lc_tinit_tp(void* ctx) {
  struct lc_tp_key key;
  __u8* rec;
  if (tp_field_of(ctx, &lc_tinit_opcode) != NVME_FABRICS_COMMAND) return 0;
  if (!(rec = lc_tp_copy(ctx)) || tp_field(rec, &lc_tinit_fctype) != NVME_FABRICS_CONNECT) return 0;
  if (lc_tinit_cdw10.offset > NVMEOF_TP_SPAN - 4) return 0;
  key = lc_tp_key_of((__u32)tp_field(rec, &lc_tinit_cid));
  lc_tp_wait(&key, *(const __u16*)(rec + lc_tinit_cdw10.offset + 2)); /* QID: cdw10's upper half */
  return 0;
}

SEC("tracepoint/nvmet/nvmet_req_complete")
int lc_tdone_tp(void* ctx) {
  struct nvmeof_lc_key* k;
  struct lc_tp_key key;
  __u32 qid, *connect_qid, queue;
  __u8* rec;
  if (lc_tp_idle()) return 0; /* no Connect in flight */
  if (!(rec = lc_tp_copy(ctx))) return 0;
  key = lc_tp_key_of((__u32)tp_field(rec, &lc_tdone_cid));
  connect_qid = bpf_map_lookup_elem(&lc_tp_cmds, &key);
  if (!connect_qid) return 0;
  /* The record's queue is the completion queue's id: the Connect's own QID once the queue is
   * set up, 0 before (the admin queue, or a Connect refused early). Another queue's command
   * under the same command id is not this Connect's completion. */
  qid = (__u32)tp_field(rec, &lc_tdone_qid);
  if (qid != 0 && qid != *connect_qid) return 0;
  queue = *connect_qid ? NVMEOF_LC_QUEUE_IO : NVMEOF_LC_QUEUE_ADMIN;
  lc_tp_forget(&key);
  if (!(k = new_key(NVMEOF_LC_TARGET_CONNECT))) return 0;
  k->a = queue;
  /* status: the completion's status field >> 1 (with DNR); the record has no subsystem NQN, so
   * name stays "" */
  k->b = (__s32)(tp_field(rec, &lc_tdone_status) & 0x7ff);
  k->c = (__u32)tp_field(rec, &lc_tdone_result);
  count(k);
  return 0;
}
