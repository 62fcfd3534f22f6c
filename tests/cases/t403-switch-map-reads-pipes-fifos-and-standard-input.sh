#!/usr/bin/env bash
# t403-switch-map-reads-pipes-fifos-and-standard-input.sh: switch-map
# --file takes any readable file, not only a regular one: a pipe
# (--file <(...)), a FIFO, and "-" for standard input, offline and through
# the daemon (mapperctl opens it and hands it over), so a dump piped back
# in changes nothing.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs

make_pool
add_file_device d0 16M >/dev/null
mapperctl create switch s --size 4M --region-size 1M --path d0:0 --path d0:4M >/dev/null
mkfifo table.fifo

# feeds ARGS...: every way of giving the same table: it must come out as
# the table asked for, each time.
feeds()
{
	mapperctl switch-map s 0:0 :0 :0 :0 >/dev/null
	mapperctl switch-map s --file <(printf '0:1\n:0\n') >out ||
		fail "$1: --file <(...) failed"
	grep -q "^switch volume 's': 1 of 4 regions changed path" out || fail "$1: $(cat out)"
	printf ':1 :1\n' | mapperctl switch-map s --file - >out || fail "$1: --file - failed"
	grep -q "2 of 4 regions changed path" out || fail "$1: $(cat out)"
	printf '0:0\n' >table.fifo &
	mapperctl switch-map s --file table.fifo >out || fail "$1: --file FIFO failed"
	wait $!
	grep -q "1 of 4 regions changed path" out || fail "$1: $(cat out)"
	[ "$(mapperctl switch-map s --dump | tr '\n' ' ')" = "0:0 :1 :1 :0 " ] ||
		fail "$1: the table is $(mapperctl switch-map s --dump | tr '\n' ' ')"
	mapperctl switch-map s --dump | mapperctl switch-map s --file - >out
	grep -q "0 of 4 regions changed path" out || fail "$1: the dump piped back changed the table"
}

feeds offline
start_daemon
feeds online
