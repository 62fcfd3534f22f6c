#!/usr/bin/env bash
# t608-thin-restore-time-grows-linearly-with-the-dump.sh: restoring 40,000
# <device> elements takes less than 6 times what 10,000 take (linear: 4;
# the quadratic checks and publishing made it 11), and the pool they make
# opens (list) within the same bound.  Each figure is the better of two
# runs, so that a moment of load on this shared machine does not decide.
# bench/restore.sh gives the figures themselves.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

# dump N: N devices of 1 MiB, each mapping 3 blocks of its own.
dump()
{
	awk -v n="$1" 'BEGIN {
		printf "<superblock uuid=\"\" time=\"0\" transaction=\"1\" flags=\"0\" version=\"2\" data_block_size=\"128\" nr_data_blocks=\"%d\">\n", 3 * n
		for (d = 0; d < n; d++) {
			printf "<device dev_id=\"%d\"><range_mapping origin_begin=\"0\" data_begin=\"%d\" length=\"2\" time=\"0\"/>", d + 1, 3 * d
			printf "<single_mapping origin_block=\"9\" data_block=\"%d\" time=\"0\"/></device>\n", 3 * d + 2
		}
		print "</superblock>"
	}'
}

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# measure N: restore_ms and list_ms of N devices into a fresh pool (sparse data: --force).
measure()
{
	local n=$1 pool=$T_DIR/pool-$1 t0

	rm -rf "$pool" "$T_DIR/raw-$n"
	mapperctl --pool "$pool" init >/dev/null
	mapperctl --pool "$pool" device add "$T_DIR/raw-$n" --create $(( (3 * n + 32) * 64 ))K --name r >/dev/null
	mapperctl --pool "$pool" create thin-pool tp --size $(( (3 * n + 16) * 64 ))K \
		--metadata-limit $((2 * n * 4))K --low-water 0 >/dev/null
	t0=$(date +%s%N)
	mapperctl --pool "$pool" restore tp --from "$T_DIR/dump-$n.xml" --force >/dev/null 2>&1 ||
		fail "restore of $n devices failed"
	restore_ms=$(ms "$t0")
	t0=$(date +%s%N)
	[ "$(mapperctl --pool "$pool" list --json 2>/dev/null | jq length)" -eq $((n + 1)) ] ||
		fail "the pool of $n devices does not list them"
	list_ms=$(ms "$t0")
}

best() { [ "$1" -lt "$2" ] && echo "$1" || echo "$2"; }

for n in 10000 40000; do
	dump "$n" >"$T_DIR/dump-$n.xml"
	measure "$n"
	r1=$restore_ms l1=$list_ms
	measure "$n"
	eval "restore_$n=$(best "$r1" "$restore_ms") list_$n=$(best "$l1" "$list_ms")"
done
log "restore: 10000 devices ${restore_10000} ms, 40000 ${restore_40000} ms; list: ${list_10000} ms, ${list_40000} ms"
[ "$restore_40000" -lt $((6 * restore_10000 + 200)) ] ||
	fail "restore of 40000 devices took ${restore_40000} ms, of 10000 ${restore_10000} ms: not linear"
[ "$list_40000" -lt $((6 * list_10000 + 200)) ] ||
	fail "list of 40000 volumes took ${list_40000} ms, of 10000 ${list_10000} ms: not linear"
