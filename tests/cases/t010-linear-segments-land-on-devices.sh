#!/usr/bin/env bash
# t010-linear-segments-land-on-devices.sh: data written through a linear
# volume made of explicit segments on two devices reads back, and each piece
# sits in the backing file exactly where its segment says (after the 1 MiB
# label), while the gaps between segments stay untouched.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
d0=$(add_file_device d0 32M)
d1=$(add_file_device d1 32M)
# volume [0,8M) -> d0@0, [8M,14M) -> d1@4M, [14M,17M) -> d0@16M
mapperctl create linear v --segment d0:0:8M --segment d1:4M:6M --segment d0:16M:3M
start_daemon

[ "$(size_of "$MNT/v")" -eq $((17 * MiB)) ] || fail "v is $(size_of "$MNT/v") bytes, want 17 MiB"
head -c $((17 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
cmp data "$MNT/v" || fail "v does not read back what was written (page cache)"
dd if="$MNT/v" bs=1M iflag=direct status=none | cmp data - ||
	fail "v does not read back what was written (O_DIRECT)"
stop_daemon

piece()
{
	local file=$1 dev_off=$2 vol_off=$3 len=$4

	cmp <(read_raw "$file" "$dev_off" "$len") \
		<(tail -c +$((vol_off + 1)) data | head -c "$len") ||
		fail "volume bytes [$vol_off,+$len) are not at data offset $dev_off of $file"
}
piece "$d0" 0 0 $((8 * MiB))
piece "$d1" $((4 * MiB)) $((8 * MiB)) $((6 * MiB))
piece "$d0" $((16 * MiB)) $((14 * MiB)) $((3 * MiB))

# Nothing strayed outside the segments: the gaps are still zeros.
zeros() { cmp <(read_raw "$1" "$2" "$3") <(head -c "$3" /dev/zero) || fail "$4"; }
zeros "$d0" $((8 * MiB)) $((8 * MiB)) "d0 data [8M,16M) was written to"
zeros "$d0" $((19 * MiB)) $((12 * MiB)) "d0 data past 19M was written to"
zeros "$d1" 0 $((4 * MiB)) "d1 data [0,4M) was written to"
zeros "$d1" $((10 * MiB)) $((21 * MiB)) "d1 data past 10M was written to"
