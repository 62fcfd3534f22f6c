#!/usr/bin/env bash
# t606-thin-pool-flags-follow-freed-space.sh: a thin pool that filled up
# says full and low-water crossed; once space is freed, by a discard, by
# removing a volume or by a rollback, `status` and `list --json` say at
# once that it is neither (no write in between), and its used percent
# with them; `list`'s STATE says full, then ok.  Each filling raises the
# events "low-water" and "full" once more, even one nobody looked at: a
# block freed and taken again at once, then full again.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq fallocate

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 4M --low-water 20 \
	--on-event "echo \$MAPPERFS_EVENT >>'$T_DIR/events'" >/dev/null	# 64 blocks of 64K
for v in a b; do mapperctl create thin "$v" --pool tp --size 8M >/dev/null; done
start_daemon

head -c $((8 * MiB)) /dev/urandom >data

# flags WANT WHEN: the pool's full and low_water_crossed flags, both
# "true" or both "false", in status and in list --json; list's STATE.
flags()
{
	local s l state

	s=$(mapperctl status tp --json)
	l=$(mapperctl list --json | jq '.[] | select(.name == "tp")')
	for f in full low_water_crossed; do
		[ "$(json_get ".$f" <<<"$s")" = "$1" ] ||
			fail "$2: status says $f $(json_get ".$f" <<<"$s") at $(json_get .data_percent <<<"$s") % used"
		[ "$(json_get ".$f" <<<"$l")" = "$1" ] ||
			fail "$2: list --json says $f $(json_get ".$f" <<<"$l")"
	done
	state=$(mapperctl list | awk '$1 == "tp" { print $NF }')
	[ "$state" = "$( [ "$1" = true ] && echo full || echo ok)" ] ||
		fail "$2: list says STATE $state"
}
# events_now: where the event log ends now, for wait_line.
events_now() { stat -c %s events 2>/dev/null || echo 0; }
# fill VOLUME: writes it until the pool is full (the write fails), which
# raises both events again.
fill()
{
	local mark

	mark=$(events_now)
	! dd if=data of="$MNT/$1" bs=1M conv=notrunc,fsync status=none 2>/dev/null ||
		fail "writing $1 past the full pool succeeded"
	flags true "after filling the pool with $1"
	[ "$(mapperctl status tp --json | json_get .data_used_bytes)" -eq $((4 * MiB)) ] ||
		fail "the full pool is not 100 % used"
	wait_line events '^low-water$' "$mark"
	wait_line events '^full$' "$mark"
}

fill a
fallocate -p -o 0 -l $((8 * MiB)) "$MNT/a"
flags false "after a discard of every block"
[ "$(mapperctl status tp --json | json_get .data_used_bytes)" -eq 0 ] ||
	fail "after the discard the pool is still used"

fill b
mapperctl remove b >/dev/null
flags false "after removing the volume that filled it"

mapperctl snapshot a s >/dev/null		# a is all holes
fill a
mapperctl rollback a s >/dev/null
flags false "after a rollback to an empty snapshot"

# Filled again, it says so again: the flags were re-armed, not lost.
fill a

# One block freed and taken again at once, then full again, with nobody
# looking in between: that is one more "full".
mark=$(events_now)
fallocate -p -o 0 -l $((64 * 1024)) "$MNT/a"
dd if=data of="$MNT/a" bs=64K count=1 conv=notrunc,fsync status=none ||
	fail "the freed block could not be written again"
! dd if=data of="$MNT/a" bs=64K count=1 seek=64 conv=notrunc,fsync status=none 2>/dev/null ||
	fail "writing past the full pool succeeded"
wait_line events '^full$' "$mark"
[ "$(grep -c '^full$' events)" -eq 5 ] ||
	fail "5 fillings raised $(grep -c '^full$' events) full events"
mapperctl check >/dev/null || fail "check fails"
