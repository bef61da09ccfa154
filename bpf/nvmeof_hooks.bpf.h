/* The NVMe-oF hook entry points, host and target, shared by nvmeof.bpf.c (stage histograms)
 * and record.bpf.c (per-command records). Both objects hook the same kernel events under the
 * same program names, since one hook table (NvmeofHooks(), loader/nvmeof.cc) attaches
 * either object's programs by name; what differs is what a hook does with the command. So the
 * programs live here, once, and call what the including object defines before it includes
 * this header (libbpf-tools style):
 *
 *   __u64 as_id(const void* p, bool direct)   a pointer argument as a number (nvmeof_as_id)
 *   host_stamp(__u64 id, struct request* rq, bool direct, int point)
 *   target_stamp(__u64 id, struct nvmet_req___nv* req, bool direct, int point)
 *       stamps a tracked command's point, once (the posted and response points of a host
 *       request, the data and exec points of a target one: both objects only stamp there)
 *   void on_setup(struct request* rq, const void* cmd, bool direct)
 *       cmd: the built NVMe command (tracepoint variants), 0 at function entry (not built yet)
 *   void on_rdma_sent(__u64 id, struct request* rq, bool direct)
 *       host capsule's send completion (RDMA)
 *   void on_complete_rq(struct request* rq, bool direct)
 *   void on_end(struct request* rq, bool direct)   the request's final completion
 *   void on_recv(void)                        target receive (RDMA): on this CPU, init follows
 *   void on_tcp_arrival(__u64 sq)             target receive (TCP): data on queue `sq`'s socket
 *   void on_init(__u64 id, struct nvmet_req___nv* req, struct nvmet_sq___nv* sq, bool direct)
 *   void on_done(__u64 id, struct nvmet_req___nv* req, bool direct)
 *   void on_sent(__u64 id, struct nvmet_req___nv* req, bool direct)   target response sent
 *
 * `id` is the host's struct request or the target's struct nvmet_req address as a number (the
 * in-flight key). `direct` is true where the pointer beside it is BTF-typed (tp_btf/fentry
 * arguments, and what a constant offset from one reaches: plain loads), false where it is a
 * number cast back (raw_tp/kprobe arguments, or reached by container_of: bpf_probe_read_kernel;
 * core_shims.h).
 *
 * Every hook has fentry and kprobe variants (the host driver hooks also a `_cast` fentry one,
 * 6.2+, first), and the frame hooks (nvme_setup_cmd,
 * nvme_complete_rq, nvmet_req_init, nvmet_req_complete, block_rq_complete) tp_btf and raw_tp
 * ones; the exporter enables one variant per hook with set_autoload. tp_btf and fentry programs
 * test their pointer arguments for NULL first: since 6.12 the verifier types the arguments of
 * module tracepoints as maybe-NULL and rejects the load otherwise (EACCES). */
#ifndef NVMEOF_BPF_NVMEOF_HOOKS_BPF_H_
#define NVMEOF_BPF_NVMEOF_HOOKS_BPF_H_

/* ---- host ---- */

/* setup: the nvme:nvme_setup_cmd tracepoint sits at the end of nvme_setup_cmd() and passes the
 * built command; the function entry comes before it is built. The tracepoint dereferences cmd
 * itself, so it is never NULL there. */
SEC("tp_btf/nvme_setup_cmd")
int BPF_PROG(nv_setup_tp_btf, struct request* rq, void* cmd) {
  if (rq) on_setup(rq, cmd, true);
  return 0;
}

SEC("raw_tp/nvme_setup_cmd")
int BPF_PROG(nv_setup_raw_tp, struct request* rq, void* cmd) {
  on_setup(rq, cmd, false);
  return 0;
}

SEC("fentry/nvme_setup_cmd")
int BPF_PROG(nv_setup_fentry, void* ns, struct request* rq) {
  if (rq) on_setup(rq, 0, true);
  return 0;
}

SEC("kprobe/nvme_setup_cmd")
int BPF_KPROBE(nv_setup_kprobe, void* ns, struct request* rq) {
  on_setup(rq, 0, false);
  return 0;
}

/* The driver hooks reach the struct request by container_of, as a number: the _cast variants
 * read it with plain loads (rq_cast, 6.2+), the others through bpf_probe_read_kernel. */

/* posted (RDMA): nvme_rdma_post_send(queue, &req->sqe, ...) right before ib_post_send(). */
SEC("fentry/nvme_rdma_post_send")
int BPF_PROG(nv_rdma_post_cast, void* queue, void* qe) {
  __u64 rq =
      rq_from_pdu(as_id(qe, true) - bpf_core_field_offset(struct nvme_rdma_request___nv, sqe));
  if (rq) host_stamp(rq, rq_cast(rq), true, NVMEOF_HP_POSTED);
  return 0;
}

SEC("fentry/nvme_rdma_post_send")
int BPF_PROG(nv_rdma_post_fentry, void* queue, void* qe) {
  __u64 rq =
      rq_from_pdu(as_id(qe, true) - bpf_core_field_offset(struct nvme_rdma_request___nv, sqe));
  host_stamp(rq, (struct request*)rq, false, NVMEOF_HP_POSTED);
  return 0;
}

SEC("kprobe/nvme_rdma_post_send")
int BPF_KPROBE(nv_rdma_post_kprobe, void* queue, void* qe) {
  __u64 rq = rq_from_pdu((__u64)qe - bpf_core_field_offset(struct nvme_rdma_request___nv, sqe));
  host_stamp(rq, (struct request*)rq, false, NVMEOF_HP_POSTED);
  return 0;
}

/* posted (TCP): the command PDU goes to the socket (6.12+: a function of its own; inlined in
 * 6.1, where driver submission merges with network and target). */
SEC("fentry/nvme_tcp_try_send_cmd_pdu")
int BPF_PROG(nv_tcp_post_cast, void* req) {
  __u64 rq = rq_from_pdu(as_id(req, true));
  if (rq) host_stamp(rq, rq_cast(rq), true, NVMEOF_HP_POSTED);
  return 0;
}

SEC("fentry/nvme_tcp_try_send_cmd_pdu")
int BPF_PROG(nv_tcp_post_fentry, void* req) {
  __u64 rq = rq_from_pdu(as_id(req, true));
  host_stamp(rq, (struct request*)rq, false, NVMEOF_HP_POSTED);
  return 0;
}

SEC("kprobe/nvme_tcp_try_send_cmd_pdu")
int BPF_KPROBE(nv_tcp_post_kprobe, void* req) {
  __u64 rq = rq_from_pdu((__u64)req);
  host_stamp(rq, (struct request*)rq, false, NVMEOF_HP_POSTED);
  return 0;
}

/* sent (RDMA): the command capsule's send completion. */
SEC("fentry/nvme_rdma_send_done")
int BPF_PROG(nv_rdma_sent_cast, void* cq, struct ib_wc___nv* wc) {
  /* A plain load: wr_cqe shares a union with the u64 wr_id, which the verifier's walk of
   * ib_wc meets first, so the load is a number. */
  __u64 rq = wc ? rdma_sent_rq_of((__u64)wc->wr_cqe) : 0;
  if (rq) on_rdma_sent(rq, rq_cast(rq), true);
  return 0;
}

SEC("fentry/nvme_rdma_send_done")
int BPF_PROG(nv_rdma_sent_fentry, void* cq, struct ib_wc___nv* wc) {
  __u64 rq = rdma_sent_rq(wc);
  on_rdma_sent(rq, (struct request*)rq, false);
  return 0;
}

SEC("kprobe/nvme_rdma_send_done")
int BPF_KPROBE(nv_rdma_sent_kprobe, void* cq, struct ib_wc___nv* wc) {
  __u64 rq = rdma_sent_rq(wc);
  on_rdma_sent(rq, (struct request*)rq, false);
  return 0;
}

/* response: the transports hand a received completion to blk-mq via nvme_try_complete_req()
 * -> blk_mq_complete_request_remote() (an exported block-layer function). */
SEC("fentry/blk_mq_complete_request_remote")
int BPF_PROG(nv_response_fentry, struct request* rq) {
  if (rq) host_stamp(as_id(rq, true), rq, true, NVMEOF_HP_RESPONSE);
  return 0;
}

SEC("kprobe/blk_mq_complete_request_remote")
int BPF_KPROBE(nv_response_kprobe, struct request* rq) {
  host_stamp((__u64)rq, rq, false, NVMEOF_HP_RESPONSE);
  return 0;
}

/* complete: nvme:nvme_complete_rq fires at the top of nvme_complete_rq(). */
SEC("tp_btf/nvme_complete_rq")
int BPF_PROG(nv_complete_tp_btf, struct request* rq) {
  if (rq) on_complete_rq(rq, true);
  return 0;
}

SEC("raw_tp/nvme_complete_rq")
int BPF_PROG(nv_complete_raw_tp, struct request* rq) {
  on_complete_rq(rq, false);
  return 0;
}

SEC("fentry/nvme_complete_rq")
int BPF_PROG(nv_complete_fentry, struct request* rq) {
  if (rq) on_complete_rq(rq, true);
  return 0;
}

SEC("kprobe/nvme_complete_rq")
int BPF_KPROBE(nv_complete_kprobe, struct request* rq) {
  on_complete_rq(rq, false);
  return 0;
}

/* end: the request ends in the block layer (see block.bpf.c for the two variants' reach).
 * Partial completions come first with nr_bytes < the bytes left; the final one ends it. */
static __always_inline void on_rq_end(struct request* rq, __u32 nr_bytes, bool direct) {
  if (nr_bytes >= NVMEOF_READ(direct, rq, __data_len)) on_end(rq, direct);
}

/* At the kernel's accounted done (6.5+; block.bpf.c's nvf_done_tp_btf says why). */
SEC("tp_btf/block_io_done")
int BPF_PROG(nv_end_done_tp_btf, struct request* rq) {
  if (rq) on_end(rq, true);
  return 0;
}

SEC("raw_tp/block_io_done")
int BPF_PROG(nv_end_done_raw_tp, struct request* rq) {
  on_end(rq, false);
  return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(nv_end_tp_btf, struct request* rq, blk_status_t error, unsigned int nr_bytes) {
  if (rq) on_rq_end(rq, nr_bytes, true);
  return 0;
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(nv_end_raw_tp, struct request* rq, blk_status_t error, unsigned int nr_bytes) {
  on_rq_end(rq, nr_bytes, false);
  return 0;
}

SEC("fentry/blk_update_request")
int BPF_PROG(nv_end_fentry, struct request* rq, blk_status_t error, unsigned int nr_bytes) {
  if (rq) on_rq_end(rq, nr_bytes, true);
  return 0;
}

SEC("kprobe/blk_update_request")
int BPF_KPROBE(nv_end_kprobe, struct request* rq, blk_status_t error, unsigned int nr_bytes) {
  on_rq_end(rq, nr_bytes, false);
  return 0;
}

/* ---- target ---- */

/* receive (RDMA): the capsule's receive completion is handled; nvmet_req_init() follows on this
 * CPU in the same call (recv_done -> handle_command). */
SEC("fentry/nvmet_rdma_recv_done")
int BPF_PROG(nv_t_rdma_recv_fentry) {
  on_recv();
  return 0;
}

SEC("kprobe/nvmet_rdma_recv_done")
int BPF_KPROBE(nv_t_rdma_recv_kprobe) {
  on_recv();
  return 0;
}

/* TCP: data arrived on a queue's socket (its sk_data_ready callback, in softirq; it queues the
 * queue's io_work, which reads the capsule and runs its nvmet_req_init): the receive span is
 * from the capsule's arrival to the command parsed, the io_work's wait for its CPU included.
 * One run per segment received; at queue depth 1 one per read command, where io_work ran twice
 * (its second pass finds nothing). sk_user_data is the nvmet_tcp_queue (low bits: flags). */
static __always_inline __u64 tcp_queue_sq(__u64 queue) {
  queue &= ~7ULL;
  return queue ? queue + bpf_core_field_offset(struct nvmet_tcp_queue___nv, nvme_sq) : 0;
}

/* sk_user_data is read as a number: 7.2's verifier (not 6.12's) types a `void *` field loaded
 * through a BTF pointer as rdonly_untrusted_mem, a pointer, and refused the hash of it
 * ("invalid size of register spill" at the 32-bit spill of the hashed value: EACCES, so
 * `record`'s combined load failed and this hook fell back to kprobe). */
SEC("fentry/nvmet_tcp_data_ready")
int BPF_PROG(nv_t_tcp_recv_fentry, struct sock* sk) {
  __u64 queue = 0;
  if (!sk) return 0;
  bpf_core_read(&queue, sizeof(queue), &sk->sk_user_data);
  on_tcp_arrival(tcp_queue_sq(queue));
  return 0;
}

SEC("kprobe/nvmet_tcp_data_ready")
int BPF_KPROBE(nv_t_tcp_recv_kprobe, struct sock* sk) {
  on_tcp_arrival(tcp_queue_sq((__u64)BPF_CORE_READ(sk, sk_user_data)));
  return 0;
}

/* init: nvmet:nvmet_req_init fires in nvmet_req_init() once the command parsed; the function
 * entry (fentry/kprobe) comes before req->sq is set, so those take the sq argument. The
 * received command is in req->cmd before nvmet_req_init() runs (every variant sees it).
 * Which argument is sq, from 0 (set by the exporter from nvmet's BTF, NvmetReqInitSqArg): 2
 * for nvmet_req_init(req, cq, sq, ops) before Linux 6.15, 1 for (req, sq, ops) on the kernels
 * that dropped cq (Debian's 7.2). The branch not taken is dead code to the verifier. */
const volatile __u32 nvmet_init_sq_arg = 2;

SEC("tp_btf/nvmet_req_init")
int BPF_PROG(nv_t_init_tp_btf, struct nvmet_req___nv* req) {
  if (req) on_init(as_id(req, true), req, req->sq, true);
  return 0;
}

SEC("raw_tp/nvmet_req_init")
int BPF_PROG(nv_t_init_raw_tp, struct nvmet_req___nv* req) {
  on_init((__u64)req, req, BPF_CORE_READ(req, sq), false);
  return 0;
}

SEC("fentry/nvmet_req_init")
int BPF_PROG(nv_t_init_fentry, struct nvmet_req___nv* req, void* arg1, void* arg2) {
  if (req) on_init(as_id(req, true), req, nvmet_init_sq_arg == 1 ? arg1 : arg2, true);
  return 0;
}

SEC("kprobe/nvmet_req_init")
int BPF_KPROBE(nv_t_init_kprobe, struct nvmet_req___nv* req, void* arg1, void* arg2) {
  on_init((__u64)req, req, nvmet_init_sq_arg == 1 ? arg1 : arg2, false);
  return 0;
}

/* data (RDMA): the RDMA READ of a write's data from the host completed. */
SEC("fentry/nvmet_rdma_read_data_done")
int BPF_PROG(nv_t_rdma_data_fentry, void* cq, struct ib_wc___nv* wc) {
  __u64 req = rdma_rsp_req(wc, bpf_core_field_offset(struct nvmet_rdma_rsp___nv, read_cqe));
  target_stamp(req, (struct nvmet_req___nv*)req, false, NVMEOF_TP_DATA);
  return 0;
}

SEC("kprobe/nvmet_rdma_read_data_done")
int BPF_KPROBE(nv_t_rdma_data_kprobe, void* cq, struct ib_wc___nv* wc) {
  __u64 req = rdma_rsp_req(wc, bpf_core_field_offset(struct nvmet_rdma_rsp___nv, read_cqe));
  target_stamp(req, (struct nvmet_req___nv*)req, false, NVMEOF_TP_DATA);
  return 0;
}

/* exec: the backing block device's or file's I/O is issued. */
SEC("fentry/nvmet_bdev_execute_rw")
int BPF_PROG(nv_t_bdev_exec_fentry, struct nvmet_req___nv* req) {
  if (req) target_stamp(as_id(req, true), req, true, NVMEOF_TP_EXEC);
  return 0;
}

SEC("kprobe/nvmet_bdev_execute_rw")
int BPF_KPROBE(nv_t_bdev_exec_kprobe, struct nvmet_req___nv* req) {
  target_stamp((__u64)req, req, false, NVMEOF_TP_EXEC);
  return 0;
}

SEC("fentry/nvmet_file_execute_rw")
int BPF_PROG(nv_t_file_exec_fentry, struct nvmet_req___nv* req) {
  if (req) target_stamp(as_id(req, true), req, true, NVMEOF_TP_EXEC);
  return 0;
}

SEC("kprobe/nvmet_file_execute_rw")
int BPF_KPROBE(nv_t_file_exec_kprobe, struct nvmet_req___nv* req) {
  target_stamp((__u64)req, req, false, NVMEOF_TP_EXEC);
  return 0;
}

/* done: nvmet:nvmet_req_complete fires when the command completed, before the response is
 * queued to the transport. */
SEC("tp_btf/nvmet_req_complete")
int BPF_PROG(nv_t_done_tp_btf, struct nvmet_req___nv* req) {
  if (req) on_done(as_id(req, true), req, true);
  return 0;
}

SEC("raw_tp/nvmet_req_complete")
int BPF_PROG(nv_t_done_raw_tp, struct nvmet_req___nv* req) {
  on_done((__u64)req, req, false);
  return 0;
}

SEC("fentry/nvmet_req_complete")
int BPF_PROG(nv_t_done_fentry, struct nvmet_req___nv* req) {
  if (req) on_done(as_id(req, true), req, true);
  return 0;
}

SEC("kprobe/nvmet_req_complete")
int BPF_KPROBE(nv_t_done_kprobe, struct nvmet_req___nv* req) {
  on_done((__u64)req, req, false);
  return 0;
}

/* sent (RDMA): the response's send completion (for reads after the RDMA WRITE of the data).
 * nvmet_rdma_send_done() hands the command's nvmet_rdma_rsp to nvmet_rdma_release_rsp() first
 * thing; hooked there, the typed rsp reaches the command with plain loads, where the completion
 * handler's ib_wc reaches it only by container_of (three bpf_probe_read_kernel calls, about 300
 * instructions a command). It also runs for a response that could not be posted or a transfer
 * that failed: those commands end there too. */
SEC("fentry/nvmet_rdma_release_rsp")
int BPF_PROG(nv_t_rdma_sent_fentry, struct nvmet_rdma_rsp___nv* rsp) {
  if (rsp) {
    on_sent(as_id(rsp, true) + bpf_core_field_offset(struct nvmet_rdma_rsp___nv, req), &rsp->req,
            true);
  }
  return 0;
}

SEC("kprobe/nvmet_rdma_release_rsp")
int BPF_KPROBE(nv_t_rdma_sent_kprobe, struct nvmet_rdma_rsp___nv* rsp) {
  __u64 r = (__u64)rsp;
  if (r) on_sent(r + bpf_core_field_offset(struct nvmet_rdma_rsp___nv, req), &rsp->req, false);
  return 0;
}

/* sent (TCP): the response PDU goes to the socket (6.12+; inlined in 6.1, where the target's
 * commands end at nvmet_req_complete). */
SEC("fentry/nvmet_try_send_response")
int BPF_PROG(nv_t_tcp_sent_fentry, struct nvmet_tcp_cmd___nv* cmd) {
  if (cmd) {
    on_sent(as_id(cmd, true) + bpf_core_field_offset(struct nvmet_tcp_cmd___nv, req), &cmd->req,
            true);
  }
  return 0;
}

SEC("kprobe/nvmet_try_send_response")
int BPF_KPROBE(nv_t_tcp_sent_kprobe, struct nvmet_tcp_cmd___nv* cmd) {
  __u64 c = (__u64)cmd;
  if (c) on_sent(c + bpf_core_field_offset(struct nvmet_tcp_cmd___nv, req), &cmd->req, false);
  return 0;
}

#endif /* NVMEOF_BPF_NVMEOF_HOOKS_BPF_H_ */
