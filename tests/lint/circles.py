#!/usr/bin/env python3
"""tests/lint/circles.py BUILD_DIR: no circle of calls among the files of
a room (all of core/, fs/, meta/, tools/), and no call from a folder of
core up into a folder above it (util -> io -> target -> thin -> pool).

Reads the object files the build made (nm: what each defines, what it
needs from others), draws an arrow from a file to every file of the same
room that defines a symbol it needs, and looks for strongly connected
sets of two or more files.  A circle means two files that each need the
other: the lower one should take a hook, or the shared piece should move
down (docs/architecture.md).  Within core it also ranks each file by its
folder: a file that needs a symbol defined in a folder above its own
calls up, even when no test of its layer links it and no circle closes.
Prints each circle and each upward call with the symbols that make it and
exits 1 if there is any; exits 77 (skip) if nothing is built.
"""
import collections
import glob
import os
import subprocess
import sys

ROOMS = {
    "core": "core/*/CMakeFiles/*.dir/*.c.o",
    "fs": "fs/CMakeFiles/mapperfs.dir/*.c.o",
    "meta": "meta/CMakeFiles/meta.dir/*.c.o",
    "tools": "tools/CMakeFiles/cmds.dir/*.c.o",
}

# core's folders from the bottom: a file may call only its own and those below.
CORE_LAYERS = ["util", "io", "target", "thin", "pool"]


def core_rank(obj):
    """The rank of @obj's folder in CORE_LAYERS (core/<folder>/CMakeFiles/...)."""
    folder = os.path.normpath(obj).split(os.sep)[-4]
    return CORE_LAYERS.index(folder)


def upward_calls(name, graph, ties):
    """Prints each call of core from a folder into one above it; their number."""
    n = 0
    for o in sorted(graph):
        for d in sorted(graph[o]):
            if core_rank(d) > core_rank(o):
                n += 1
                print(f"core: {name[o]} (core/{CORE_LAYERS[core_rank(o)]}) calls up into "
                      f"{name[d]} (core/{CORE_LAYERS[core_rank(d)]}): " +
                      " ".join(sorted(ties[(o, d)])))
    return n


def symbols(objs):
    """{obj: (defined, needed)}: one nm for all of @objs."""
    out = subprocess.run(["nm", "-A", "-g"] + objs, capture_output=True, text=True,
                         check=True).stdout
    syms = {o: (set(), set()) for o in objs}
    for line in out.split("\n"):
        path, _, rest = line.partition(":")
        fields = rest.split()
        if path not in syms or not fields:
            continue
        kind, name = fields[-2], fields[-1]
        syms[path][1 if kind == "U" else 0].add(name)
    return syms


def circles(graph):
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    build = sys.argv[1]
    sys.setrecursionlimit(10000)
    bad = 0
    seen_any = False
    for room, pattern in ROOMS.items():
        objs = sorted(glob.glob(os.path.join(build, pattern)))
        if not objs:
            continue
        seen_any = True
        name = {o: os.path.basename(o)[:-2] for o in objs}	# "pool.c"
        syms = symbols(objs)
        defs = {o: syms[o][0] for o in objs}
        needs = {o: syms[o][1] for o in objs}
        owner = {s: o for o in objs for s in defs[o]}
        ties = collections.defaultdict(set)
        graph = {o: set() for o in objs}
        for o in objs:
            for s in needs[o]:
                d = owner.get(s)
                if d and d != o:
                    graph[o].add(d)
                    ties[(o, d)].add(s)
        for comp in circles(graph):
            bad += 1
            print(f"{room}: a circle of {len(comp)} files: " +
                  ", ".join(name[o] for o in comp))
            for o in comp:
                for d in sorted(graph[o] & set(comp)):
                    print(f"  {name[o]} -> {name[d]}: " + " ".join(sorted(ties[(o, d)])))
        if room == "core":
            up = upward_calls(name, graph, ties)
            bad += up
    if not seen_any:
        print(f"circles.py: no object files under {build}: build first", file=sys.stderr)
        return 77
    if bad:
        print(f"circles.py: {bad} circle(s) of calls or calls up core's layers", file=sys.stderr)
        return 1
    print("circles.py: no circle of calls in " + ", ".join(ROOMS) +
          ", no call up core's layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
