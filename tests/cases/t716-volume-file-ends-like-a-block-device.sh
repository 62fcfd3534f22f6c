#!/usr/bin/env bash
# t716-volume-file-ends-like-a-block-device.sh: at the end of a volume
# file, writes, reads, hole punching and zeroing give what they give at the
# end of a block device (a loop device of the same size, side by side):
# a write at the end ENOSPC, across it a short write; a punch or a
# KEEP_SIZE zeroing across it is cut at the end, one at or past it EINVAL;
# a zeroing that would grow the file EINVAL.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires fallocate dd cmp

make_pool
add_file_device d0 16M >/dev/null
mapperctl create linear v --size 4M >/dev/null
start_daemon
size=$((4 * MiB))
head -c "$size" /dev/urandom >data
cp data ref.img
dev=$(attach_loop ref.img)
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none

# outcome TARGET CMD...: CMD with TARGET for @, as "exit status: what it
# said" with TARGET's name taken out of the message.
outcome()
{
	local target=$1 rc=0 out

	shift
	out=$("${@//@/$target}" 2>&1) || rc=$?
	printf '%s: %s' "$rc" "${out//$target/TARGET}"
}

# same CMD...: CMD ends alike on the loop device and on the volume file.
same()
{
	local blk vol

	blk=$(outcome "$dev" "$@")
	vol=$(outcome "$MNT/v" "$@")
	[ "$vol" = "$blk" ] || fail "'$*': the block device gives '$blk', the volume file '$vol'"
	log "ok, $* -> $vol"
}

same fallocate -p -o $((size - 4096)) -l 8192 @
same fallocate -p -o "$size" -l 4096 @
same fallocate -p -o $((size + MiB)) -l 4096 @
same fallocate -z -o $((size - 8192)) -l 16384 @
same fallocate -z -n -o $((size - 8192)) -l 16384 @
same fallocate -o 0 -l 4096 @
same dd if=/dev/zero of=@ bs=4096 seek=$((size / 4096)) count=1 conv=notrunc oflag=direct status=none
same dd if=/dev/zero of=@ bs=8192 seek=$((size - 4096)) count=1 conv=notrunc oflag=direct,seek_bytes status=none
same dd if=@ of=/dev/null bs=4096 skip=$((size / 4096)) count=1 iflag=direct status=none

# Both hold the same bytes after it all: the data, but zeros where the
# operations cut at the end reached.
cmp "$dev" "$MNT/v" || fail "the volume file and the block device differ after the same operations"
[ "$(size_of "$MNT/v")" -eq "$size" ] || fail "the volume file's size changed"
