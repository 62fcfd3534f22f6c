# tests/lib/ack_writer.py FILE LOG SEED [BLOCKS]: writes 64 KiB blocks
# tagged with a sequence number into the first BLOCKS (default 128) blocks
# of FILE; logs "I seq block" to LOG before a write and "A seq" once an
# fsync covering it returned.  Stops at the first error (the daemon died).
# tests/lib/ack_verify.py checks what a crash left against LOG.
import os, random, sys
path, log, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
blocks = int(sys.argv[4]) if len(sys.argv) > 4 else 128
rnd = random.Random(seed)
fd = os.open(path, os.O_RDWR)
out = open(log, "a")
seq = seed * 1000000
pending = []
try:
    while True:
        seq += 1
        b = rnd.randrange(blocks)
        out.write("I %d %d\n" % (seq, b)); out.flush()
        os.pwrite(fd, (b"%020d" % seq) * 3276 + b"\0" * 16, b * 65536)
        pending.append(seq)
        if len(pending) >= rnd.randrange(1, 6):
            os.fsync(fd)
            for s in pending:
                out.write("A %d\n" % s)
            out.flush()
            pending = []
except OSError:
    pass
