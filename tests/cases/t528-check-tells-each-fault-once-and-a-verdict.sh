#!/usr/bin/env bash
# t528-check-tells-each-fault-once-and-a-verdict.sh: every form of check
# ends with a one-line verdict ("volume 'l5': ok, 0 breaches found"), and
# a fault is one breach however many volumes it takes down: a missing
# device is one line naming the thin pool and the volumes on it, not a
# line per volume; checked alone, a volume says why it is failed.
# Opening the pool tells it the same way: an offline mapperctl says
# nothing of it on stderr, and the daemon warns of it in one line at
# start-up, the failure of each volume only a detail in its log.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 32M >/dev/null
d1=$(add_file_device d1 32M)
mapperctl create linear l5 --size 8M --on d0 >/dev/null
mapperctl create thin-pool tp --size 16M --on d1 >/dev/null
for v in a b c; do
	mapperctl create thin "$v" --pool tp --size 8M >/dev/null
done
out=$T_DIR/out

# says LINE... : check's stdout was exactly these lines.
says()
{
	printf '%s\n' "$@" | diff -u - "$out" >&2 || fail "check said otherwise (diff above)"
}

mapperctl check >"$out" || fail "check fails on a healthy pool"
[ "$(tail -n 1 "$out")" = "pool '$POOL': ok, 0 breaches found" ] || fail "no verdict: $(cat "$out")"
mapperctl check l5 >"$out" || fail "check l5 fails"
says "volume 'l5': ok, 0 breaches found"
mapperctl check tp >"$out" || fail "check tp fails"
[ "$(tail -n 1 "$out")" = "thin pool 'tp': ok, 0 breaches found" ] || fail "no verdict: $(cat "$out")"
mapperctl check a >"$out" || fail "check a fails"
says "volume 'a': ok, 0 breaches found"
[ "$(mapperctl check --json | json_get .ok)" = true ] || fail "check --json is not ok"

mv "$d1" "$d1.away"
cleanup_fn mv "$d1.away" "$d1"
expect_fail -s 1 -m "check: 1 breach found$" mapperctl check
cp "$T_DIR/.stdout" "$out"
says "device 'd1': it is failed: cannot be opened: No such file or directory; thin pool 'tp' and volumes 'a', 'b', 'c' are not served" \
     "pool '$POOL': 1 breach found"
expect_fail -s 1 -m "check: 1 breach found$" mapperctl check b
cp "$T_DIR/.stdout" "$out"
says "volume 'b': it is failed: thin pool 'tp' is failed: its device 'd1' is failed: cannot be opened: No such file or directory" \
     "volume 'b': 1 breach found"
mapperctl check l5 >"$out" 2>"$T_DIR/err" || fail "check l5 fails while d1 is away"
says "volume 'l5': ok, 0 breaches found"
[ ! -s "$T_DIR/err" ] || fail "offline, opening the pool said: $(cat "$T_DIR/err")"
[ "$(mapperctl check --json 2>/dev/null | jq '.breaches | length')" -eq 1 ] ||
	fail "check --json does not list the one fault once"

start_daemon 2>"$T_DIR/start.err"
fault="device 'd1' is failed (cannot be opened: No such file or directory): thin pool 'tp' and volumes 'a', 'b', 'c' are not served"
[ "$(grep -c -e "'d1'" -e "not served" "$T_DIR/start.err")" -eq 1 ] &&
	grep -q -F -x "mapperfs: warning: $fault" "$T_DIR/start.err" ||
	fail "start-up did not warn of the fault in one line: $(cat "$T_DIR/start.err")"
[ "$(grep -c -F "warning: $fault" "$POOL/mapperfs.log")" -eq 1 ] ||
	fail "the log does not warn of the fault once: $(cat "$POOL/mapperfs.log")"
! grep -q "warning: .*volume '[a-z]*' is not served" "$POOL/mapperfs.log" ||
	fail "the log warns of each volume on d1"
grep -q -E "^$LOG_TIME info: volume 'b' is not served: thin pool 'tp' is failed" "$POOL/mapperfs.log" ||
	fail "the log lacks the detail of why b is failed"
expect_fail -s 1 -m "check: 1 breach found$" mapperctl check
cp "$T_DIR/.stdout" "$out"
says "device 'd1': it is failed: cannot be opened: No such file or directory; thin pool 'tp' and volumes 'a', 'b', 'c' are not served" \
     "pool '$POOL': 1 breach found"
