#!/usr/bin/env bash
# tests/fuzz/make-seeds.sh: writes the seed corpora, tests/fuzz/corpus/NAME/,
# from valid inputs: sizes, option values, switch messages and control
# requests and replies as mapperctl and the daemon exchange them, and the
# databases and the device label of a real pool that mapperctl and the
# daemon built step by step (every kind of volume, thin data, a snapshot
# with copy-on-write, switch maps), each checkpointed and also with its
# write-ahead log live (pooldir.h's "MPFSWAL!" format).
#
# Run by hand, as root, after a build (MAPPERFS_BUILD, default build/), when
# the schema or the wire format changes; commit what it writes.  The pool
# lives at /dev/shm/mpfsfuzz.SEED00, the path the pool harnesses replace by
# their own (pooldir.h), so the daemon steps need /dev/fuse.
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${MAPPERFS_BUILD:-$src/build}
corpus=$src/tests/fuzz/corpus
P=/dev/shm/mpfsfuzz.SEED00
ctl() { "$build/bin/mapperctl" --pool "$P" "$@"; }

[ -x "$build/bin/mapperctl" ] || { echo "make-seeds: build first ($build)" >&2; exit 1; }
[ ! -e "$P" ] || { echo "make-seeds: $P exists: another run, or remove it" >&2; exit 1; }
mnt=$(mktemp -d /tmp/mpfsfuzz-mnt.XXXXXX)
cleanup()
{
	fusermount3 -u "$mnt" 2>/dev/null || true
	[ -s "$P/mapperfs.pid" ] && timeout 30 tail --pid="$(cat "$P/mapperfs.pid")" -f /dev/null
	rmdir "$mnt"
	rm -rf "$P"
}
trap cleanup EXIT

rm -rf "$corpus"
for d in size opts switch_msg wire_request wire_response label layout_area store_open pool_open \
	send_stream; do
	mkdir -p "$corpus/$d"
done

# seed HARNESS NAME: the rest of the line's printf arguments are its bytes.
seed() { local h=$1 n=$2; shift 2; printf "$@" >"$corpus/$h/$n"; }
le32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) \
	$(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }

# ---- sizes and option values (fuzz_opts: the first byte picks the parser) ----
i=0
for s in 0 4096 64K 1M 2KiB 40G 8t 9223372036854775807 8191P 1.5G -1 12Q; do
	seed size "s$((i++))" '%s' "$s"
done
seed opts size '\x00%s' 64M
seed opts block-size '\x01%s' 4K
seed opts segment '\x02%s' dev0:8M:1M
seed opts path-owned '\x03%s' dev0
seed opts path-at '\x03%s' dev0:16M
seed opts when-full-error '\x04%s' error
seed opts when-full-wait '\x04%s' wait:60
seed opts percent '\x05%s' 20

# ---- switch messages: path count - 2, region count - 1 (LE16), the text -------
seed switch_msg repeat '\x01\x0f\x00%s' '0:0 :1 :2 R3,4'
seed switch_msg indexed '\x00\x3f\x00%s' '0:1 a:0 :1 R2,5 3f:1'
seed switch_msg lines '\x02\xff\x00%s' $'0:3\n:2\n:1\n:0\nR4,f0\n'
seed switch_msg bad-repeat '\x00\x07\x00%s' 'R5,2'
seed switch_msg hex-prefix '\x00\x07\x00%s' '0x1:1'

# ---- control requests and replies --------------------------------------------
# request ARGS...: "MPFS", argc, then each argument and its NUL.
request()
{
	local name=$1 a
	shift
	{
		printf 'MPFS'
		printf "$(le32 $#)"
		for a; do printf '%s\0' "$a"; done
	} >"$corpus/wire_request/$name"
}
request list list --json
request create create linear vm1 --size 4M --on dev0
request switch-map switch-map sw 0:1 :0 R2,5
request none
# response NAME STATUS OUT ERR
response()
{
	{
		printf "$(le32 "$2")"
		printf "$(le32 ${#3})%s" "$3"
		printf "$(le32 ${#4})%s" "$4"
	} >"$corpus/wire_response/$1"
}
response ok 0 $'[{"name":"vm1","kind":"linear","size":4194304,"state":"ok"}]\n' ''
response busy 1 '' $'mapperctl: remove: volume \'vm1\' is busy (open)\n'
response usage 2 '' $'mapperctl: unknown command \'frob\' (see \'mapperctl --help\')\n'
note=$'mapperctl: waiting for \'device add\' (pid 1234) ...\n'
{ printf "$(le32 0x45544f4e)$(le32 ${#note})%s" "$note"; cat "$corpus/wire_response/ok"; } \
	>"$corpus/wire_response/note"

# ---- a real pool, step by step -------------------------------------------------
# snap NAME: the database as it is now (mapperctl closed it: checkpointed).
snap()
{
	cp "$P/pool.db" "$corpus/pool_open/$1"
	cp "$P/pool.db" "$corpus/store_open/$1"
}
# snap_wal NAME: the database and its live write-ahead log, while the
# daemon holds it open.
snap_wal()
{
	[ -s "$P/pool.db-wal" ] || { echo "make-seeds: no live WAL for $1" >&2; exit 1; }
	{ cat "$P/pool.db"; printf 'MPFSWAL!'; cat "$P/pool.db-wal"; } >"$corpus/pool_open/$1"
	cp "$corpus/pool_open/$1" "$corpus/store_open/$1"
}

# layout_seeds DEV DIR: DEV's two layout slots, each cut to 8 KiB (its copy
# and more), and from the layout text on stdin a copy as written before
# compression and an overflow marker (core/io/layout_area.c's headers).
layout_seeds()
{
	local slot=$(((1048576 - 4096) / 2)) i

	for i in 0 1; do
		tail -c +$((4096 + i * slot + 1)) "$1" | head -c 8192 >"$2/slot$i"
	done
	python3 -c '
import struct, sys, zlib
text = sys.stdin.buffer.read()
def seal(head, stored):
    head += struct.pack("<I", zlib.crc32(head))
    return head.ljust(64, b"\0") + stored
pool = bytes(range(16))
old = b"MAPPERFS-LAYOUT\0" + pool + struct.pack("<QQI", 7, len(text), zlib.crc32(text))
open(sys.argv[1] + "/old-text", "wb").write(seal(old, text))
mark = b"MAPPERFS-LAYOUT\2" + pool + struct.pack("<QIIII", 8, 0, 1 << 22, 0, zlib.crc32(b""))
open(sys.argv[1] + "/overflow-marker", "wb").write(seal(mark, b""))
' "$2"
}

ctl init >/dev/null
snap empty
ctl device add "$P/dev0" --create 64M --name dev0 >/dev/null
snap device
head -c 4096 "$P/dev0" >"$corpus/label/dev0"
ctl create linear lin --size 4M >/dev/null
ctl create linear seg --segment dev0:8M:1M >/dev/null
snap linear
ctl create switch sw --size 4M --region-size 64K --path dev0 --path dev0:16M >/dev/null
ctl switch-map sw 0:1 :0 R2,5 >/dev/null
ctl switch-map sw --dump | tr '\n' ' ' >"$corpus/switch_msg/dump.txt"
{ printf '\x00\x3f\x00'; cat "$corpus/switch_msg/dump.txt"; } >"$corpus/switch_msg/dump"
rm "$corpus/switch_msg/dump.txt"
snap switch
ctl create thin-pool tp --size 16M --block-size 64K --when-full wait:5 --low-water 20 >/dev/null
ctl create thin th --pool tp --size 8M >/dev/null
ctl create thin ext --pool tp --size 8M --origin lin >/dev/null
snap thin

"$build/bin/mapperfs" --pool "$P" "$mnt"
dd if=/dev/urandom of="$mnt/th" bs=64K count=8 conv=notrunc,fsync status=none
ctl snapshot th th-snap >/dev/null
dd if=/dev/urandom of="$mnt/th" bs=4K count=4 seek=3 conv=notrunc,fsync status=none
dd if=/dev/urandom of="$mnt/ext" bs=64K count=2 seek=5 conv=notrunc,fsync status=none
snap_wal thin-data-wal
ctl switch-map sw 0:0 :1 R2,1e >/dev/null
ctl remove seg >/dev/null
snap_wal switch-remap-wal
fusermount3 -u "$mnt"
timeout 30 tail --pid="$(cat "$P/mapperfs.pid")" -f /dev/null
snap thin-data

# ---- send streams: th's snapshot whole, th since it, a header alone ----------
ctl send th-snap -o "$corpus/send_stream/full"
ctl snapshot th th-now >/dev/null
ctl send th-now --since th-snap -o "$corpus/send_stream/incremental"
head -c 74 "$corpus/send_stream/full" >"$corpus/send_stream/header-only"
# ---- layout copies: dev0's two slots (deflated), the old form, a marker ------
layout_seeds "$P/dev0" "$corpus/layout_area" < <(ctl backup)
echo "make-seeds: wrote $(find "$corpus" -type f | wc -l) seeds in $corpus"
