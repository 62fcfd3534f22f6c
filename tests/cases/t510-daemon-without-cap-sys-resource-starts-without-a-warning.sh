#!/usr/bin/env bash
# t510-daemon-without-cap-sys-resource-starts-without-a-warning.sh: in a
# container without CAP_SYS_RESOURCE, PR_SET_IO_FLUSHER is refused at every
# start; that is normal there, so the daemon says what it means at info
# level, not as a warning.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires setpriv

make_pool
add_file_device d0 64M >/dev/null
mapperctl create linear v --size 8M >/dev/null

# start_daemon runs "mapperfs": this one has no CAP_SYS_RESOURCE.
mapperfs()
{
	setpriv --bounding-set -sys_resource -- "$MAPPERFS_BUILD/bin/mapperfs" "$@"
}
start_daemon
wait_log "PR_SET_IO_FLUSHER"
grep -q -E "^$LOG_TIME info: not an I/O flusher \(PR_SET_IO_FLUSHER needs CAP_SYS_RESOURCE\): " \
	"$POOL/mapperfs.log" ||
	fail "the refusal is not told at info level: $(grep PR_SET_IO_FLUSHER "$POOL/mapperfs.log")"
stop_daemon
