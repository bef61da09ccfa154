# Scenario (b): NVMe/TCP on the VM's own address, target and host in this VM (rxe0 exists too).
. /opt/vm/lib.sh
conf SCENARIO tcp
basic_scenario tcp 2 4421 nqn.2024-01.io.nvmeof-exporter:vm-tcp /dev/nullb1
