#!/usr/bin/env bash
# t538-a-failed-pools-volumes-are-named-whole.sh: a thin pool that fails
# with more volumes than one line can name says which ones are not served
# with whole names and a count of the rest ("'a', 'b' and 28 more"), never
# a name cut in the middle: in the daemon's warning at start and in
# `check`.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires sqlite3

NR=30
make_pool
add_file_device d0 128M >/dev/null
mapperctl create thin-pool tp --size 64M >/dev/null
for i in $(seq 1 $NR); do
	mapperctl create thin "volume-with-a-long-name-$i" --pool tp --size 1M >/dev/null
done
sqlite3 "$POOL/pool.db" "UPDATE thin_dir SET leaves = x'01'"	# every map is damaged
start_daemon "$POOL" "$T_DIR/mnt" 2>start.err
mapperctl check >check.out 2>/dev/null && fail "check found nothing wrong with the damaged pool"

# whole LINE: the names end in "and N more are not served", and with N
# they count every volume.
whole()
{
	local line=$1 names more

	[[ $line =~ \ and\ ([0-9]+)\ more\ are\ not\ served$ ]] ||
		fail "the list does not end in 'and N more are not served': $line"
	more=${BASH_REMATCH[1]}
	names=$(grep -oE "'volume-with-a-long-name-[0-9]+'(, | and)" <<<"$line" | wc -l)
	[ $((names + more)) -eq "$NR" ] ||
		fail "$names whole names and $more more are not the $NR volumes: $line"
}
warning=$(grep -E "thin pool 'tp' is failed .*: volumes " start.err) ||
	fail "the daemon did not warn that tp's volumes are not served: $(cat start.err)"
whole "$warning"
whole "$(grep -E "^thin pool 'tp': it is failed" check.out)"
