# tests/lib/ack_verify.py FILE LOG: for each block that ack_writer.py
# wrote to FILE, its content must carry the last acknowledged sequence
# number written to it, or a later one that was issued to it.  Exit 1
# (and a line per block) if not.
import sys
path, log = sys.argv[1], sys.argv[2]
issued, acked = {}, set()
for line in open(log):
    f = line.split()
    if f[0] == "I":
        issued[int(f[1])] = int(f[2])
    elif f[0] == "A":
        acked.add(int(f[1]))
per_block = {}
for s, b in sorted(issued.items()):
    per_block.setdefault(b, []).append(s)
bad = 0
with open(path, "rb") as f:
    for b, seqs in per_block.items():
        f.seek(b * 65536)
        head = f.read(20)
        try:
            got = int(head) if head.strip(b"\0") else 0
        except ValueError:
            got = -1    # bytes no write of ours left there (the file held others)
        last_acked = max([s for s in seqs if s in acked], default=None)
        if last_acked is None:
            continue
        allowed = {s for s in seqs if s >= last_acked}
        if got not in allowed:
            print("block %d holds %d, want one of %s" % (b, got, sorted(allowed)[:5]))
            bad += 1
sys.exit(1 if bad else 0)
