/* Connection lifecycle counters of bpf/lifecycle.bpf.c, shared with userspace
 * (loader/lifecycle*.cc), C and C++.
 *
 * Every hook of lifecycle.bpf.c runs per connection event (a CM event, a controller state
 * change, a Connect command, a keep-alive expiry), never per I/O command. Each event adds 1 to
 * one entry of lc_counts, keyed by what the event was; userspace turns the keys into labels,
 * bounded, at every scrape. lc_ctrls holds the target's live controllers. Multipath events
 * (failovers, ANA state changes) are path events: they run per failed command or per ANA log
 * read, never on a healthy path's I/O. */
#ifndef NVMEOF_BPF_LIFECYCLE_H_
#define NVMEOF_BPF_LIFECYCLE_H_

#define NVMEOF_LC_NQN_SIZE 224  /* NVMF_NQN_SIZE (223) + NUL */
#define NVMEOF_LC_NAME_SIZE 384 /* an nqn, a device name, or `nvme connect`'s option string */
#define NVMEOF_LC_COUNTS_MAX 1024
#define NVMEOF_LC_CTRLS_MAX 4096

/* What an lc_counts entry counts; the meaning of a, b, c and name per kind. */
enum nvmeof_lc_kind {
  /* a = enum rdma_cm_event_type, b = event status (reject reason for REJECTED, else -errno or
   * 0), c = port number, name = RDMA device name ("" when the cm_id has no device yet) */
  NVMEOF_LC_CM_EVENT = 1,
  /* a = controller instance (nvme<a>), b = old state, c = new state (enum nvme_ctrl_state) */
  NVMEOF_LC_STATE = 2,
  /* a = NVMEOF_LC_OPTS_*, b = -errno or NVMe status (SCT << 8 | SC, > 0) */
  NVMEOF_LC_CONNECT_FAIL = 3,
  /* a = controller instance: a host keep-alive command that completed with an error */
  NVMEOF_LC_KA_FAIL = 4,
  /* a = NVMEOF_LC_QUEUE_*, b = NVMe status (SCT << 8 | SC; 0 = success), c = the completion's
   * result dword (for Connect errors: the invalid attribute, IATTR/IPO), name = subsystem NQN
   * ("" when not known) */
  NVMEOF_LC_TARGET_CONNECT = 5,
  /* name = subsystem NQN: a target controller's keep-alive timer expired */
  NVMEOF_LC_KA_EXPIRY = 6,
  /* a = controller instance: a host command failed over from this path (nvme_failover_req) */
  NVMEOF_LC_FAILOVER = 7,
  /* a = controller instance, b = ANA group id, c = the group's new ANA state (NVME_ANA_*): the
   * state a host controller reported for a group differs from the one it reported before (or
   * is the first one seen for that controller and group) */
  NVMEOF_LC_ANA = 8,
  /* name = multipath head disk (nvme<X>n<Y>): host I/Os the head requeued for want of a usable
   * path (the value: bios counted in its requeue list by nvme_requeue_work, less failed over) */
  NVMEOF_LC_NO_PATH = 9,
  /* name = multipath head disk, a = bucket: a stall of the head's I/O (below) ended, of at most
   * 2^a ms (a < NVMEOF_LC_STALL_BUCKETS), or longer (a == NVMEOF_LC_STALL_BUCKETS) */
  NVMEOF_LC_STALL = 10,
  /* name = multipath head disk: the stalls' summed microseconds (the value, not a count) */
  NVMEOF_LC_STALL_SUM_US = 11,
  /* a = controller instance, b = ANA group id: the microseconds the group spent in `change`
   * (NVME_ANA_CHANGE) as the controller read it, added when it left that state (the value) */
  NVMEOF_LC_ANA_CHANGE_US = 12,
};

/* A multipath stall: from the first I/O of a head failed over (nvme_failover_req) or found
 * without a usable path, to the end of the requeue work that put every requeued I/O on a path. */
#define NVMEOF_LC_STALL_BUCKETS 18 /* 1 ms .. 2^17 ms (131 s), then +Inf */

/* NVMEOF_LC_CONNECT_FAIL: where the target address is in name. */
#define NVMEOF_LC_OPTS_STRING 0 /* `nvme connect`'s option string ("nqn=..,transport=..,...") */
#define NVMEOF_LC_OPTS_FIELDS 1 /* a reconnect: transport at 0, traddr at 16, trsvcid at 80 */
#define NVMEOF_LC_TRADDR_AT 16
#define NVMEOF_LC_TRSVCID_AT 80
#define NVMEOF_LC_QUEUE_ADMIN 0
#define NVMEOF_LC_QUEUE_IO 1

struct nvmeof_lc_key {
  unsigned int kind; /* enum nvmeof_lc_kind */
  unsigned int a;
  int b;
  unsigned int c;
  char name[NVMEOF_LC_NAME_SIZE];
};

/* A target controller connected now (lc_ctrls, keyed by its struct nvmet_ctrl address). */
struct nvmeof_lc_ctrl {
  unsigned long long created_ns; /* bpf_ktime_get_ns() at allocation: host NQNs keep their
                                    names in the order their first controllers came */
  char nqn[NVMEOF_LC_NQN_SIZE];
  char hostnqn[NVMEOF_LC_NQN_SIZE];
};

/* lc_lost slots: events that found lc_counts or lc_ctrls full. */
#define NVMEOF_LC_LOST_COUNTS 0
#define NVMEOF_LC_LOST_CTRLS 1
#define NVMEOF_LC_LOST_COUNT 2

#endif /* NVMEOF_BPF_LIFECYCLE_H_ */
