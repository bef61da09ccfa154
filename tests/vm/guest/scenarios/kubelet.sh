# Scenario kubelet: the kubernetes collector against a real kernel's mount table, laid out as the
# kubelet lays out CSI volumes (pkg/volume/csi), with no kubelet and no API server. One NVMe/TCP
# subsystem (port 2, 4421) with two namespaces on memory-backed null_blk (ns 1 /dev/nullb1,
# ns 2 /dev/nullb0), connected in this VM. The exporter at its defaults (the kubernetes
# collector is on; the rootfs is /) is scraped before the kubelet directory exists
# (no-kubelet), with these mounts (mounted):
#   filesystem  ext4 on namespace 1, staged (NodeStageVolume) at
#               plugins/kubernetes.io/csi/<driver>/<sha256>/globalmount and bind-mounted from
#               there (NodePublishVolume) at pods/<uid1>/volumes/kubernetes.io~csi/<pv1>/mount,
#               vol_data.json beside it;
#   block       namespace 2's device node bind-mounted out of devtmpfs at the driver's publish
#               path plugins/kubernetes.io/csi/volumeDevices/publish/<pv2>/<uid2> and from there
#               (MapBlockVolume) at .../volumeDevices/<pv2>/dev/<uid2>, data/vol_data.json;
# and after the pod's filesystem mount and both block bind mounts are gone (unmounted; the
# staging mount stays). mountinfo-*.txt and blockdevs.txt (sysfs "name major:minor") are what
# check_kubelet.py compares the series with.
. /opt/vm/lib.sh
conf SCENARIO kubelet
conf KERNEL "$(uname -r)"
K=/var/lib/kubelet
NQN=nqn.2024-01.io.nvmeof-exporter:vm-kubelet
FS_DRIVER=nvme.csi.example.com
BLOCK_DRIVER=block.nvme.csi.example.com
PV1=pvc-0b3c1d7e-4a51-4f0e-9a43-6f1e2d3c4b5a
PV2=pvc-9f8e7d6c-5b4a-4392-8170-a1b2c3d4e5f6
UID1=4c0e1a2b-3d4e-4f50-8617-28394a5b6c7d
UID2=d1e2f3a4-b5c6-4d7e-8f90-0a1b2c3d4e5f
STAGE_HASH=3f7a2c5e9b1d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a
conf KUBELET_ROOT $K
conf FS_DRIVER $FS_DRIVER
conf BLOCK_DRIVER $BLOCK_DRIVER
conf PV1 $PV1
conf PV2 $PV2
conf UID1 $UID1
conf UID2 $UID2

# Memory-backed: the filesystem must read back what mkfs wrote.
# shellcheck disable=SC2034 # read by load_modules
NULLB_ARGS="nr_devices=2 gb=1 memory_backed=1"
load_modules
modprobe ext4 || die "modprobe ext4"
setup_net || die "network/rxe setup"
setup_target tcp 2 4421 $NQN /dev/nullb1 || die "nvmet tcp"
s=$CFG/subsystems/$NQN/namespaces/2
mkdir "$s" && printf %s /dev/nullb0 >"$s/device_path" && echo 1 >"$s/enable" || die "nvmet namespace 2"
conf NATIVE_MULTIPATH "$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)"

start_exporter || die "exporter start"
scrape no-kubelet

connect tcp 4421 $NQN || die "nvme connect"
# The namespaces' block devices as the host names them (the heads, with native multipath): by
# nsid; connect returns once one of them is there.
DEV1='' DEV2=''
deadline 30
while [ -z "$DEV1" ] || [ -z "$DEV2" ]; do
	for d in /sys/block/nvme*n*; do
		[ -e "$d/nsid" ] && [ -b "/dev/${d##*/}" ] || continue
		case $(cat "$d/nsid") in 1) DEV1=${d##*/} ;; 2) DEV2=${d##*/} ;; esac
	done
	[ -n "$DEV1" ] && [ -n "$DEV2" ] && break
	before_deadline || die "namespaces 1 and 2 not both present ($DEV1 $DEV2)"
	sleep 0.2
done
conf DISK1 "$DEV1"
conf DISK2 "$DEV2"
# (a native multipath path disk, nvme0c0n1, has no dev: it is no device node)
for d in /sys/class/block/*; do [ -e "$d/dev" ] && echo "${d##*/} $(cat "$d/dev")"; done >"$R/blockdevs.txt"
echo "filesystem on $DEV1, raw block $DEV2"

mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1,nodiscard /dev/"$DEV1" || die "mkfs.ext4 /dev/$DEV1"
mark mkfs_done
# NodeStageVolume: the driver mounts the device at the node-wide staging path.
STAGE=$K/plugins/kubernetes.io/csi/$FS_DRIVER/$STAGE_HASH/globalmount
mkdir -p "$STAGE" && mount -t ext4 /dev/"$DEV1" "$STAGE" || die "staging mount"
conf STAGE "$STAGE"
# NodePublishVolume: bind-mounted from the staging path into the pod's volume directory, and the
# kubelet's vol_data.json beside it (saveVolumeData, a flat JSON object of strings).
POD1=$K/pods/$UID1/volumes/kubernetes.io~csi/$PV1
mkdir -p "$POD1/mount" && mount -o bind "$STAGE" "$POD1/mount" || die "pod filesystem mount"
printf '{"attachmentID":"csi-5d41402abc4b2a76b9719d911017c592","driverName":"%s","nodeName":"vm","specVolID":"%s","volumeHandle":"vol-fs-0001","volumeLifecycleMode":"Persistent"}' \
	$FS_DRIVER $PV1 >"$POD1/vol_data.json"
conf POD1_MOUNT "$POD1/mount"
echo hello >"$POD1/mount/data" || fail "write to the pod's volume"
# Raw block: the driver publishes the device node (NodePublishVolume), MapBlockVolume
# bind-mounts it per pod under volumeDevices/<pv>/dev/<pod uid>, data/vol_data.json beside.
VD=$K/plugins/kubernetes.io/csi/volumeDevices
PUB=$VD/publish/$PV2/$UID2
mkdir -p "${PUB%/*}" "$VD/$PV2/dev" "$VD/$PV2/data" && touch "$PUB" "$VD/$PV2/dev/$UID2" &&
	mount -o bind /dev/"$DEV2" "$PUB" && mount -o bind "$PUB" "$VD/$PV2/dev/$UID2" || die "block bind mounts"
printf '{"attachmentID":"csi-7d793037a0760186574b0282f2f435e7","driverName":"%s","nodeName":"vm","specVolID":"%s","volumeHandle":"vol-block-0002"}' \
	$BLOCK_DRIVER $PV2 >"$VD/$PV2/data/vol_data.json"
conf BLOCK_MOUNT "$VD/$PV2/dev/$UID2"
conf BLOCK_PUBLISH "$PUB"
mark mounted
cat /proc/1/mountinfo >"$R/mountinfo-mounted.txt"
scrape mounted

# The pod goes: its filesystem mount and the block bind mounts are taken down (the staging
# mount stays until NodeUnstageVolume).
umount "$POD1/mount" || fail "umount pod filesystem"
umount "$VD/$PV2/dev/$UID2" || fail "umount block dev"
umount "$PUB" || fail "umount block publish"
mark unmounted
cat /proc/1/mountinfo >"$R/mountinfo-unmounted.txt"
scrape unmounted
umount "$STAGE" || fail "umount staging"
finish
