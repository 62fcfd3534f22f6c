#!/usr/bin/env bash
# t715-group-snapshot-is-consistent-across-volumes.sh: a writer counts on
# two volumes in turn (n to a, then n to b, then n+1 to a ...); each
# `snapshot --group` taken meanwhile shows b's count equal to a's or one
# behind, never ahead nor further behind: the two snapshots are one
# instant of both.  A group that names a missing origin or a taken name
# creates nothing.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq python3

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin a --pool tp --size 4M >/dev/null
mapperctl create thin b --pool tp --size 4M >/dev/null
start_daemon

# The writer: 4 KiB records (direct I/O on the mount) with the count in
# them, a then b, until the stop file appears; it says on a fifo when it
# has written 100.
cat >writer.py <<'PY'
import os, sys
a = os.open(sys.argv[1], os.O_WRONLY)
b = os.open(sys.argv[2], os.O_WRONLY)
n = 0
while not os.path.exists("stop"):
    n += 1
    rec = (b"%020d" % n).ljust(4096, b"\0")
    os.pwrite(a, rec, 0)
    os.pwrite(b, rec, 0)
    if n == 100:
        with open("started", "w") as f:
            f.write("100\n")
PY
stop_writer() { kill "$1" 2>/dev/null || true; }
mkfifo started
python3 writer.py "$MNT/a" "$MNT/b" &
writer=$!
cleanup_fn stop_writer "$writer"
read -r line <started || fail "the writer did not start"

count() { echo $((10#$(head -c 20 "$1"))); }
for i in 1 2 3 4 5; do
	mapperctl snapshot --group --active a="a$i" b="b$i" >/dev/null || fail "group snapshot $i failed"
done
touch stop
wait "$writer" || fail "the writer failed"
for i in 1 2 3 4 5; do
	na=$(count "$MNT/a$i") nb=$(count "$MNT/b$i")
	[ "$nb" -eq "$na" ] || [ "$nb" -eq $((na - 1)) ] ||
		fail "snapshot group $i is not one instant: a at $na, b at $nb"
done

expect_fail -m "no volume 'nope'" mapperctl snapshot --group a=x1 nope=x2
expect_fail -m "volume 'a1' exists" mapperctl snapshot --group a=x1 b=a1
expect_fail -s 1 -m "is not ORIGIN=NAME" mapperctl snapshot --group a
mapperctl status x1 >/dev/null 2>&1 && fail "a failed group left snapshot x1 behind"
mapperctl check >/dev/null || fail "check fails after group snapshots"
