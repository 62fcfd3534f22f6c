#!/usr/bin/env bash
# t810-list-report-options-agree-with-json.sh: list's lvs options show
# what list --json says.  `list -o name,size --select 'size > 1G && @vm'`
# lists exactly the volumes jq picks from --json, with their sizes;
# --sort orders rows as jq's sort_by; --units and --nosuffix print
# --json's bytes in the unit asked; --noheadings and --separator shape
# the table; -o +FIELD adds a column to the default ones; --json -o prints
# only the fields asked; thin_id is dump's dev_id; exclusive and shared
# are --json's bytes; lvs's and pvs's field names are taken.  device list
# takes the same options.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 8G >/dev/null
mapperctl create linear big --size 2G >/dev/null
mapperctl create linear small --size 100M >/dev/null
mapperctl create thin-pool tp --size 1G >/dev/null
mapperctl create thin t1 --pool tp --size 3G >/dev/null
mapperctl create thin t2 --pool tp --size 1536M >/dev/null
start_daemon
for v in big small t1; do mapperctl set "$v" --addtag vm >/dev/null; done
mapperctl set t1 --addtag db >/dev/null
mapperctl set tp --addtag pool >/dev/null
dd if=/dev/urandom of="$MNT/t1" bs=64K count=32 conv=notrunc,fsync status=none
mapperctl snapshot t1 s1 >/dev/null
dd if=/dev/urandom of="$MNT/t1" bs=64K count=8 conv=notrunc,fsync status=none
mapperctl list --json >all.json

# The issue's line: the table, and its JSON form, against jq over --json.
jq -r '.[] | select(.size > 1073741824 and ((.tags // []) | index("vm"))) |
	"\(.name) \(.size)"' all.json >want
[ "$(cut -d' ' -f1 want | tr '\n' ' ')" = "big t1 " ] || fail "the test's own pool is not as meant: $(cat want)"
mapperctl list -o name,size --select 'size > 1G && @vm' >table
head -1 table | grep -Eq '^NAME +SIZE$' || fail "the heading is not NAME SIZE: $(head -1 table)"
diff <(tail -n +2 table | awk '{ print $1 }') <(cut -d' ' -f1 want) ||
	fail "-o name,size --select picked other rows than jq"
mapperctl list -o name,size --select 'size > 1G && @vm' --units b --nosuffix --noheadings \
	--separator ' ' >got
diff got want || fail "--units b --nosuffix sizes differ from --json's"
mapperctl list -o name,size --select 'size > 1G && @vm' --json >got.json
jq -e --slurpfile w <(jq '[.[] | select(.size > 1073741824 and ((.tags // []) | index("vm"))) |
	{name, size}]' all.json) '. == $w[0]' got.json >/dev/null ||
	fail "--json -o name,size --select differs from jq's pick: $(cat got.json)"

# --sort: descending size, then name, as jq sorts.
mapperctl list -o name --sort -size,name --noheadings | awk '{ print $1 }' >got
jq -r 'sort_by(-.size, .name) | .[].name' all.json >want
diff got want || fail "--sort -size,name differs from jq's sort_by"

# --units: each unit's figure is --json's bytes divided, two decimals, with lvs's suffix.
for u in k m g; do
	mapperctl list -o name,size --units "$u" --noheadings --separator : >got
	jq -r --arg u "$u" '.[] | "\(.name):\(.size)"' all.json |
		awk -F: -v u="$u" 'BEGIN { d["k"] = 1024; d["m"] = 1048576; d["g"] = 1073741824 }
			{ printf "%s:%.2f%s\n", $1, $2 / d[u], u }' >want
	diff got want || fail "--units $u differs from --json's bytes"
done
mapperctl list -o size --units h --noheadings --select 'name == big' | grep -qx ' *2.00g' ||
	fail "--units h does not print big as 2.00g"

# lvs's names for the fields pick the same columns.
diff <(mapperctl list -o lv_name,lv_size,lv_tags --sort -lv_size --select 'lv_size > 1G') \
	<(mapperctl list -o name,size,tags --sort -size --select 'size > 1G') ||
	fail "lvs's field names do not pick what ours do"
diff <(mapperctl device list -o pv_name,pv_free) <(mapperctl device list -o path,free) ||
	fail "pvs's field names do not pick what ours do"

# -o +FIELD: the default columns, then the one added.
mapperctl list >default
mapperctl list -o +tags >plus
head -1 plus | grep -q "^$(head -1 default | sed 's/ *$//') *TAGS$" ||
	fail "-o +tags is not the default heading and TAGS: $(head -1 plus)"
grep -Eq '^t1 .*db,vm$' plus || fail "-o +tags does not show t1's tags: $(cat plus)"

# --json -o: only the fields asked, each as --json has it.
mapperctl list -o name,exclusive,shared,tags --json >got.json
jq -e '.[] | select(.name == "t1") | keys == ["exclusive", "name", "shared", "tags"]' got.json \
	>/dev/null || fail "--json -o printed other fields: $(cat got.json)"
jq -e --slurpfile all all.json '.[] | select(.name == "t1") as $t |
	$all[0][] | select(.name == "t1") |
	.exclusive_bytes == $t.exclusive and .shared_bytes == $t.shared and .tags == $t.tags' \
	got.json >/dev/null || fail "exclusive and shared differ from --json's: $(cat got.json)"
[ "$(jq '.[] | select(.name == "t1") | .shared' got.json)" -gt 0 ] || fail "t1 shares nothing with s1"

# thin_id is the dev_id dump gives the volume of that name.
mapperctl dump tp >dump.xml
for v in t1 t2 s1; do
	id=$(mapperctl list -o thin_id --noheadings --select "name == $v" | tr -d ' ')
	grep -q "dev_id=\"$id\" .* name=\"$v\"" dump.xml ||
		fail "thin_id $id of $v is not its dev_id in dump: $(grep "name=\"$v\"" dump.xml)"
done
[ -z "$(mapperctl list -o thin_id --noheadings --select 'name == big' | tr -d ' ')" ] ||
	fail "a linear volume has a thin_id"

# device list: the same options over its own fields.
mapperctl device set d0 --addtag ssd >/dev/null
mapperctl device list --json >devs.json
mapperctl device list -o name,free,tags --select '@ssd && free > 1G' --json >got.json
jq -e --slurpfile d devs.json '. == [$d[0][] | {name, free, tags}]' got.json >/dev/null ||
	fail "device list --json -o differs from device list --json: $(cat got.json)"
[ "$(mapperctl device list -o name --noheadings --select '@hdd')" = "" ] ||
	fail "device list --select @hdd picked an untagged device"
mapperctl device list -o help | grep -q '^uuid ' || fail "device list -o help does not list uuid"
mapperctl list -o help | grep -q '^thin_id ' || fail "list -o help does not list thin_id"
# Cpy%Sync counts the legs not failed: a failed one is the state's (degraded).
mapperctl list -o help | grep -q "^sync_percent .*copied to every leg not failed, %; a failed leg shows in state" ||
	fail "list -o help says: $(mapperctl list -o help | grep '^sync_percent')"
