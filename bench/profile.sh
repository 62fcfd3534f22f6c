#!/usr/bin/env bash
# bench/profile.sh: where the CPU time goes, both transports side by side.
#
#   bench/profile.sh [WORKLOAD...]      (default: lat4K seq1M rw512)
#
# Sets up what bench/run.sh does (a linear volume on a raw file in
# /dev/shm, served once over io_uring and once over /dev/fuse), runs each
# workload of bench/run.sh on each volume while `perf record -a` samples
# both CPUs for BENCH_SECONDS, and sorts every sample two ways: whose it
# is (the issuer, fio; the daemon; anything else on the machine, idle
# included) and what the function does:
#
#   switch     scheduling, wake-ups, context switches (on a VM, also the
#              cost of re-enabling interrupts that the hypervisor delivers)
#   copy       copying data (user memmove, kernel copy to/from user)
#   pin        pinning and unpinning user pages for the kernel's copies
#   protocol   FUSE and io_uring request handling in the kernel
#   syscall    system call entry and exit
#   user       user-space code other than copies (libfuse, mapperfs, fio)
#   idle       a CPU with nothing to run
#   other      the rest
#
# Output: per workload, a table of CPU microseconds per request (samples
# at 4 kHz per CPU, divided by the requests fio completed while perf
# sampled), one column per transport: a cost that the rest of the
# machine's load changes far less than it changes throughput.  "rest" is
# the CPU time of everything else meanwhile, per request too.
# Environment: BENCH_SECONDS (default 5), BENCH_SIZE (1G).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
secs=${BENCH_SECONDS:-5}
size=${BENCH_SIZE:-1G}
workloads=("$@")
[ "${#workloads[@]}" -gt 0 ] || workloads=(lat4K seq1M rw512)

command -v perf >/dev/null || { echo "bench: perf is not installed (linux-perf)" >&2; exit 1; }
. "$src/bench/lib.sh"
bench_setup
serve u io_uring
declare -A vols=([io_uring]=$vol)
serve d dev-fuse
vols[dev-fuse]=$vol

# profile WORKLOAD TRANSPORT: perf samples of the workload, as
# "samples<TAB>comm<TAB>dso<TAB>symbol" lines in $dir/W.T.txt, and the
# requests fio completed while perf sampled in $dir/W.T.reqs.
profile()
{
	local w=$1 t=$2 data=$dir/$1.$2.perf window=$((secs - 1)) iops

	# shellcheck disable=SC2046 # workload_args is a list of arguments
	fio_json "$w" "${vols[$t]}" 0 1 $(workload_args "$w") >"$dir/$w.$t.json" &
	sleep 1.5	# not synchronisation: let the ramp pass before sampling
	perf record -q -F 4000 -a -o "$data" -- sleep "$window" 2>/dev/null
	wait
	iops=$(jq '.jobs[0].read.iops + .jobs[0].write.iops' "$dir/$w.$t.json")
	awk -v i="$iops" -v s="$window" 'BEGIN { print i * s }' >"$dir/$w.$t.reqs"
	perf report -i "$data" --no-children --sort comm,dso,sym -g none --stdio -n \
		--field-separator=$'\t' 2>/dev/null | grep -v '^#' | grep . |
		cut -f2- >"$dir/$w.$t.txt"
}

for w in "${workloads[@]}"; do
	for t in io_uring dev-fuse; do
		echo "profiling $w over $t ..." >&2
		profile "$w" "$t"
	done
	printf '\n%s (load average %s): CPU us per request, %s CPUs\n\n' \
		"$w" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"
	python3 - "$dir/$w.io_uring" "$dir/$w.dev-fuse" <<'PY'
import re, sys
cats = [
    ("idle", r"safe_halt|default_idle|cpuidle|do_idle|poll_idle|intel_idle|acpi_idle|mwait"),
    ("switch", r"finish_task_switch|__schedule|^schedule|_raw_spin_unlock_irq|try_to_wake_up|"
               r"ttwu|enqueue_|dequeue_|pick_next|update_curr|__switch_to|switch_mm|psi_|"
               r"select_task_rq|wake_up|sched_|set_next_entity|put_prev|newidle|"
               r"native_sched_clock|__raw_callee_save___pv_queued_spin_unlock"),
    ("copy", r"memmove|memcpy|memset|copy_user|rep_mov|copy_page|_copy_to_|_copy_from_|"
             r"copy_to_iter|copy_from_iter|clear_page"),
    ("pin", r"gup|pin_user|unpin|folio_mark_dirty|iov_iter_get_pages|iov_iter_extract|"
            r"follow_page|get_user_pages|mod_node_page_state|folio_unlock"),
    ("protocol", r"^fuse_|^__fuse|^io_|^__io_|uring"),
    ("syscall", r"entry_SYSCALL|do_syscall|syscall_|exit_to_user|__rseq|syscall_exit"),
]
def side(comm):
    if comm == "fio":
        return "issuer"
    if comm.startswith("uring-q") or comm in ("fuse-dev", "mapperfs"):
        return "daemon"
    return "rest"
def load(base):
    out = {}
    reqs = float(open(base + ".reqs").read())
    for line in open(base + ".txt"):
        f = line.rstrip("\n").split("\t")
        if len(f) < 4:
            continue
        us = int(f[0]) / 4000 / reqs * 1e6
        comm, dso, sym = f[1].strip(), f[2].strip(), re.sub(r"^\[[.k]\] ", "", f[3].strip())
        what = "other"
        for name, rx in cats:
            if re.search(rx, sym):
                what = name
                break
        if what == "other" and "[kernel" not in dso:
            what = "user"
        s = side(comm)
        if what == "idle":
            s = "rest"
        out[s, what] = out.get((s, what), 0) + us
    return out, reqs
(a, ra), (b, rb) = load(sys.argv[1]), load(sys.argv[2])
rows = sorted(set(a) | set(b), key=lambda k: (["issuer", "daemon", "rest"].index(k[0]), -a.get(k, 0)))
print("| who | what | io_uring | /dev/fuse |")
print("|---|---|---|---|")
small = max(sum(a.values()), sum(b.values())) / 200
for k in rows:
    if max(a.get(k, 0), b.get(k, 0)) >= small and k[0] != "rest":
        print("| %s | %s | %.2f | %.2f |" % (k[0], k[1], a.get(k, 0), b.get(k, 0)))
for who in ("issuer", "daemon"):
    print("| %s | **total** | **%.2f** | **%.2f** |" % (who,
          sum(v for k, v in a.items() if k[0] == who), sum(v for k, v in b.items() if k[0] == who)))
print("| rest | total (idle %.2f / %.2f) | %.2f | %.2f |" % (a.get(("rest", "idle"), 0),
      b.get(("rest", "idle"), 0), sum(v for k, v in a.items() if k[0] == "rest"),
      sum(v for k, v in b.items() if k[0] == "rest")))
print("| | requests sampled | %.0f | %.0f |" % (ra, rb))
PY
done
