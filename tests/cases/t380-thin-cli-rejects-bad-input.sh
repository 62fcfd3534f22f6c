#!/usr/bin/env bash
# t380-thin-cli-rejects-bad-input.sh: the thin commands refuse bad input
# with one line naming what is wrong, a non-zero exit, and no change.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 64M >/dev/null
mapperctl create linear lin --size 4M >/dev/null
before=$(mapperctl list --json)

expect_fail -m "power of two" mapperctl create thin-pool tp --size 16M --block-size 100K
expect_fail -m "power of two" mapperctl create thin-pool tp --size 16M --block-size 32K
expect_fail -m "when-full" mapperctl create thin-pool tp --size 16M --when-full sometimes
expect_fail -m "low-water" mapperctl create thin-pool tp --size 16M --low-water 101
expect_fail -m "smaller than one block" mapperctl create thin-pool tp --size 32K
expect_fail -m "not enough free space" mapperctl create thin-pool tp --size 1G
expect_fail -s 2 mapperctl create thin v --size 4M
expect_fail -m "no volume 'nopool'" mapperctl create thin v --pool nopool --size 4M
expect_fail -m "is a linear volume, not a thin pool" mapperctl create thin v --pool lin --size 4M
expect_fail -m "is a linear volume, not a thin volume" mapperctl snapshot lin s
[ "$(mapperctl list --json)" = "$before" ] || fail "a refused command changed the pool"

mapperctl create thin-pool tp --size 16M >/dev/null
mapperctl create thin v --pool tp --size 4M >/dev/null
expect_fail -m "neither a volume nor a file" mapperctl create thin w --pool tp --size 4M --origin /nonexistent
expect_fail -m "exists" mapperctl snapshot v v
expect_fail -m "is a linear volume, not a thin volume" mapperctl rollback v lin
mapperctl create thin w --pool tp --size 8M >/dev/null
expect_fail -m "differ in size" mapperctl rollback v w
expect_fail -m "still has 2 volumes" mapperctl remove tp
expect_fail -m "larger than" mapperctl extend v --size 2M
mapperctl check >/dev/null || fail "check fails on a clean pool"
