#!/usr/bin/env bash
# t717-admin-commands-make-the-kernel-forget-only-what-they-changed.sh:
# after a report (list, status, check, device list) the daemon tells the
# kernel nothing, so the pages of a shared mapping of a volume stay in the
# page cache; after a command that changes a volume behind the mount
# (extend, switch-map, set --read-only) it tells the kernel to forget that
# volume's file, and only that one: the mapping then shows the new content;
# a rename or a remove makes it forget the name.  Each notification is a
# line of the daemon's log at debug level.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires python3

make_pool
add_file_device d0 32M >/dev/null
add_file_device d1 32M >/dev/null
mapperctl create linear v --size 4M >/dev/null
mapperctl create linear other --size 4M >/dev/null
mapperctl create switch s --size 2M --region-size 1M --path d0 --path d1 >/dev/null
start_daemon "$POOL" "$T_DIR/mnt" -o log=debug

# mapped.py FILE CMD...: maps FILE shared, reads every page of it in, runs
# CMD and prints how many of its pages are in the page cache before and
# after, and the first byte the mapping shows after.
cat >mapped.py <<'PY'
import ctypes, mmap, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
path, cmd = sys.argv[1], sys.argv[2:]
fd = os.open(path, os.O_RDWR)
size = os.fstat(fd).st_size
m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
pages = size // mmap.PAGESIZE
def resident():
    vec = (ctypes.c_ubyte * pages)()
    if libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec):
        sys.exit("mincore: %s" % os.strerror(ctypes.get_errno()))
    return sum(b & 1 for b in vec)
sum(m[i] for i in range(0, size, mmap.PAGESIZE))	# fault every page in
before = resident()
subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
print(before, resident(), m[0])
PY
ctl=$MAPPERFS_BUILD/bin/mapperctl
pages=$((4 * MiB / 4096))

# told [MARK]: the lines of the log since MARK that tell the kernel to forget.
told() { tail -c +$(($1 + 1)) "$POOL/mapperfs.log" | grep -c 'told the kernel to forget' || true; }
ino() { stat -c %i "$MNT/$1"; }

stat "$MNT/v" "$MNT/other" "$MNT/s" >/dev/null	# the kernel holds all three
mark=$(log_mark)
read -r before after _ < <(python3 mapped.py "$MNT/v" sh -c \
	"$ctl list && $ctl status && $ctl status v --json && $ctl device list && $ctl check")
[ "$before" -eq "$pages" ] || fail "only $before of $pages pages were read into the page cache"
[ "$after" -eq "$pages" ] ||
	fail "reports made the kernel drop the mapped pages of v: $after of $pages are left"
[ "$(told "$mark")" -eq 0 ] || fail "reports made the daemon tell the kernel to forget: $(told "$mark") times"

# extend: v's file, and no other
mark=$(log_mark)
read -r _ after _ < <(python3 mapped.py "$MNT/v" "$ctl" extend v --size 8M)
[ "$after" -lt "$pages" ] || fail "extend left the kernel's cache of v as it was"
[ "$(size_of "$MNT/v")" -eq $((8 * MiB)) ] || fail "v is $(size_of "$MNT/v") bytes after extend"
[ "$(told "$mark")" -eq 1 ] || fail "extend of v told the kernel $(told "$mark") times, not once"
tail -c +$((mark + 1)) "$POOL/mapperfs.log" | grep -q "forget the file of inode $(ino v)\b" ||
	fail "extend did not make the kernel forget v's file"

# switch-map: the mapping shows what the new path holds there (zeros)
printf 'A%.0s' $(seq 4096) | dd of="$MNT/s" bs=4096 oflag=direct conv=notrunc status=none
mark=$(log_mark)
read -r _ _ first < <(python3 mapped.py "$MNT/s" "$ctl" switch-map s 0:1)
[ "$first" -eq 0 ] || fail "after switch-map the mapping of s still shows byte $first of the old path"
[ "$(told "$mark")" -eq 1 ] || fail "switch-map of s told the kernel $(told "$mark") times, not once"

# set --read-only: the mode changes, one file
mark=$(log_mark)
mapperctl set other --read-only >/dev/null
[ "$(stat -c %a "$MNT/other")" = 400 ] || fail "other is mode $(stat -c %a "$MNT/other") when read-only"
[ "$(told "$mark")" -eq 1 ] || fail "set --read-only told the kernel $(told "$mark") times, not once"

# rename: the old name
ls "$MNT" >/dev/null
stat "$MNT/other" >/dev/null
mark=$(log_mark)
mapperctl rename other web >/dev/null
[ -e "$MNT/web" ] && [ ! -e "$MNT/other" ] || fail "the mount does not show the rename"
tail -c +$((mark + 1)) "$POOL/mapperfs.log" | grep -q "forget the name 'other'" ||
	fail "rename did not make the kernel forget the name 'other'"
[ "$(told "$mark")" -eq 1 ] || fail "rename told the kernel $(told "$mark") times, not once"

# remove: the name
stat "$MNT/web" >/dev/null
mark=$(log_mark)
mapperctl remove web >/dev/null
tail -c +$((mark + 1)) "$POOL/mapperfs.log" | grep -q "forget the name 'web'" ||
	fail "remove did not make the kernel forget the name 'web'"
[ "$(told "$mark")" -eq 1 ] || fail "remove told the kernel $(told "$mark") times, not once"
