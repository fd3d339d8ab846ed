#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench-real: a malloc tracer on real programs, ringbuf.h against LTTng-UST.

Workloads: sqlite3 (200k inserts in one transaction, then an index),
CPython with 4 threads (glibc told to keep what it frees: MALLOC_TRIM_THRESHOLD_), a `gcc -O2` compile and link (a tree of processes:
gcc, cc1, as, collect2, ld). Each runs
  plain    untraced,
  floor    what every tracer of these calls pays: the allocation functions
           interposed (bench/real/clock_floor.c, preloaded) and one
           CLOCK_MONOTONIC read per call, the event's time stamp; nothing
           recorded,
  ringbuf  under tools/ringbuf-record -d (examples/malloc_trace.so preloaded;
           one buffer per process image, drained live, one trace.dat each),
  inproc   examples/malloc_trace.so preloaded in its in-process mode
           (MALLOC_TRACE_OUT: no recorder; each process image drains its
           private buffer from a consumer thread of its own into a trace.dat:
           the way a program records itself),
  lttng    with LTTng-UST's liblttng-ust-libc-wrapper.so in an active
           session (lttng_ust_libc:* in a channel of 4 x 2 MiB sub-buffers per
           CPU; on 2 CPUs 16 MiB, as malloc_trace.so's 8 per-thread buffers
           of 2 MiB),
in interleaved rounds (BENCH_REAL_ROUNDS, default 5; the order of the modes
rotates every round). CPU is user + system of the whole tree: for ringbuf the
recorder (the tree's parent and subreaper) is included; for lttng the CPU that
lttng-sessiond and lttng-consumerd used from `lttng start` to `lttng stop`
(the flush) is added. Ratios are the median over rounds of each round's
traced / plain, with their range (the smallest and the largest); each
mode's overhead (ratio - 1) is then given as a fraction of LTTng's, with the
number of rounds in which it was below LTTng's and at half of it or less
(each round's pair compared; a sign test's p: on a noisy machine CPython's
rows need more rounds to decide). With the floor measured, each overhead is
given again above it, (x - floor) / (LTTng - floor), with the rounds at half
of LTTng's or less (issue 24: where a goal sits below a floor the machine
imposes, it is restated against the floor, measured in the same run). Peak RSS is the largest of the processes
of the tree (for ringbuf this includes the recorder). Events and losses:
ringbuf from the recorder's totals (lost = the pages' lost counts), inproc from
examples/malloc_check's totals over the trace.dat files; both checked with
examples/malloc_check (every free/realloc matches a live allocation, no live
pointer allocated twice, fork children inherit their parent's set); lttng
from babeltrace2's counter (events) and `lttng list` (discarded events).

Environment: BENCH_REAL_ROUNDS, BENCH_REAL_ONLY (comma list of sqlite,
python, gcc), BENCH_REAL_MODES (comma list of plain,floor,ringbuf,inproc,lttng),
BENCH_REAL_JSON (default BUILD/bench-real.json). The table again from such
a file: bench/real/bench_real.py --report FILE.
"""
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
ROUNDS = int(os.environ.get("BENCH_REAL_ROUNDS", "5"))
ONLY = [w for w in os.environ.get("BENCH_REAL_ONLY", "sqlite,python,gcc").split(",") if w]
MODES = [m for m in os.environ.get("BENCH_REAL_MODES", "plain,floor,ringbuf,inproc,lttng").split(",") if m]
JSON_OUT = os.environ.get("BENCH_REAL_JSON", os.path.join(BUILD, "bench-real.json"))
RECORD = os.path.join(BUILD, "tools", "ringbuf-record")
PRELOAD = os.path.join(BUILD, "examples", "malloc_trace.so")
CHECK = os.path.join(BUILD, "examples", "malloc_check")
FLOOR = os.path.join(BUILD, "bench", "clock_floor.so")
LTTNG_WRAPPER = "liblttng-ust-libc-wrapper.so"
TICK = os.sysconf("SC_CLK_TCK")

PY_WORK = r"""
import threading
def work(n, seed):
    d = {}
    acc = 0
    for i in range(n):
        s = ("%d-%d" % (seed, i)) * 3
        big = s * (40 + i % 50)             # > 512 bytes: malloc, not pymalloc
        d[s] = [i, s, (i, s), {"k": big}, [0] * (70 + i % 30)]
        if len(d) > 2000:
            acc += len(d)
            d = {}
    return acc
ts = [threading.Thread(target=work, args=(100000, k)) for k in range(4)]
for t in ts: t.start()
for t in ts: t.join()
"""


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def need_packages():
    missing = []
    if not shutil.which("sqlite3"):
        missing.append("sqlite3")
    if not os.path.exists("/usr/bin/python3"):
        missing.append("python3")
    if not shutil.which("lttng") or not shutil.which("lttng-sessiond"):
        missing.append("lttng-tools")
    if sh("ldconfig -p | grep -q " + LTTNG_WRAPPER).returncode != 0:
        missing.append("liblttng-ust-dev")
    if not shutil.which("babeltrace2"):
        missing.append("babeltrace2")
    if not missing:
        return
    line = "apt-get install -y " + " ".join(missing)
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("bench-real: installing: " + line, flush=True)
        # install even when update reports a failed index (an unreachable
        # mirror of another architecture made `update && install` skip it)
        sh("apt-get update -q")
        r = sh("DEBIAN_FRONTEND=noninteractive " + line)
        if r.returncode != 0:
            print("bench-real: %s failed:\n%s" % (line, r.stdout[-2000:]), flush=True)
    else:
        print("bench-real: missing packages; run as root:  " + line)


def prepare(work):
    sql = os.path.join(work, "inserts.sql")
    with open(sql, "w") as f:
        f.write("PRAGMA journal_mode=MEMORY;\nCREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, b INTEGER);\nBEGIN;\n")
        for i in range(200000):
            f.write("INSERT INTO t(a, b) VALUES('row%d-%s', %d);\n" % (i, "x" * (i % 37), i * 7))
        f.write("COMMIT;\nCREATE INDEX ta ON t(a);\nSELECT count(*), sum(b) FROM t;\n")
    db = os.path.join(work, "bench.db")
    exe = os.path.join(work, "rec.out")
    return {
        "sqlite": {"argv": ["sqlite3", db], "stdin": sql, "before": lambda: rm(db), "env": {}},
        # glibc keeps what CPython frees (MALLOC_TRIM_THRESHOLD_, every mode
        # alike): by default it gave the heap's top back to the kernel and
        # faulted it in again, 78% of the untraced run's 3.6 s of CPU on a
        # VM whose first touch of a page costs 5-12 us, and that varied by
        # +-20% from run to run (0.7-0.8 s and +-4% with it kept)
        "python": {"argv": ["/usr/bin/python3", "-c", PY_WORK], "stdin": None, "before": None,
                   "env": {"MALLOC_TRIM_THRESHOLD_": "4294967295"}},
        "gcc": {"argv": ["gcc", "-O2", "-I" + ROOT, "-o", exe, os.path.join(ROOT, "tools", "ringbuf-record.c")],
                "stdin": None, "before": lambda: rm(exe), "env": {}},
    }


def rm(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def run_tree(argv, stdin_path, env=None):
    """Run argv; returns (wall s, cpu s of the tree, peak RSS KiB, status, stderr text)."""
    err = tempfile.TemporaryFile()
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = status
    if stdin_path:
        stdin.close()
    err.seek(0)
    text = err.read().decode(errors="replace")
    err.close()
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, status, text


def du(path):
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(d, f))
            except OSError:
                pass
    return total


def lttng_daemon_pids():
    out = sh("pgrep -x 'lttng-sessiond|lttng-consumerd'").stdout.split()
    return [int(p) for p in out if p.isdigit()]


def proc_cpu(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total / TICK


class Lttng:
    started_pid = None

    def __init__(self, work):
        self.work = work
        self.n = 0
        if not lttng_daemon_pids():
            sh("lttng-sessiond --daemonize")
            time.sleep(1)
            pids = sh("pgrep -o -x lttng-sessiond").stdout.split()
            Lttng.started_pid = int(pids[0]) if pids else None

    def run(self, w):
        self.n += 1
        name = "rbbench%d-%d" % (os.getpid(), self.n)
        out = os.path.join(self.work, "lttng-" + name)
        for c in ("lttng create %s --output=%s" % (name, out),
                  "lttng enable-channel -u -s %s ch --subbuf-size=2M --num-subbuf=4" % name,
                  "lttng enable-event -u -s %s -c ch 'lttng_ust_libc:*'" % name,
                  "lttng start %s" % name):
            r = sh(c)
            if r.returncode != 0:
                raise RuntimeError(c + ": " + r.stdout)
        pids = lttng_daemon_pids()
        d0 = proc_cpu(pids)
        env = dict(os.environ, LD_PRELOAD=LTTNG_WRAPPER, **w["env"])
        wall, cpu, rss, status, _ = run_tree(w["argv"], w["stdin"], env)
        sh("lttng stop %s" % name)  # waits for the data to be flushed
        pids = lttng_daemon_pids()
        dcpu = proc_cpu(pids) - d0
        listing = sh("lttng list %s" % name).stdout
        sh("lttng destroy %s" % name)
        lost = sum(int(x) for x in re.findall(r"Discarded events:\s*(\d+)", listing))
        events = None
        if shutil.which("babeltrace2"):
            c = sh("babeltrace2 %s -c sink.utils.counter" % out).stdout
            m = re.findall(r"(\d+)\s+Event messages", c)  # every 10000, then the total
            events = int(m[-1]) if m else None
        size = du(out)
        shutil.rmtree(out, ignore_errors=True)
        return {"wall": wall, "cpu": cpu + dcpu, "daemon_cpu": dcpu, "rss_kib": rss, "status": status,
                "events": events, "lost": lost, "trace_bytes": size, "check": None}

    @staticmethod
    def stop():
        if Lttng.started_pid:
            try:
                os.kill(Lttng.started_pid, 15)
            except OSError:
                pass


def check_files(files):
    """examples/malloc_check over trace.dat files: (check dict, events, lost)."""
    c = subprocess.run([CHECK, "-q"] + files, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = c.stdout.strip().splitlines()[-1] if c.stdout.strip() else "no output"
    mm = re.search(r"(\d+) unmatched frees, (\d+) allocations of a live pointer", line)
    mt = re.search(r"(\d+) events, .* (\d+) lost:", line)
    check = {"ok": c.returncode == 0, "line": line,
             "unmatched": int(mm.group(1)) if mm else None,
             "double_alloc": int(mm.group(2)) if mm else None}
    return check, (int(mt.group(1)) if mt else None), (int(mt.group(2)) if mt else None)


def run_inproc(w, work, n):
    out = os.path.join(work, "inproc-out-%d" % n)
    env = dict(os.environ, LD_PRELOAD=PRELOAD, MALLOC_TRACE_OUT=out, **w["env"])
    env.pop("RINGBUF_RECORD_DIR", None)
    wall, cpu, rss, status, _ = run_tree(w["argv"], w["stdin"], env)
    files = sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".dat")) \
        if os.path.isdir(out) else []
    check, events, lost = check_files(files) if files else (None, None, None)
    size = du(out)
    shutil.rmtree(out, ignore_errors=True)
    return {"wall": wall, "cpu": cpu, "rss_kib": rss, "status": status, "events": events, "lost": lost,
            "buffers": len(files), "trace_bytes": size, "check": check}


def run_ringbuf(w, work, n):
    d = os.path.join("/dev/shm", "rb-bench-real-%d-%d" % (os.getpid(), n))
    out = os.path.join(work, "rb-out-%d" % n)
    argv = [RECORD, "-d", d, "-o", out, "--preload", PRELOAD, "--"] + w["argv"]
    wall, cpu, rss, status, err = run_tree(argv, w["stdin"], dict(os.environ, **w["env"]))
    m = re.search(r"(\d+) buffers, (\d+) events, (\d+) lost", err)
    buffers, events, lost = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (None, None, None)
    size = du(out)
    files = sorted(os.path.join(out, f) for f in os.listdir(out)) if os.path.isdir(out) else []
    check = check_files(files)[0] if files else None
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(d, ignore_errors=True)
    return {"wall": wall, "cpu": cpu, "rss_kib": rss, "status": status, "events": events, "lost": lost,
            "buffers": buffers, "trace_bytes": size, "check": check}


def main():
    need_packages()
    for f in (RECORD, PRELOAD, CHECK) + ((FLOOR,) if "floor" in MODES else ()):
        if not os.path.exists(f):
            sys.exit("bench-real: %s missing (make bench-real builds it)" % f)
    modes = list(MODES)
    if "lttng" in modes and (not shutil.which("lttng") or
                             sh("ldconfig -p | grep -q " + LTTNG_WRAPPER).returncode != 0):
        print("bench-real: LTTng-UST not installed: the lttng mode is skipped")
        modes.remove("lttng")
    work = tempfile.mkdtemp(prefix="rb-bench-real-")
    loads = prepare(work)
    lt = Lttng(work) if "lttng" in modes else None
    res = {w: {m: [] for m in modes} for w in ONLY}
    try:
        for r in range(ROUNDS):
            for w in ONLY:
                order = modes[r % len(modes):] + modes[:r % len(modes)]
                for m in order:
                    wl = loads[w]
                    if wl["before"]:
                        wl["before"]()
                    if m in ("plain", "floor"):
                        env = dict(os.environ, **wl["env"])
                        if m == "floor":
                            env["LD_PRELOAD"] = FLOOR
                        wall, cpu, rss, status, _ = run_tree(wl["argv"], wl["stdin"], env)
                        x = {"wall": wall, "cpu": cpu, "rss_kib": rss, "status": status}
                    elif m == "ringbuf":
                        x = run_ringbuf(wl, work, r)
                    elif m == "inproc":
                        x = run_inproc(wl, work, r)
                    else:
                        x = lt.run(wl)
                    res[w][m].append(x)
                    print("round %d %-6s %-7s cpu %.2f s wall %.2f s%s" % (
                        r + 1, w, m, x["cpu"], x["wall"],
                        "" if m in ("plain", "floor") else "  events %s lost %s" % (x.get("events"), x.get("lost"))),
                        flush=True)
    finally:
        if lt:
            Lttng.stop()
        shutil.rmtree(work, ignore_errors=True)

    load = os.getloadavg()
    print()
    print("bench-real: %d rounds, %d CPUs, load average %.1f %.1f %.1f at the end (other jobs share the machine)"
          % (ROUNDS, os.cpu_count(), load[0], load[1], load[2]))
    summary = report(res, modes)
    with open(JSON_OUT, "w") as f:
        json.dump({"rounds": ROUNDS, "cpus": os.cpu_count(), "loadavg": load, "summary": summary,
                   "runs": res}, f, indent=1, default=str)
    print("bench-real: %s" % JSON_OUT)


def report(res, modes):
    """The table and the comparison with LTTng, from each mode's runs."""
    hdr = ("workload", "mode", "CPU s", "CPU x", "CPU x range", "wall s", "wall x", "events", "lost", "peak RSS MiB",
           "trace MiB", "free check")
    rows = []
    summary = {}
    for w in ONLY:
        summary[w] = {}
        plain = res[w].get("plain")
        for m in modes:
            xs = res[w][m]
            cpu = statistics.median(x["cpu"] for x in xs)
            wall = statistics.median(x["wall"] for x in xs)
            rss = max(x["rss_kib"] for x in xs) / 1024
            cx = wx = None
            crange = "-"
            if plain and m != "plain":
                cxs = [x["cpu"] / p["cpu"] for x, p in zip(xs, plain)]
                cx = statistics.median(cxs)
                crange = "%.2f-%.2f" % (min(cxs), max(cxs))
                wx = statistics.median(x["wall"] / p["wall"] for x, p in zip(xs, plain))
            ev = [x.get("events") for x in xs if x.get("events") is not None]
            lost = [x.get("lost") for x in xs if x.get("lost") is not None]
            tb = [x.get("trace_bytes") for x in xs if x.get("trace_bytes") is not None]
            chk = [x.get("check") for x in xs if x.get("check")]
            if m in ("plain", "floor"):
                check = "-"
            elif m == "lttng":
                check = "not checked"
            else:
                check = "%d/%d ok" % (sum(1 for c in chk if c["ok"]), len(xs))
                bad = sum(c["unmatched"] or 0 for c in chk)
                if bad:
                    check += " (%d unmatched)" % bad
            s = {"cpu_s": cpu, "wall_s": wall, "cpu_x": cx, "cpu_x_range": crange, "wall_x": wx,
                 "peak_rss_mib": rss,
                 "events_median": statistics.median(ev) if ev else None,
                 "lost_total": sum(lost) if lost else None, "lost_max": max(lost) if lost else None,
                 "trace_mib": statistics.median(tb) / 2**20 if tb else None, "check": check}
            summary[w][m] = s
            rows.append((w, m, "%.2f" % cpu, "%.2f" % cx if cx else "1.00", crange, "%.2f" % wall,
                         "%.2f" % wx if wx else "1.00",
                         "%d" % s["events_median"] if ev else "-",
                         "%d" % s["lost_total"] if lost else "-", "%.0f" % rss,
                         "%.0f" % s["trace_mib"] if tb else "-", check))
    widths = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
    line = lambda r: "| " + " | ".join(str(c).ljust(widths[i]) for i, c in enumerate(r)) + " |"
    print(line(hdr))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    print("(CPU s, wall s: medians; x plain: median of per-round ratios, range: their smallest and"
          " largest; lost: total over rounds; events: median per run)")
    # Against LTTng: the quotient of the median overheads (CPU x - 1), and
    # how many rounds agree, each round's traced and LTTng runs compared as a
    # pair (the plain run of the same round divides both): below LTTng's
    # overhead, and at half of it or less (issue 24's goal). p is the sign
    # test's one-sided chance of at least that many by a coin's toss: with
    # 5 rounds 5/5 is p = 0.03, 4/5 0.19; more rounds decide a close row.
    for w in ONLY:
        lt_s = summary[w].get("lttng")
        plain = res[w].get("plain")
        if not lt_s or not plain or lt_s["cpu_x"] is None or lt_s["cpu_x"] <= 1:
            continue
        lts = [x["cpu"] / p["cpu"] for x, p in zip(res[w]["lttng"], plain)]
        fl_s = summary[w].get("floor")
        fls = [x["cpu"] / p["cpu"] for x, p in zip(res[w]["floor"], plain)] if fl_s else None
        for m in modes:
            if m in ("plain", "lttng", "floor"):
                continue
            s = summary[w][m]
            xs = [x["cpu"] / p["cpu"] for x, p in zip(res[w][m], plain)]
            n = len(xs)
            below = sum(1 for x, l in zip(xs, lts) if x < l)
            half = sum(1 for x, l in zip(xs, lts) if l > 1 and x - 1 <= 0.5 * (l - 1))
            sign_p = lambda k: sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n
            q = (s["cpu_x"] - 1) / (lt_s["cpu_x"] - 1)
            s.update({"overhead_vs_lttng": q, "rounds_below_lttng": below,
                      "rounds_at_half_lttng": half})
            print("%-6s %-7s overhead %.2f of LTTng's (%.2f / %.2f); rounds below LTTng's %d/%d"
                  " (p %.2f), at half of it or less %d/%d (p %.2f)" % (
                      w, m, q, s["cpu_x"] - 1, lt_s["cpu_x"] - 1, below, n, sign_p(below),
                      half, n, sign_p(half)))
            if fl_s and lt_s["cpu_x"] > fl_s["cpu_x"]:
                f = fl_s["cpu_x"]
                qf = (s["cpu_x"] - f) / (lt_s["cpu_x"] - f)
                halff = sum(1 for x, l, fr in zip(xs, lts, fls) if l > fr and x - fr <= 0.5 * (l - fr))
                s.update({"above_floor_vs_lttng": qf, "rounds_at_half_lttng_above_floor": halff})
                print("%-6s %-7s above the floor (%.2f): %.2f of LTTng's (%.2f / %.2f); rounds at half of it"
                      " or less %d/%d (p %.2f)" % (w, m, f, qf, s["cpu_x"] - f, lt_s["cpu_x"] - f, halff, n,
                                                    sign_p(halff)))
    return summary


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--report":
        # the table again from a run's JSON (BENCH_REAL_JSON)
        with open(sys.argv[2]) as f:
            runs = json.load(f)["runs"]
        ONLY = list(runs)
        report(runs, list(runs[ONLY[0]]))
    else:
        main()
