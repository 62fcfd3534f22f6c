#!/usr/bin/env bash
# t400-switch-routes-by-table.sh: with the table 012012... over three
# file-backed paths, every region written through a switch volume lands on
# the path the table names, at the path's offset plus the region's (checked
# on the backing files, and absent from the other paths); after a remap to
# 210210... new writes follow the new table; and a restarted daemon keeps
# the table.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
for p in 0 1 2; do
	dev[p]=$(add_file_device "d$p" 20M)
done
regions=12
mapperctl create switch s --size 12M --region-size 1M --path d0 --path d1 --path d2 >/dev/null
start_daemon
mapperctl status s --json >status.json
for p in 0 1 2; do
	off[p]=$(json_get ".paths[$p].offset" <status.json)
done

# check_routing DATA PATTERN: region r of DATA is on path PATTERN[r % 3]
# and on no other path.
check_routing()
{
	local data=$1 pattern=$2 r p want

	for ((r = 0; r < regions; r++)); do
		want=${pattern:$((r % 3)):1}
		for p in 0 1 2; do
			if [ "$p" = "$want" ]; then
				cmp <(read_raw "${dev[p]}" $((off[p] + r * MiB)) $MiB) \
					<(tail -c +$((r * MiB + 1)) "$data" | head -c $MiB) ||
					fail "region $r is not on path $p ($pattern)"
			else
				! cmp -s <(read_raw "${dev[p]}" $((off[p] + r * MiB)) $MiB) \
					<(tail -c +$((r * MiB + 1)) "$data" | head -c $MiB) ||
					fail "region $r is also on path $p ($pattern)"
			fi
		done
	done
}

head -c $((regions * MiB)) /dev/urandom >data1
dd if=data1 of="$MNT/s" bs=1M oflag=direct conv=notrunc,fsync status=none
cmp data1 "$MNT/s" || fail "s does not read back what was written"
check_routing data1 012

mapperctl switch-map s 0:2 :1 :0 R3,9 >/dev/null
head -c $((regions * MiB)) /dev/urandom >data2
dd if=data2 of="$MNT/s" bs=1M oflag=direct conv=notrunc,fsync status=none
check_routing data2 210

stop_daemon
start_daemon
[ "$(mapperctl switch-map s --dump | tr '\n' ' ')" = "0:2 :1 :0 R3,9 " ] ||
	fail "the table after a restart is $(mapperctl switch-map s --dump | tr '\n' ' ')"
dd if="$MNT/s" bs=1M iflag=direct status=none | cmp data2 - ||
	fail "after a restart, s does not read back through the stored table"
