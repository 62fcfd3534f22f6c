#!/usr/bin/env bash
# t410-switch-remap-under-fio.sh: three paths that reach the same storage
# (the same device and offset, as multipath does), a fio verify job runs
# clean while the region table is replaced over and over, and the per-path
# I/O counters of `status --json` show the routing following the table.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires fio
requires jq

make_pool
add_file_device d0 48M >/dev/null
mapperctl create switch s --size 32M --region-size 64K \
	--path d0:0 --path d0:0 --path d0:0 >/dev/null
start_daemon

regions=$((32 * MiB / (64 * 1024)))
last=$(printf '%x' $((regions - 1)))
tables=("0:0 :1 :2 R3,$(printf '%x' $((regions - 3)))"
	"0:2 :0 :1 R3,$(printf '%x' $((regions - 3)))"
	"0:1 R1,$last"
	"0:0 :0 :2 :1 R4,$(printf '%x' $((regions - 4)))")

fio --name=verify --filename="$MNT/s" --size=32M --rw=randwrite --bs=4k \
	--direct=1 --ioengine=libaio --iodepth=16 --verify=crc32c \
	--verify_backlog=512 --verify_fatal=1 --loops=2 \
	--output=fio.out &
fio_pid=$!
stop_fio() { ! kill "$1" 2>/dev/null || wait_pid "$1" || true; }
cleanup_fn stop_fio "$fio_pid"
remaps=0
for ((i = 0; i < 200 && remaps < 2000; i++)); do
	kill -0 "$fio_pid" 2>/dev/null || break
	# shellcheck disable=SC2086 # each table is several arguments
	mapperctl switch-map s ${tables[i % ${#tables[@]}]} >/dev/null ||
		fail "switch-map failed while fio ran"
	remaps=$((remaps + 1))
done
wait "$fio_pid" || fail "fio failed while tables were replaced: $(tail -5 fio.out)"
grep -q "err= 0" fio.out || fail "fio reported errors: $(grep err= fio.out)"
log "$remaps tables replaced while fio verified"
[ "$remaps" -ge 5 ] || fail "only $remaps tables were replaced while fio ran"

# counters PATH FIELD: a live counter of a path
counters() { mapperctl status s --json | json_get ".paths[$1].$2"; }

# With every region on path P, a whole read goes to P and to no other.
for p in 2 0 1; do
	mapperctl switch-map s "0:$p" "R1,$last" >/dev/null
	for q in 0 1 2; do before[q]=$(counters "$q" read_bytes); done
	dd if="$MNT/s" of=/dev/null bs=1M iflag=direct status=none
	for q in 0 1 2; do
		grew=$(($(counters "$q" read_bytes) - before[q]))
		if [ "$q" = "$p" ]; then
			[ "$grew" -eq $((32 * MiB)) ] ||
				fail "path $q read $grew bytes, want 32 MiB (table: all $p)"
		else
			[ "$grew" -eq 0 ] || fail "path $q read $grew bytes (table: all $p)"
		fi
	done
done
