#!/usr/bin/env bash
# t370-thin-external-origin.sh: a thin volume over a read-only base image
# (an image file, or another volume) reads the image where it has not been
# written, zeros past the image's end, and copies the rest of a block from
# the image on its first write, leaving the image untouched; snapshots read
# through the same image; the origin volume cannot be removed under it.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 64M >/dev/null
head -c $((3 * MiB)) /dev/urandom >base.img
cp base.img base.orig
mapperctl create thin-pool tp --size 16M >/dev/null
mapperctl create thin vm1 --pool tp --size 8M --origin base.img >/dev/null
start_daemon

cmp base.img <(head -c $((3 * MiB)) "$MNT/vm1") || fail "the image does not show through"
cmp <(head -c $((5 * MiB)) /dev/zero) <(tail -c $((5 * MiB)) "$MNT/vm1") ||
	fail "past the image the volume does not read zeros"
[ "$(mapperctl list --json | json_get '.[] | select(.name == "tp") | .data_used_bytes')" -eq 0 ] ||
	fail "reading through the image took pool blocks"

printf 'hello' | dd of="$MNT/vm1" bs=1 seek=70000 conv=notrunc,fsync status=none
cp base.img want
printf 'hello' | dd of=want bs=1 seek=70000 conv=notrunc status=none
cmp want <(head -c $((3 * MiB)) "$MNT/vm1") || fail "a first write lost the image around it"
cmp base.img base.orig || fail "writing the volume changed the image"

mapperctl snapshot --active vm1 vm1-snap >/dev/null
cmp want <(head -c $((3 * MiB)) "$MNT/vm1-snap") || fail "the snapshot does not read through the image"

# A volume as the origin: a golden thin volume for clones.
mapperctl create thin golden --pool tp --size 4M >/dev/null
head -c $((4 * MiB)) /dev/urandom >gold
dd if=gold of="$MNT/golden" bs=1M conv=notrunc,fsync status=none
mapperctl create thin clone --pool tp --size 4M --origin golden >/dev/null
cmp gold "$MNT/clone" || fail "the clone does not read its origin volume"
expect_fail -m "origin of thin volume 'clone'" mapperctl remove golden

stop_daemon
start_daemon
cmp want <(head -c $((3 * MiB)) "$MNT/vm1") || fail "after a restart the volume reads differently"
cmp gold "$MNT/clone" || fail "after a restart the clone reads differently"
mapperctl check >check.log || { cat check.log >&2; fail "check failed"; }
