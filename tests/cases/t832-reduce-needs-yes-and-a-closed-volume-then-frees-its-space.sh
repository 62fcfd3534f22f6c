#!/usr/bin/env bash
# t832-reduce-needs-yes-and-a-closed-volume-then-frees-its-space.sh:
# `reduce` without --yes is refused in one line that says what is lost
# and how to confirm; while a loop device holds the volume open it is
# refused as busy; both change nothing.  Then a linear volume over two
# devices keeps its first bytes, its file is the new size at once, the
# extents past it are free in `device list` at once, and the change is
# archived like every other; a striped volume shrinks every stripe (the
# size rounded up to whole rows); switch volumes and thin pools refuse,
# and mirrors, saying how to copy one into a smaller one;
# all of it survives a restart.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires jq cmp

make_pool
add_file_device d0 64M >/dev/null
add_file_device d1 64M >/dev/null
add_file_device d2 64M >/dev/null
add_file_device d3 64M >/dev/null
mapperctl create linear pad --size 40M --on d0 >/dev/null
mapperctl create linear lv --size 40M --on d0,d1 >/dev/null	# 23M on d0, 17M on d1
mapperctl create linear sv --size 12M --stripes 3 --on d1,d2,d3 >/dev/null
mapperctl create switch sw --size 4M --region-size 1M --path d2 --path d2 >/dev/null
mapperctl create thin-pool tp --size 8M --on d2 >/dev/null
mapperctl create linear m --size 4M --mirrors 1 --on d2,d3 >/dev/null
start_daemon
head -c $((40 * MiB)) /dev/urandom >data
dd if=data of="$MNT/lv" bs=1M conv=notrunc,fsync status=none
head -c $((12 * MiB)) /dev/urandom >sdata
dd if=sdata of="$MNT/sv" bs=1M conv=notrunc,fsync status=none

free_of() { mapperctl device list --json | json_get --arg d "$1" '.[] | select(.name == $d) | .free'; }
archived() { ls -1 "$POOL"/archive/*.layout | wc -l; }

# unchanged CMD...: CMD fails in one line matching $regex and the pool is as it was.
unchanged()
{
	mapperctl list --json | jq -S 'map(del(.modified))' >before.json
	expect_fail -s 1 -m "^mapperctl: reduce: $regex" mapperctl "$@"
	mapperctl list --json | jq -S 'map(del(.modified))' | cmp -s before.json - ||
		fail "'mapperctl $*' was refused but changed the pool"
}
regex="shrinking 'lv' to 10.00 MiB loses all its data past 10.00 MiB: add --yes to confirm$"
unchanged reduce lv --size 10M
loop=$(attach_loop "$MNT/lv")
regex="volume 'lv' is busy \(open\)$"
unchanged reduce lv --size 10M --yes
detach_loop "$loop"
regex="the new size must be smaller than 40.00 MiB and larger than 0$"
unchanged reduce lv --size 40M --yes
regex="cannot shrink volume 'sw': not supported for a switch$"
unchanged reduce sw --size 2M --yes
regex="cannot shrink thin pool 'tp': not supported for a thin pool$"
unchanged reduce tp --size 4M --yes
# A mirror: refused, with the way to a smaller one.
regex="volume 'm' is a mirror: reduce cannot shrink one yet; copy what it holds to a smaller mirror instead: 'mapperctl create linear NEW --size SIZE --mirrors 1', then dd"
unchanged reduce m --size 2M --yes

d0=$(free_of d0) d1=$(free_of d1) n=$(archived)
mapperctl reduce lv --size 10M --yes >out.txt
grep -qx "reduced volume 'lv' to 10.00 MiB" out.txt || fail "reduce says: $(cat out.txt)"
[ "$(size_of "$MNT/lv")" -eq $((10 * MiB)) ] || fail "the file is $(size_of "$MNT/lv") bytes"
cmp -n $((10 * MiB)) data "$MNT/lv" || fail "the first 10 MiB changed"
[ "$(free_of d0)" -eq $((d0 + 13 * MiB)) ] || fail "d0 freed $(($(free_of d0) - d0)) bytes, not 13 MiB"
[ "$(free_of d1)" -eq $((d1 + 17 * MiB)) ] || fail "d1 freed $(($(free_of d1) - d1)) bytes, not 17 MiB"
[ "$(archived)" -eq $((n + 1)) ] || fail "the reduce left no archive entry"
expect_fail -s 1 -m "No space left on device" \
	dd if=/dev/zero of="$MNT/lv" bs=4k count=1 seek=$((10 * MiB / 4096)) conv=notrunc status=none

# Striped: 5M rounds up to 27 rows of 3 x 64 KiB; each stripe keeps 1728 KiB.
before=$(free_of d2)
mapperctl reduce sv --size 5M --yes >out.txt
grep -qx "reduced volume 'sv' to 5.06 MiB (5.00 MiB rounded up to whole stripe rows)" out.txt ||
	fail "reduce says: $(cat out.txt)"
[ "$(size_of "$MNT/sv")" -eq $((5184 * 1024)) ] || fail "sv is $(size_of "$MNT/sv") bytes"
cmp -n $((5184 * 1024)) sdata "$MNT/sv" || fail "sv's first 5184 KiB changed"
# free space counts what the allocator can hand out, from 1 MiB boundaries:
# the stripe's [1728K, 4M) on d2 frees [2M, 4M)
[ "$(free_of d2)" -eq $((before + 2 * MiB)) ] || fail "d2 freed $(($(free_of d2) - before)) bytes: $(mapperctl status sv --json | jq -c .segments)"
mapperctl check >/dev/null || fail "check after the reduces: $(mapperctl check)"

stop_daemon
start_daemon
[ "$(size_of "$MNT/lv")" -eq $((10 * MiB)) ] && [ "$(size_of "$MNT/sv")" -eq $((5184 * 1024)) ] ||
	fail "the sizes did not survive a restart"
cmp -n $((10 * MiB)) data "$MNT/lv" || fail "lv reads otherwise after a restart"
cmp -n $((5184 * 1024)) sdata "$MNT/sv" || fail "sv reads otherwise after a restart"
# grown again, the bytes past the old end are new space
mapperctl extend lv --size 12M >/dev/null
cmp -n $((10 * MiB)) data "$MNT/lv" || fail "extend after reduce moved the first bytes"
