# Scenario (a): NVMe/RDMA over soft-RoCE (rxe0 on a veth), target and host in this VM.
. /opt/vm/lib.sh
conf SCENARIO rdma
basic_scenario rdma 1 4420 nqn.2024-01.io.nvmeof-exporter:vm-rdma /dev/nullb0
