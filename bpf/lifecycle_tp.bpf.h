/* Lifecycle counters from the classic tracepoints, for kernels without module BTF (5.10),
 * included at the end of lifecycle.bpf.c: host keep-alive failures and the target's Connects.
 *
 * There the hooks above cannot load: they read nvme_core's and nvmet's types through CO-RE,
 * which needs the module's BTF (5.11+). These programs read the nvme:nvme_setup_cmd and
 * nvme_complete_rq, nvmet:nvmet_req_init and nvmet_req_complete trace records instead, at the
 * offsets of each event's format file, which the exporter sets below before load
 * (collectors/bpf/lifecycle_loader.cc); it plans them only where the module has no BTF and the
 * format files have every field (collectors/bpf/lifecycle.cc).
 *
 * Unlike the hooks above, these tracepoints fire for every I/O command, so each program returns
 * at once for one: a setup or init program after reading one field (the queue, or the opcode)
 * with a small bpf_probe_read_kernel, a completion program after one array load while no
 * command it waits for is in flight (lc_tp_waiting).
 *
 * A command is known by what both of its records hold: (controller instance, queue, command
 * id) on the host, the command id alone on the target, whose init record has no controller
 * yet for a Connect (the queue is not bound to one until it completes) and the queue id 0 also
 * for an I/O queue's Connect (set when it completes). What each record holds: docs/metrics.md
 * "Connection lifecycle". */
#include "tp_field.bpf.h"

#define NVME_ADMIN_KEEP_ALIVE 0x18
#define NVME_FABRICS_COMMAND 0x7f
#define NVME_FABRICS_CONNECT 0x01

const volatile struct nvmeof_tp_field lc_setup_ctrl = {}, lc_setup_qid = {}, lc_setup_cid = {},
                                      lc_setup_opcode = {};
const volatile struct nvmeof_tp_field lc_done_ctrl = {}, lc_done_qid = {}, lc_done_cid = {},
                                      lc_done_status = {};
const volatile struct nvmeof_tp_field lc_tinit_cid = {}, lc_tinit_opcode = {}, lc_tinit_fctype = {},
                                      lc_tinit_cdw10 = {};
const volatile struct nvmeof_tp_field lc_tdone_qid = {}, lc_tdone_cid = {}, lc_tdone_result = {},
                                      lc_tdone_status = {};

enum lc_tp_side { LC_TP_HOST = 0, LC_TP_TARGET = 1, LC_TP_SIDES = 2 };
enum lc_tp_what { LC_TP_KEEP_ALIVE = 1, LC_TP_TARGET_CONNECT };

struct lc_tp_key {
  __u32 side;
  __u32 ctrl; /* host: controller instance; target: 0 */
  __u32 qid;  /* host: 0 (admin queue); target: 0 */
  __u32 cid;  /* host: the request's tag (the command id's low 12 bits) */
};

struct lc_tp_cmd {
  __u32 what;
  __u32 qid; /* a Connect's queue (its command's QID field): 0 admin, else I/O */
};

/* Commands waited for: keep-alives and Connects only, never an I/O command. LRU: one whose
 * completion never came (its queue torn down first) does not leak. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 256);
  __type(key, struct lc_tp_key);
  __type(value, struct lc_tp_cmd);
} lc_tp_cmds SEC(".maps");

/* Per side, how many lc_tp_cmds entries there are: the completion programs look no further
 * while it is 0. An entry the LRU evicts leaves it high (a lookup per completion until a
 * completion drops the count again), never low. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, LC_TP_SIDES);
  __type(key, __u32);
  __type(value, __u64);
} lc_tp_waiting SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u8[NVMEOF_TP_SPAN]);
} lc_tp_record SEC(".maps");

static __always_inline __u8* lc_tp_copy(void* ctx) {
  __u32 zero = 0;
  __u8* rec = bpf_map_lookup_elem(&lc_tp_record, &zero);
  if (rec && bpf_probe_read_kernel(rec, NVMEOF_TP_SPAN, ctx)) return 0;
  return rec;
}

static __always_inline __u64* lc_tp_waiting_on(__u32 side) {
  return bpf_map_lookup_elem(&lc_tp_waiting, &side);
}

static __always_inline void lc_tp_wait(struct lc_tp_key* key, struct lc_tp_cmd* cmd) {
  __u64* n = lc_tp_waiting_on(key->side);
  if (!n) return;
  if (bpf_map_update_elem(&lc_tp_cmds, key, cmd, BPF_NOEXIST) == 0) {
    __sync_fetch_and_add(n, 1);
  } else {
    bpf_map_update_elem(&lc_tp_cmds, key, cmd, BPF_EXIST);
  }
}

static __always_inline void lc_tp_forget(struct lc_tp_key* key) {
  __u64* n = lc_tp_waiting_on(key->side);
  if (n && bpf_map_delete_elem(&lc_tp_cmds, key) == 0) __sync_fetch_and_add(n, -1);
}

/* The command a completion ends, taken out of lc_tp_cmds; false for any other. */
static __always_inline bool lc_tp_take(struct lc_tp_key* key, struct lc_tp_cmd* out) {
  struct lc_tp_cmd* cmd = bpf_map_lookup_elem(&lc_tp_cmds, key);
  if (!cmd) return false;
  *out = *cmd;
  lc_tp_forget(key);
  return true;
}

static __always_inline bool lc_tp_idle(__u32 side) {
  __u64* n = lc_tp_waiting_on(side);
  return !n || !*n;
}

/* ---- host: keep-alives ---- */

/* The setup record's command id is the one sent, whose top 4 bits count the tag's reuses where
 * the kernel has that (5.14, and Debian's 5.10.0-32); the completion record's is the tag. */
#define NVME_CID_TAG 0xfff

SEC("tracepoint/nvme/nvme_setup_cmd")
int lc_setup_tp(void* ctx) {
  struct lc_tp_key key = {.side = LC_TP_HOST};
  struct lc_tp_cmd cmd = {.what = LC_TP_KEEP_ALIVE};
  __u8* rec;
  if (tp_field_of(ctx, &lc_setup_qid) != 0) return 0; /* an I/O queue's command */
  if (!(rec = lc_tp_copy(ctx))) return 0;
  key.ctrl = (__u32)tp_field(rec, &lc_setup_ctrl);
  key.cid = (__u32)tp_field(rec, &lc_setup_cid) & NVME_CID_TAG;
  if ((__u8)tp_field(rec, &lc_setup_opcode) != NVME_ADMIN_KEEP_ALIVE) {
    /* The tag is free again: whatever this queue had under it has ended. */
    if (!lc_tp_idle(LC_TP_HOST)) lc_tp_forget(&key);
    return 0;
  }
  lc_tp_wait(&key, &cmd);
  return 0;
}

SEC("tracepoint/nvme/nvme_complete_rq")
int lc_done_tp(void* ctx) {
  struct lc_tp_key key = {.side = LC_TP_HOST};
  struct lc_tp_cmd cmd;
  struct nvmeof_lc_key* k;
  __u8* rec;
  if (lc_tp_idle(LC_TP_HOST)) return 0; /* no keep-alive in flight */
  if (!(rec = lc_tp_copy(ctx)) || tp_field(rec, &lc_done_qid) != 0) return 0;
  key.ctrl = (__u32)tp_field(rec, &lc_done_ctrl);
  key.cid = (__u32)tp_field(rec, &lc_done_cid) & NVME_CID_TAG;
  if (!lc_tp_take(&key, &cmd)) return 0;
  /* nvme_req(req)->status: the completion's status field >> 1 (SCT << 8 | SC, DNR, MORE), or
   * the host's own for a command it ended (aborted at a reset: NVME_SC_HOST_ABORTED_CMD) */
  if (!(tp_field(rec, &lc_done_status) & 0x7ff) || !(k = new_key(NVMEOF_LC_KA_FAIL))) return 0;
  k->a = key.ctrl;
  count(k);
  return 0;
}

/* ---- target: Connect commands ---- */

SEC("tracepoint/nvmet/nvmet_req_init")
int lc_tinit_tp(void* ctx) {
  struct lc_tp_key key = {.side = LC_TP_TARGET};
  struct lc_tp_cmd cmd = {.what = LC_TP_TARGET_CONNECT};
  __u8* rec;
  if (tp_field_of(ctx, &lc_tinit_opcode) != NVME_FABRICS_COMMAND) return 0;
  if (!(rec = lc_tp_copy(ctx)) || tp_field(rec, &lc_tinit_fctype) != NVME_FABRICS_CONNECT) return 0;
  if (lc_tinit_cdw10.offset > NVMEOF_TP_SPAN - 4) return 0;
  key.cid = (__u32)tp_field(rec, &lc_tinit_cid);
  cmd.qid = *(const __u16*)(rec + lc_tinit_cdw10.offset + 2); /* the Connect's QID */
  lc_tp_wait(&key, &cmd);
  return 0;
}

SEC("tracepoint/nvmet/nvmet_req_complete")
int lc_tdone_tp(void* ctx) {
  struct lc_tp_key key = {.side = LC_TP_TARGET};
  struct lc_tp_cmd* cmd;
  struct nvmeof_lc_key* k;
  __u8* rec;
  __u32 qid, queue;
  if (lc_tp_idle(LC_TP_TARGET)) return 0; /* no Connect in flight */
  if (!(rec = lc_tp_copy(ctx))) return 0;
  key.cid = (__u32)tp_field(rec, &lc_tdone_cid);
  cmd = bpf_map_lookup_elem(&lc_tp_cmds, &key);
  if (!cmd) return 0;
  /* The record's queue is the completion queue's id: the Connect's own QID once the queue is
   * set up, 0 before (the admin queue, or a Connect refused early). Another queue's command
   * under the same command id is not this Connect's completion. */
  qid = (__u32)tp_field(rec, &lc_tdone_qid);
  if (qid != 0 && qid != cmd->qid) return 0;
  queue = cmd->qid ? NVMEOF_LC_QUEUE_IO : NVMEOF_LC_QUEUE_ADMIN;
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
