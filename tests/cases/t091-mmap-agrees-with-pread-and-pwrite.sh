#!/usr/bin/env bash
# t091-mmap-agrees-with-pread-and-pwrite.sh: a volume file can be mapped
# shared and written through the mapping (the daemon asks the kernel for
# FUSE_DIRECT_IO_ALLOW_MMAP; without it mmap fails with ENODEV), and the
# mapping and pread/pwrite agree both ways: stores show in pread at once
# and after msync, pwrites show in the mapping, and what was stored ends up
# on the raw device after msync.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires python3

make_pool
add_file_device d0 16M >/dev/null
mapperctl create linear v --size 8M
start_daemon

cat >agree.py <<'PY'
import mmap, os, random, sys
path, size = sys.argv[1], int(sys.argv[2])
rnd = random.Random(91)
fd = os.open(path, os.O_RDWR)
m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
want = bytearray(os.pread(fd, size, 0))

def check(what):
    got = os.pread(fd, size, 0)
    if got != want or m[:] != want:
        where = next(i for i in range(size) if got[i] != want[i] or m[i] != want[i])
        sys.exit("%s: byte %d: pread %r, mmap %r, want %r"
                 % (what, where, got[where:where + 8], m[where:where + 8], want[where:where + 8]))

for i in range(200):
    off = rnd.randrange(size - 70000)
    data = os.urandom(rnd.randrange(1, 70000))
    if i % 2:
        m[off:off + len(data)] = data	# store through the mapping
    else:
        os.pwrite(fd, data, off)	# write through the file
    want[off:off + len(data)] = data
    check("after %s %d bytes at %d" % ("store" if i % 2 else "pwrite", len(data), off))
m.flush()
check("after msync")
m.close()
os.close(fd)
sys.stdout.buffer.write(want)
PY
python3 agree.py "$MNT/v" $((8 * MiB)) >want || fail "mmap and pread/pwrite disagree"
cmp want <(vol_from_devices v) || fail "the raw device does not hold what went through the mapping"
