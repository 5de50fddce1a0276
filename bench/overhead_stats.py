#!/usr/bin/env python3
# Summarises an interleaved A/B overhead run (bench/h200/profile_matrix.sh's overhead.txt:
# lines "PAIR on|off SAMPLES_PER_SEC"). Each pair ran back to back (ABBA order across pairs),
# so the per-pair ratio on/off cancels drift between pairs; the median of the ratios and their
# spread (min..max, and the median absolute deviation) is the overhead estimate.
import statistics
import sys

pairs = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 3:
        try:
            pairs.setdefault(f[0], {})[f[1]] = float(f[2])
        except ValueError:
            pass
ratios = [p["on"] / p["off"] for p in pairs.values() if "on" in p and "off" in p]
off = [p["off"] for p in pairs.values() if "off" in p]
on = [p["on"] for p in pairs.values() if "on" in p]
if not ratios:
    sys.exit("no complete pairs")
med = statistics.median(ratios)
mad = statistics.median([abs(r - med) for r in ratios])
print("pairs %d; samples/s off median %.1f (min %.1f max %.1f), on median %.1f (min %.1f max %.1f)"
      % (len(ratios), statistics.median(off), min(off), max(off), statistics.median(on),
         min(on), max(on)))
print("per-pair on/off: median %+.2f%%, MAD %.2f%%, range %+.2f%% .. %+.2f%%"
      % (100 * (med - 1), 100 * mad, 100 * (min(ratios) - 1), 100 * (max(ratios) - 1)))
