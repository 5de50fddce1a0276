#!/usr/bin/env python3
"""Listings at scale: `nodus ps -a` (table, json, csv), `cost` and `sweeps` over a store of N jobs,
time and peak memory, side by side.

    python3 bench/listing_bench.py --nodus BUILD/nodus --gen BUILD/bench-gen_store \
        [--base OTHER/nodus --base-label COMMIT [--base-gen OTHER/bench-gen_store]] \
        [--jobs 100000] [--reps 7] [--out FILE]

Generates the store once (bench/gen_store.cc, the same fixed seed as bench/run.sh's store
section); with --base-gen, a second one for --base, by the base's own generator (the same jobs,
in the schema the base reads: a newer nodus migrates its store, which an older one then refuses).
Each nodus runs every command once untimed (a migration, the page cache), then every command
runs once per repeat, interleaved, so that a change in the machine's speed during the run
touches every command alike. Each command's stdout goes to
/dev/null. Figures: median (min-max) wall seconds, and peak resident memory (ru_maxrss of the
process, from GNU time). The peer is sqlite3's own shell reading the same rows (every column,
newest first) and printing them: what reading the rows costs without nodus. Writes a markdown
report to --out (default: stdout).
"""

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run_once(argv, env):
    # Peak memory through GNU time: a child forked from this Python would start its high-water
    # mark at Python's own size (ru_maxrss survives exec).
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        proc = subprocess.run(["/usr/bin/time", "-f", "maxrss_kib=%M"] + argv, env=env, stdout=null,
                              stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}: {err.strip()[-300:]}")
    kib = int(err.strip().splitlines()[-1].split("=")[1])
    return wall, kib / 1024.0  # MiB


def mmm(values, digits=2):
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nodus", required=True)
    p.add_argument("--gen", required=True, help="bench/gen_store.cc, built")
    p.add_argument("--base", help="another nodus binary to measure beside it (e.g. before a change)")
    p.add_argument("--base-label", default="base")
    p.add_argument("--base-gen", help="the base's bench/gen_store.cc, built: the base reads its own store")
    p.add_argument("--jobs", type=int, default=100000)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--out")
    a = p.parse_args()

    work = tempfile.mkdtemp(prefix="nodus-listing-")
    try:
        db = os.path.join(work, "nodus.db")
        t0 = time.perf_counter()
        gen = subprocess.run([a.gen, db, str(a.jobs), str(a.jobs // 100), str(a.jobs * 10)],
                             check=True, capture_output=True, text=True)
        gen_s = time.perf_counter() - t0
        env = dict(os.environ, NODUS_HOME=work, NO_COLOR="1")
        env.pop("NODUS_LOCAL_GPUS", None)
        base_env = env
        if a.base and a.base_gen:
            base_work = os.path.join(work, "base")
            os.mkdir(base_work, 0o700)
            subprocess.run([a.base_gen, os.path.join(base_work, "nodus.db"), str(a.jobs), str(a.jobs // 100),
                            str(a.jobs * 10)], check=True, capture_output=True, text=True)
            base_env = dict(env, NODUS_HOME=base_work)
        commands = {}
        envs = {}
        for label, binary, home_env in (("nodus", a.nodus, env), (a.base_label, a.base, base_env)):
            if not binary:
                continue
            for args in (["ps", "-a"], ["ps", "-a", "--format", "json"], ["ps", "-a", "--format", "csv"],
                         ["cost"], ["cost", "--by", "sweep"], ["cost", "--by", "name"],
                         ["cost", "--by", "name", "--format", "json"], ["sweeps"]):
                name = f"`nodus {' '.join(args)}` ({label})"
                commands[name] = [binary] + args
                envs[name] = home_env
        sqlite = shutil.which("sqlite3")
        if sqlite:
            commands["peer: `sqlite3 -readonly nodus.db 'SELECT * FROM jobs ORDER BY id DESC'`"] = [
                sqlite, "-readonly", db, "SELECT * FROM jobs ORDER BY id DESC"]
        for name, argv in commands.items():  # untimed: a migration, the page cache
            run_once(argv, envs.get(name, env))
        load_start = os.getloadavg()
        walls = {k: [] for k in commands}
        rss = {k: [] for k in commands}
        for _ in range(a.reps):
            for name, argv in commands.items():
                w, m = run_once(argv, envs.get(name, env))
                walls[name].append(w)
                rss[name].append(m)
        load_end = os.getloadavg()
        peer = [k for k in commands if k.startswith("peer")]
        peer_median = statistics.median(walls[peer[0]]) if peer else None
        rev = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        L = ["# Listings at scale", "",
             f"Written by `bench/listing_bench.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"nodus at {rev}, {os.cpu_count()} CPUs.",
             f"Store: {a.jobs} jobs generated by bench/gen_store.cc in {gen_s:.0f} s "
             f"({sum(os.path.getsize(f) for f in glob.glob(db + '*')) / 1e6:.0f} MB; {gen.stdout.strip()}).",
             f"Every command once per repeat, interleaved, {a.reps} repeats, stdout to /dev/null; "
             f"load average {' '.join(f'{x:.2f}' for x in load_start)} at the start, "
             f"{' '.join(f'{x:.2f}' for x in load_end)} at the end.", "",
             "| command | wall s, median (min-max) | x peer | peak RSS MiB, median (min-max) |",
             "|---|---|---|---|"]
        for name in commands:
            ratio = f"{statistics.median(walls[name]) / peer_median:.2f}" if peer_median else "-"
            L.append(f"| {name} | {mmm(walls[name], 3)} | {ratio} | {mmm(rss[name], 1)} |")
        ours = [k for k in commands if k.endswith("(nodus)")]
        L += ["", "Goals (issue 34): `nodus ps -a` at 100k jobs under 20 MiB and 0.5 s; `nodus cost` 50 ms; "
              "`nodus cost --by name` at most 20 MiB.", ""]
        for name in ours:
            if name.startswith("`nodus cost`"):
                t, m = statistics.median(walls[name]), statistics.median(rss[name])
                L.append(f"- {name}: {m:.1f} MiB; {t * 1000:.0f} ms {'met' if t <= 0.05 else 'MISSED'}")
                continue
            if name.startswith("`nodus cost --by name"):
                t, m = statistics.median(walls[name]), statistics.median(rss[name])
                L.append(f"- {name}: {m:.1f} MiB {'met' if m <= 20 else 'MISSED'}; {t:.2f} s")
                continue
            if not name.startswith("`nodus ps"):
                continue
            t, m = statistics.median(walls[name]), statistics.median(rss[name])
            L.append(f"- {name}: {m:.1f} MiB {'met' if m < 20 else 'MISSED'}; "
                     f"{t:.2f} s {'met' if t < 0.5 else 'MISSED'} ({t / peer_median:.2f}x the peer)"
                     if peer_median else f"- {name}: {m:.1f} MiB, {t:.2f} s")
        text = "\n".join(L) + "\n"
        if a.out:
            with open(a.out, "w") as f:
                f.write(text)
        print(text, end="")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
