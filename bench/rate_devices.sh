# bench/rate_devices.sh: raw devices that read and write at one fixed
# rate, as disks do, for the benches that need several (sourced).
#
# rate_device NAME SIZE: an nbdkit memory disk of SIZE limited to $rate
# (nbdkit's rate filter: the server's total, so the device has that rate
# whatever the number of connections), made the file $dir/NAME/nbd by
# nbdfuse.  nbdfuse writes its pid file once it serves; it stays in the
# foreground, so it runs in the background here and the pid file is what
# says it is ready (there is no other signal to wait on).
# rate_devices_stop unmounts them (after mapperfs, which holds their
# files) and waits for their servers.  Expects $dir and $rate.
rate_pids=()
rate_mnts=()

rate_device()
{
	local m=$dir/$1 i

	mkdir -p "$m"
	rate_mnts+=("$m")
	nbdfuse -P "$m.pid" "$m" [ nbdkit --filter=rate memory "$2" rate="$rate" ] \
		>"$dir/$1.nbdfuse.log" 2>&1 &
	rate_pids+=("$!")
	for ((i = 0; i < 200; i++)); do
		[ -s "$m.pid" ] && return 0
		kill -0 "${rate_pids[-1]}" 2>/dev/null || break
		sleep 0.05
	done
	echo "bench: nbdfuse for $1 did not start: $(cat "$dir/$1.nbdfuse.log")" >&2
	exit 1
}

rate_devices_stop()
{
	local m p

	for m in "${rate_mnts[@]}"; do
		if mountpoint -q "$m" 2>/dev/null; then
			fusermount3 -u "$m" || umount -l "$m"
		fi
	done
	for p in "${rate_pids[@]}"; do
		timeout 30 tail --pid="$p" -f /dev/null
	done
}

# rate_tools_check NAME: exits unless nbdkit (memory plugin, rate filter)
# and nbdfuse are here.
rate_tools_check()
{
	command -v nbdfuse >/dev/null && nbdkit --dump-plugin memory >/dev/null 2>&1 &&
		nbdkit --filter=rate null --dump-plugin >/dev/null 2>&1 ||
		{ echo "$1: needs nbdfuse, nbdkit's memory plugin and rate filter" >&2; exit 1; }
}
