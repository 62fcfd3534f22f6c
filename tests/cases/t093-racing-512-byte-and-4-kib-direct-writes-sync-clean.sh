#!/usr/bin/env bash
# t093-racing-512-byte-and-4-kib-direct-writes-sync-clean.sh: a 512-byte
# and a 4 KiB O_DIRECT writer racing over the same MiB (xfstests
# generic/095, issue 25), then fsync, on a linear, a thin and a switch
# volume, through a loop device with 512-byte sectors, and on a raw device
# with 4 KiB sectors (where every 512-byte write is a read-modify-write of
# its 4 KiB): fsync returns 0, the pool logs no failed flush or commit, and
# every sector holds what the last writer of it wrote.  Two writers of
# alternate 256-byte halves of every sector lose none of each other's
# bytes.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires xfs_io

make_pool
add_file_device d0 64M >/dev/null
add_file_device d1 64M >/dev/null
truncate -s 32M k0.img
mapperctl device add "$(attach_loop k0.img 4096)" --name k0 >/dev/null
mapperctl create linear lin --size 8M --on d0 >/dev/null
mapperctl create linear lp --size 8M --on d0 >/dev/null
mapperctl create switch sw --size 8M --region-size 1M --path d0 --path d1 >/dev/null
mapperctl create thin-pool tp --size 16M --on d1 >/dev/null
mapperctl create thin th --pool tp --size 8M >/dev/null
mapperctl create linear k4 --size 8M --on k0 >/dev/null
start_daemon
mark=$(log_mark)

PASSES=16			# of the 4 KiB writer, each with its own byte
last=$(printf '%02x' $((0x20 + PASSES)))

# sectors FILE: the byte each 512-byte sector of FILE's first MiB holds,
# one line each, read with O_DIRECT; "mixed" for a sector of several.
sectors()
{
	dd if="$1" bs=1M count=1 iflag=direct status=none | od -An -v -tx1 -w512 |
		awk '{ for (i = 2; i <= NF; i++) if ($i != $1) { print "mixed"; next } print $1 }'
}

# fsync_ok FILE: an fsync of FILE succeeds.
fsync_ok()
{
	local out

	out=$(xfs_io -c fsync "$1" 2>&1) && [ -z "$out" ] || fail "fsync of $1: $out"
}

# race FILE: the 4 KiB writer writes the MiB PASSES times, byte 0x21 the
# first time, 0x22 the next ...; the 512-byte writer writes 0x11 over it
# again and again until the other is done.  The last pass of the 4 KiB
# writer covered every sector and only 0x11 came after it, so a sector
# holds 0x11 or that pass's byte; any other byte is a write undone (by a
# stale cached page, or by a read-modify-write that raced it).
race()
{
	local file=$1 p pid bad
	local -a big=()

	for ((p = 1; p <= PASSES; p++)); do
		big+=(-c "pwrite -q -S $((0x20 + p)) -b 4096 0 1m")
	done
	xfs_io -d "${big[@]}" "$file" 2>big.err &
	pid=$!
	while :; do
		xfs_io -d -c "pwrite -q -S 0x11 -b 512 0 1m" "$file" 2>>small.err
		kill -0 "$pid" 2>/dev/null || break
	done
	wait "$pid" || fail "the 4 KiB writer on $file failed: $(cat big.err)"
	[ ! -s big.err ] && [ ! -s small.err ] ||
		fail "writes to $file failed: $(cat big.err small.err | head -3)"
	fsync_ok "$file"
	bad=$(sectors "$file" | grep -v -x -e 11 -e "$last" | sort | uniq -c | head -5) || true
	[ -z "$bad" ] || fail "$file holds sectors neither 0x11 nor 0x$last after the race: $bad"
}

# last_writer_wins FILE: 0x33 in 512-byte writes over the MiB, then 0x44
# in 4 KiB writes over every other 4 KiB of it; it reads back so exactly.
last_writer_wins()
{
	local file=$1 k s
	local -a even=()

	for ((k = 0; k < 256; k += 2)); do
		even+=(-c "pwrite -q -S 0x44 $((k * 4096)) 4096")
	done
	xfs_io -d -c "pwrite -q -S 0x33 -b 512 0 1m" "${even[@]}" "$file" ||
		fail "sequential writes to $file failed"
	fsync_ok "$file"
	for ((s = 0; s < 2048; s++)); do
		((s / 8 % 2)) && echo 33 || echo 44
	done >want
	sectors "$file" | cmp -s want - ||
		fail "$file does not hold what its last writer wrote to each sector"
}

# halves FILE: two writers at once, one on the first 256 bytes of every
# sector of the MiB, one on the second; none undoes the other's bytes.
halves()
{
	local file=$1 k pid
	local -a first=() second=()

	for ((k = 0; k < 2048; k++)); do
		first+=(-c "pwrite -q -S 0x55 $((k * 512)) 256")
		second+=(-c "pwrite -q -S 0x66 $((k * 512 + 256)) 256")
	done
	xfs_io "${first[@]}" "$file" &
	pid=$!
	xfs_io "${second[@]}" "$file" || fail "the writer of second halves on $file failed"
	wait "$pid" || fail "the writer of first halves on $file failed"
	fsync_ok "$file"
	dd if="$file" bs=1M count=1 iflag=direct status=none | od -An -v -tx1 -w256 |
		awk 'NR % 2 { w = "55" } !(NR % 2) { w = "66" }
		     { for (i = 1; i <= NF; i++) if ($i != w) { print NR - 1; exit 1 } }' >halves.bad ||
		fail "$file lost bytes of a 256-byte write: half $(cat halves.bad) differs"
}

for v in lin th sw k4; do
	race "$MNT/$v"
	last_writer_wins "$MNT/$v"
	log "$v: fsync clean, every sector as its last writer left it"
done
loop=$(attach_loop "$MNT/lp" 512)
[ "$(loop_dio "$loop")" = 1 ] || fail "$loop fell back to buffered I/O"
race "$loop"
last_writer_wins "$loop"
detach_loop "$loop"
log "loop with 512-byte sectors on lp: fsync clean, every sector as its last writer left it"
for v in lin k4; do
	halves "$MNT/$v"
done
log "halves of sectors written at once on lin and k4: no byte lost"

errors=$(tail -c +$((mark + 1)) "$POOL/mapperfs.log" | grep -E "^$LOG_TIME (error|warning):") || true
[ -z "$errors" ] || fail "the pool logged: $(head -3 <<<"$errors")"
