#!/usr/bin/env bash
# t861-receive-refuses-a-damaged-or-cut-stream-and-applies-nothing.sh: a
# stream with one byte flipped in its middle, one cut in half, one cut
# inside its header, one with bytes after its end and a file that is no
# stream are each refused in one line, leaving the receiving pool's
# volumes as they were (a cut one only its staging volume, which --abort
# drops) and check clean; the intact stream is then received.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

send_pools
mapperctl create thin other --pool tp --size 4M >/dev/null
start_daemon "$A" "$T_DIR/ma"
start_daemon "$B" "$T_DIR/mb"

dd if=/dev/urandom of="$T_DIR/ma/v" bs=1M count=4 conv=notrunc,fsync status=none
ca snapshot v s1 >/dev/null
ca send s1 -o good.stream
size=$(stat -c %s good.stream)
names() { cb list --json | jq -c '[.[].name] | sort'; }
before=$(names)
unchanged() {
	[ "$(names)" = "$before" ] || fail "after $1 the pool has $(names), it had $before"
	cb check >check.log || { cat check.log >&2; fail "check failed after $1"; }
}

cp good.stream flipped.stream
python3 - "$((size / 2))" flipped.stream <<'PY'
import sys
at, path = int(sys.argv[1]), sys.argv[2]
with open(path, "r+b") as f:
    f.seek(at)
    b = f.read(1)
    f.seek(at)
    f.write(bytes([b[0] ^ 0x10]))
PY
expect_fail -s 1 -m "^mapperctl: receive: the record at byte [0-9]+ fails its checksum: nothing is applied$" \
	cb receive b1 --from flipped.stream
unchanged "a flipped byte"
expect_fail -m "fails its checksum: nothing is applied$" sh -c "cat flipped.stream | $MAPPERFS_BUILD/bin/mapperctl --pool $B receive b1"
unchanged "a flipped byte through a pipe"

head -c $((size / 2)) good.stream >cut.stream
expect_fail -m "^mapperctl: receive: the stream stops inside a record, .*: nothing is applied; its first [0-9]+ bytes are kept in '.recv.b1'" \
	cb receive b1 --from cut.stream
[ "$(names)" = "$(jq -c '. + [".recv.b1"] | sort' <<<"$before")" ] ||
	fail "a cut stream left $(names), not only its staging volume"
cb check >check.log || { cat check.log >&2; fail "check failed after a cut stream"; }
cb receive b1 --abort >/dev/null
unchanged "a cut stream dropped with --abort"
expect_fail -m "no receive of 'b1' was cut short" cb receive b1 --abort

head -c 30 good.stream >header.stream
expect_fail -m "the stream stops inside its header" cb receive b1 --from header.stream
unchanged "a cut header"
echo "not a stream" >junk
expect_fail -m "not a mapperfs send stream" cb receive b1 --from junk
unchanged "a file that is no stream"
cat good.stream good.stream >twice.stream
expect_fail -m "bytes follow the stream's end record: nothing is applied" cb receive b1 --from twice.stream
unchanged "bytes after the end"

cb receive b1 --from good.stream --active >/dev/null
cmp <(head -c $((4 * MiB)) "$T_DIR/mb/b1") <(head -c $((4 * MiB)) "$T_DIR/ma/v") ||
	fail "the intact stream, received after the damaged ones, does not read as its volume"
cb check >check.log || { cat check.log >&2; fail "check failed"; }
