#!/usr/bin/env bash
# t811-tags-survive-a-restart-and-go-with-their-owner.sh: tags added and
# removed online (set, device set, create and snapshot --addtag) and
# offline are in the pool database:
# a restarted daemon shows the same tags, and so does mapperctl offline;
# a volume removed takes its tags with it, so one made again with its
# name carries none; tagging twice, or removing a tag not carried,
# changes nothing.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 256M >/dev/null
mapperctl create linear v --size 16M --addtag offline >/dev/null
mapperctl create thin-pool tp --size 64M >/dev/null
mapperctl create thin t --pool tp --size 8M --addtag base >/dev/null
start_daemon
mapperctl snapshot t ts --addtag backup --addtag daily >/dev/null

mapperctl set v --addtag vm --addtag web.1 --deltag offline >/dev/null
mapperctl set v --addtag vm >/dev/null
mapperctl set v --deltag never-there >/dev/null
mapperctl set tp --addtag pool_A >/dev/null
mapperctl device set d0 --addtag ssd+fast >/dev/null
tags() { mapperctl list -o name,tags --noheadings --separator ' ' --select "name == $1"; }
[ "$(tags v)" = "v vm,web.1" ] || fail "v's tags online: $(tags v)"
[ "$(tags tp)" = "tp pool_A" ] || fail "tp's tags online: $(tags tp)"

stop_daemon
[ "$(tags v)" = "v vm,web.1" ] || fail "v's tags offline after the daemon stopped: $(tags v)"
start_daemon
[ "$(tags v)" = "v vm,web.1" ] || fail "v's tags after a restart: $(tags v)"
[ "$(tags tp)" = "tp pool_A" ] || fail "tp's tags after a restart: $(tags tp)"
[ "$(tags t)" = "t base" ] || fail "t's tags from create after a restart: $(tags t)"
[ "$(tags ts)" = "ts backup,daily" ] || fail "ts's tags from snapshot after a restart: $(tags ts)"
[ "$(mapperctl list --json | json_get -c '.[] | select(.name == "v") | .tags')" = '["vm","web.1"]' ] ||
	fail "list --json does not carry v's tags"
[ "$(mapperctl device list --json | json_get -c '.[0].tags')" = '["ssd+fast"]' ] ||
	fail "device list --json does not carry d0's tags"
[ "$(mapperctl list -o name --noheadings --select '@vm')" = v ] || fail "--select @vm does not pick v"

# Removed, a volume's tags go; one made again under its name has none.
mapperctl remove v >/dev/null
mapperctl create linear v --size 16M >/dev/null
[ "$(tags v)" = "v " ] || fail "a new volume took the removed one's tags: $(tags v)"
stop_daemon
orphans='SELECT count(*) FROM volume_tag WHERE volume NOT IN (SELECT id FROM volume)'
[ "$(sqlite3 "$POOL/pool.db" "$orphans")" -eq 0 ] ||
	fail "the removed volume's tag rows stayed: $(sqlite3 "$POOL/pool.db" 'SELECT * FROM volume_tag')"
mapperctl device set d0 --deltag ssd+fast >/dev/null
[ "$(mapperctl device list -o tags --noheadings | tr -d ' ')" = "" ] || fail "device tag not removed offline"
mapperctl check >/dev/null || fail "check fails"
