"""Checks of the `kubelet` VM scenario (guest/scenarios/kubelet.sh), mixed into check.py's
Checker. The kubernetes collector against the guest kernel's own mount table, laid out as the
kubelet lays out CSI volumes: a filesystem volume (ext4 on NVMe/TCP namespace 1, staged at
.../csi/<driver>/<hash>/globalmount and bind-mounted into the pod's volume directory) and a raw
block volume (namespace 2's device node bind-mounted out of devtmpfs, publish path, then
volumeDevices/<pv>/dev/<uid>). Against the kernel's view (mountinfo-*.txt, blockdevs.txt):
  mounts      the guest's mountinfo shows the pod mount with the device's major:minor, the block
              bind mount with devtmpfs's major:minor and root /<disk> (what the collector reads);
  mounted     one nvmeof_kubernetes_volume_info per volume, disk = sysfs's name of the mounted
              device (filesystem) or of the bound node (block), PV, pod uid, mode and the
              vol_data.json driver; nothing for the staging mount or the publish path (no pod);
  unmounted   no series once the pod's mounts are gone (staging still mounted);
  always      collector kubernetes succeeds; before the kubelet directory exists, no series.
"""
import os


def parse_mountinfo(path):
    """mountinfo -> list of dicts (devt, root, mount_point, fs_type); \\ooo escapes undone."""
    def unescape(s):
        out, i = bytearray(), 0
        b = s.encode()
        while i < len(b):
            if b[i:i + 1] == b'\\' and i + 3 < len(b) and b[i + 1:i + 4].isdigit():
                out.append(int(b[i + 1:i + 4], 8))
                i += 4
            else:
                out.append(b[i])
                i += 1
        return out.decode(errors='replace')
    mounts = []
    for line in open(path, errors='replace'):
        f = line.split()
        if '-' not in f:
            continue
        sep = f.index('-')
        mounts.append({'devt': f[2], 'root': unescape(f[3]), 'mount_point': unescape(f[4]),
                       'fs_type': f[sep + 1]})
    return mounts


class KubeletChecks:
    def kubelet_series(self, samples):
        return [l for n, l, v in samples if n == 'nvmeof_kubernetes_volume_info' and v == 1]

    def scenario_kubelet(self):
        e = self.env
        blockdevs = {}
        path = os.path.join(self.dir, 'blockdevs.txt')
        if os.path.exists(path):
            for line in open(path):
                name, _, devt = line.strip().partition(' ')
                blockdevs[name] = devt
        self.check(e['DISK1'] in blockdevs and e['DISK2'] in blockdevs,
                   'sysfs names both namespaces (%s, %s)' % (e['DISK1'], e['DISK2']), str(sorted(blockdevs)))
        print('info native multipath %s; filesystem on %s (%s), raw block %s (%s)' % (
            e.get('NATIVE_MULTIPATH'), e['DISK1'], blockdevs.get(e['DISK1']), e['DISK2'],
            blockdevs.get(e['DISK2'])))

        # The kernel's mount table as the collector read it.
        path = os.path.join(self.dir, 'mountinfo-mounted.txt')
        mounts = parse_mountinfo(path) if os.path.exists(path) else []
        by_point = {m['mount_point']: m for m in mounts}
        devtmpfs = [m['devt'] for m in mounts if m['fs_type'] == 'devtmpfs' and m['mount_point'] == '/dev']
        fs, blk, stage = by_point.get(e['POD1_MOUNT']), by_point.get(e['BLOCK_MOUNT']), by_point.get(e['STAGE'])
        if self.check(fs is not None, 'mountinfo: pod filesystem mount %s' % e['POD1_MOUNT']):
            print('     %s %s %s %s' % (fs['devt'], fs['root'], fs['fs_type'], fs['mount_point']))
            self.check(fs['devt'] == blockdevs.get(e['DISK1']) and fs['fs_type'] == 'ext4',
                       'mountinfo: pod filesystem mount is ext4 on %s (%s)' % (e['DISK1'], blockdevs.get(e['DISK1'])),
                       '%s %s' % (fs['devt'], fs['fs_type']))
        if self.check(stage is not None, 'mountinfo: staging mount %s' % e['STAGE']):
            self.check(stage['devt'] == blockdevs.get(e['DISK1']), 'mountinfo: staging mount on %s' % e['DISK1'],
                       stage['devt'])
        if self.check(blk is not None, 'mountinfo: block bind mount %s' % e['BLOCK_MOUNT']):
            print('     %s %s %s %s' % (blk['devt'], blk['root'], blk['fs_type'], blk['mount_point']))
            self.check(blk['root'] == '/' + e['DISK2'] and blk['fs_type'] == 'devtmpfs' and
                       len(devtmpfs) == 1 and blk['devt'] == devtmpfs[0],
                       'mountinfo: block bind mount root /%s, devtmpfs\'s major:minor %s' % (
                           e['DISK2'], devtmpfs[:1]),
                       'root %s, %s %s' % (blk['root'], blk['fs_type'], blk['devt']))

        want = [
            {'disk': e['DISK1'], 'persistentvolume': e['PV1'], 'uid': e['UID1'],
             'volume_mode': 'filesystem', 'csi_driver': e['FS_DRIVER']},
            {'disk': e['DISK2'], 'persistentvolume': e['PV2'], 'uid': e['UID2'],
             'volume_mode': 'block', 'csi_driver': e['BLOCK_DRIVER']},
        ]
        for where in ('no-kubelet', 'mounted', 'unmounted'):
            samples = self.metrics(where)
            self.expect_one(samples, where, 'nvmeof_exporter_collector_success', 1.0, collector='kubernetes')
            failed = [s[1].get('collector') for s in self.find(samples, 'nvmeof_exporter_collector_success')
                      if s[2] != 1]
            self.check(not failed, '%s no collector failed' % where, 'failed: %s' % failed)
            series = self.kubelet_series(samples)
            for l in series:
                print('     %s nvmeof_kubernetes_volume_info{%s}' % (
                    where, ','.join('%s="%s"' % kv for kv in sorted(l.items()))))
            if where == 'mounted':
                for w in want:
                    self.expect_one(samples, where, 'nvmeof_kubernetes_volume_info', 1.0, **w)
                # Exactly these two: the staging mount and the publish path name no pod.
                self.check(len(series) == 2, '%s: exactly 2 nvmeof_kubernetes_volume_info series '
                           '(none for the staging mount or the publish path)' % where, str(series))
            else:
                self.check(not series, '%s: no nvmeof_kubernetes_volume_info series' % where, str(series))
        self.exporter_alive()
