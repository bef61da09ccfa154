# A tiny FUSE filesystem (raw /dev/fuse protocol, no libfuse) with one read-only file whose
# every read takes DELAY seconds. Used by the e2e tests as a slow or hung source.
#   slowfs.py MNT SIZE DELAY [NAME [CONTENT]]
# The file is MNT/NAME ("disk" by default): SIZE zero bytes, or CONTENT (SIZE is then ignored).
# Prints "ready" once mounted. Requests are answered one at a time, in order.
import ctypes, os, struct, sys, time
mnt, size, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
name = (sys.argv[4] if len(sys.argv) > 4 else "disk").encode()
content = sys.argv[5].encode() if len(sys.argv) > 5 else None
if content is not None:
    size = len(content)
fd = os.open("/dev/fuse", os.O_RDWR)
libc = ctypes.CDLL(None, use_errno=True)
opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
if libc.mount(b"slowfs", mnt.encode(), b"fuse", 0, opts) != 0:
    sys.exit("mount: " + os.strerror(ctypes.get_errno()))
print("ready", flush=True)
def attr(ino):
    mode, sz, nlink = (0o40755, 0, 2) if ino == 1 else (0o100444, size, 1)
    return struct.pack("<QQQQQQIIIIIIIIII", ino, sz, (sz + 511) // 512, 0, 0, 0, 0, 0, 0,
                       mode, nlink, 0, 0, 0, 4096, 0)
def reply(unique, err=0, data=b""):
    try:
        os.write(fd, struct.pack("<IiQ", 16 + len(data), -err, unique) + data)
    except OSError:
        pass
zeros = bytes(1 << 20)
while True:
    try:
        req = os.read(fd, (1 << 20) + 4096)
    except OSError as e:
        if e.errno == 19:
            break
        continue
    _, opcode, unique, nodeid = struct.unpack_from("<IIQQ", req)
    body = req[40:]
    if opcode == 26:    # INIT
        major, minor, max_ra, flags = struct.unpack_from("<IIII", body)
        reply(unique, 0, struct.pack("<IIIIHHIIHHI7I", 7, 31, max_ra, 0, 16, 12, 1 << 17, 1,
                                     32, 0, 0, *([0] * 7)))
    elif opcode == 1:   # LOOKUP
        if nodeid == 1 and body.split(b"\0", 1)[0] == name:
            reply(unique, 0, struct.pack("<QQQQII", 2, 0, 3600, 3600, 0, 0) + attr(2))
        else:
            reply(unique, 2)
    elif opcode == 3:   # GETATTR
        reply(unique, 0, struct.pack("<QII", 3600, 0, 0) + attr(nodeid))
    elif opcode in (14, 27):  # OPEN (direct I/O: every read reaches us), OPENDIR
        reply(unique, 0, struct.pack("<QII", 0, 1 if opcode == 14 else 0, 0))
    elif opcode == 15:  # READ
        fh, offset, rsize = struct.unpack_from("<QQI", body)
        time.sleep(delay)
        end = max(offset, min(offset + rsize, size))
        reply(unique, 0, content[offset:end] if content is not None else zeros[:end - offset])
    elif opcode == 28:  # READDIR
        reply(unique, 0)
    elif opcode in (18, 25, 29, 34):  # RELEASE, FLUSH, RELEASEDIR, ACCESS
        reply(unique, 0)
    elif opcode in (2, 36, 42):  # FORGET, INTERRUPT, BATCH_FORGET: no reply
        pass
    elif opcode == 38:  # DESTROY
        reply(unique, 0)
        break
    else:
        reply(unique, 38)  # ENOSYS
