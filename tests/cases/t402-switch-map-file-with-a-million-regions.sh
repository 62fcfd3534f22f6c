#!/usr/bin/env bash
# t402-switch-map-file-with-a-million-regions.sh: switch-map --file, given
# a relative name, applies a message of a million regions through the
# daemon in seconds; --dump prints the result compressed with R, and the
# dump fed back in changes nothing.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 8G >/dev/null
regions=$((1 << 20))
mapperctl create switch s --size 4G --region-size 4K \
	--path d0:0 --path d0:0 --path d0:0 --path d0:0 --path d0:0 >/dev/null
start_daemon

# 0:4 :3 :2 :1 :0 then R5 up to the end, written out one region at a time
awk -v n=$regions 'BEGIN { print "0:4"; for (r = 1; r < n; r++) printf ":%x\n", 4 - r % 5 }' >million.map
start=$(date +%s%N)
mapperctl switch-map s --file million.map >out || fail "switch-map --file failed"
ms=$((($(date +%s%N) - start) / 1000000))
log "a million-region message took $ms ms"
[ "$ms" -lt 10000 ] || fail "a million-region message took $ms ms"
grep -q "of $regions regions changed" out || fail "unexpected output: $(cat out)"

mapperctl switch-map s --dump >dump
[ "$(tr '\n' ' ' <dump)" = "0:4 :3 :2 :1 :0 R5,ffffb " ] ||
	fail "dump is $(head -c 200 dump)"
mapperctl switch-map s --file dump | grep -q "^switch volume 's': 0 of" ||
	fail "applying the dump changed the table"
mapperctl status s --json >status.json
for p in 0 1 2 3 4; do
	n=$(json_get ".paths[$p].regions" <status.json)
	[ "$n" -ge $((regions / 5)) ] && [ "$n" -le $((regions / 5 + 1)) ] ||
		fail "path $p has $n regions"
done
