# Scenario explain_rdma: the explain scenario over NVMe/RDMA (rxe), its three phases with the
# network fault on the target's end of the link (explain.sh, TRANSPORT=rdma).
TRANSPORT=rdma
. /opt/vm/scenarios/explain.sh
