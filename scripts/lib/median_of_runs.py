#!/usr/bin/env python3
"""The median run of each row of a bench script's summary, with the spread of its runs.

    median_of_runs.py SUMMARY KEY

SUMMARY holds one tab-separated line per run, named NAME-RUN in its first field (the bench
scripts append to `summary.txt`). For each NAME, in the order rows first appear, prints the
run whose KEY-th field (1-based, read as the number it starts with) is the median — the lower
of the two middle runs for an even count, as the scripts always took — as `median: LINE`, then
`spread: …` with the smallest and largest value over the row's runs of that field and of every
field about server CPU (`… us server CPU per call`, `… per server CPU-second`).

Why the spread: this machine's runs of one row differ by up to 15 %, more than most changes
measured on it; a row is called changed only when its medians differ by more than their runs
spread (docs/BENCHMARKS.md, "How to read these numbers").
"""

import re
import sys

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
RUN_NAME = re.compile(r"^(.*)-(\d+)$")


def number(field):
    found = NUMBER.search(field)
    return float(found.group()) if found else None


def spread(values, field):
    low, high = min(values), max(values)
    label = NUMBER.sub("…", field, count=1).strip()
    middle = sorted(values)[(len(values) + 1) // 2 - 1]
    share = f" (±{(high - low) / 2 / middle * 100:.1f} % of the median)" if middle else ""
    return f"{low:g}–{high:g} in «{label}»{share}"


def main(path, key):
    rows = {}
    for line in open(path):
        fields = line.rstrip("\n").split("\t")
        named = RUN_NAME.match(fields[0])
        if not named or len(fields) < key:
            continue
        rows.setdefault(named.group(1), []).append(fields)
    for runs in rows.values():
        runs.sort(key=lambda f: number(f[key - 1]) or 0.0)
        median = runs[(len(runs) + 1) // 2 - 1]
        print("median: " + "\t".join(median))
        columns = [key - 1] + [
            i for i, f in enumerate(median) if "server CPU" in f and i != key - 1
        ]
        parts = []
        for i in columns:
            values = [number(f[i]) for f in runs if i < len(f) and number(f[i]) is not None]
            if values:
                parts.append(spread(values, median[i]))
        print(f"spread of {len(runs)} run(s): " + "; ".join(parts))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: median_of_runs.py SUMMARY KEY (the 1-based field the median is by)")
    main(sys.argv[1], int(sys.argv[2]))
