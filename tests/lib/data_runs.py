#!/usr/bin/env python3
"""tests/lib/data_runs.py: where a volume's data is, as "OFFSET LENGTH"
lines (bytes, adjacent runs merged), from one of two sources, so that a
test can diff them:

  data_runs.py seek FILE   SEEK_DATA / SEEK_HOLE on FILE (the FUSE file)
  data_runs.py nbd         `nbdinfo --map --json` on stdin (base:allocation:
                           an extent is data unless its type has bit 0, hole)
"""
import json
import os
import sys


def seek_runs(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        off = 0
        while off < size:
            try:
                data = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:  # ENXIO: no data past off
                break
            hole = os.lseek(fd, data, os.SEEK_HOLE)
            yield data, hole - data
            off = hole
    finally:
        os.close(fd)


def nbd_runs(extents):
    for e in extents:
        if not e["type"] & 1:
            yield e["offset"], e["length"]


def merged(runs):
    out = []
    for off, length in runs:
        if out and out[-1][0] + out[-1][1] == off:
            out[-1][1] += length
        else:
            out.append([off, length])
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "seek":
        runs = seek_runs(sys.argv[2])
    elif len(sys.argv) == 2 and sys.argv[1] == "nbd":
        runs = nbd_runs(json.load(sys.stdin))
    else:
        sys.exit(__doc__)
    for off, length in merged(runs):
        print(off, length)


if __name__ == "__main__":
    main()
