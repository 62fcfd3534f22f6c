#!/usr/bin/env bash
# t889-a-coalesced-answer-never-waits-for-a-hung-neighbour.sh: a ring
# thread holds the answers of requests parked on NBD devices while many
# more are in flight, to commit several with one wake-up of their issuer
# (fs/uring_transport.h, coalesced answers).  The hold is bounded in
# time, not only by the answers that would come after: here sixteen
# reads wait on a server that answers nothing (nbdkit's pause filter),
# and a read of a second server on the same CPU, so on the same ring
# thread, must still be answered while they wait.  (The reader opens the
# volume before the pause: an open on that thread would wait for the
# parked reads first, as every request but a READ, WRITE or FSYNC does.)
# Then the first server answers, and its reads complete with the right
# bytes.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit fio taskset
requires_that grep -qx Y /sys/module/fuse/parameters/enable_uring	# the ring threads coalesce

make_pool
hung=$(nbd_server hung 24M)
fast=$(nbd_server fast 24M)
mapperctl device add "$hung" --name hung >/dev/null
mapperctl device add "$fast" --name fast >/dev/null
mapperctl create linear v --segment hung:0:16M --segment fast:0:16M >/dev/null
start_daemon "$POOL" "$T_DIR/mnt" -o transport=io_uring -o nbd_timeout=120

head -c $((32 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M oflag=direct conv=notrunc status=none
cmp data "$MNT/v" || fail "the volume does not read what was written"
# A reader on CPU 0 with the volume open, waiting for the word to read
# 4 KiB of the live server's part (at 20 MiB) into fast.out.
mkfifo go
taskset -c 0 python3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
print("open", flush=True)
open(sys.argv[2]).read()
buf = mmap.mmap(-1, 4096)
n = os.preadv(fd, [buf], 20 << 20)
open(sys.argv[3], "wb").write(buf[:n])
print("read", flush=True)
' "$MNT/v" go fast.out >reader.out &
reader_pid=$!
cleanup_fn end_pid "$reader_pid"
wait_line reader.out '^open$'
# The hung server's connection is open now (it stays while used): pause it.
nbd_pause hung
mark=$(nbd_mark hung)
taskset -c 0 fio --name=hung --filename="$MNT/v" --size=16M --rw=randread --bs=4k \
	--norandommap --direct=1 --ioengine=libaio --iodepth=16 --number_ios=16 \
	--output=fio.out >/dev/null 2>&1 &
fio_pid=$!
cleanup_fn end_pid "$fio_pid"
# Every one of the sixteen reads reached the server: all are parked.
nbd_wait_request hung ' Read id=[0-9]+ offset=' "$mark" 16

# The same CPU's ring thread answers a read of the other server now.
echo go >go
wait_line reader.out '^read$'
cmp -n 4096 fast.out <(tail -c +$((20 * MiB + 1)) data) || fail "the read of the live server is wrong"
kill -0 "$fio_pid" 2>/dev/null || fail "fio's reads ended while their server answered nothing"

nbd_resume hung
wait "$fio_pid" || fail "fio's reads failed once the server answered: $(tail -5 fio.out)"
grep -q "err= 0" fio.out || fail "fio saw errors: $(grep err= fio.out)"
cmp data "$MNT/v" || fail "the volume does not read what was written, after the pause"
stop_daemon
