#!/usr/bin/env python3
"""bench/load's sampler: reads medicd's /metrics four times a second for a bounded time.

Writes into --out:
  cycles.txt   "UNIX_S CYCLES LAST_CYCLE_S SCRAPE_S JUDGE_S RECORD_S", one line per finished
               cycle (medic_last_cycle_seconds and medic_last_cycle_stage_seconds, published
               together when a cycle ends), from the second cycle seen on;
  metrics0.txt the first /metrics answer (the stages' sums are counted from it);
  judged.txt   "ROUND JUDGED SLOW" each time a probe round ends;
  rss.txt      "UNIX_S RSS_MIB" every 10 s.

One process and one kept HTTP connection for the whole run, so that measuring does not take
the cores being measured. Exits 1 when medicd exits before the time is up.
"""
import argparse
import http.client
import os
import re
import time

STAGE = re.compile(r'^medic_last_cycle_stage_seconds\{stage="(scrape|judge|record)"\} (\S+)$', re.M)


def value(text, name):
    m = re.search(r"^" + re.escape(name) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by bench/load) is not running.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    end = time.time() + a.seconds
    conn = None
    last_cycle = 0
    last_round = 0
    next_rss = 0.0
    have_first = False
    files = {n: open(os.path.join(a.out, n), "w", buffering=1) for n in ("cycles.txt", "judged.txt", "rss.txt")}
    while time.time() < end:
        if not alive(a.pid):
            return 1
        text = None
        # A kept connection medicd has since closed (idle) fails at once: try a new one.
        for _ in (0, 1):
            reused = conn is not None
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=2)
                conn.request("GET", "/metrics")
                resp = conn.getresponse()
                body = resp.read()
                if resp.status == 200:
                    text = body.decode("utf-8", "replace")
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
                break
            except (OSError, http.client.HTTPException):
                if conn is not None:
                    conn.close()
                conn = None
                if not reused:
                    break
        if text is not None:
            c = value(text, "medic_cycles_total")
            t = value(text, "medic_last_cycle_seconds")
            stages = dict(STAGE.findall(text))
            if c is not None:
                c = round(c)
                if c > last_cycle and last_cycle > 0 and t is not None:
                    st = ""
                    if len(stages) == 3:
                        st = " " + " ".join(f"{float(stages[k]):.4f}" for k in ("scrape", "judge", "record"))
                    files["cycles.txt"].write(f"{int(time.time())} {c} {t}{st}\n")
                if not have_first:
                    with open(os.path.join(a.out, "metrics0.txt"), "w") as f:
                        f.write(text)
                    have_first = True
                last_cycle = c
            r = value(text, "medic_probe_rounds_total")
            if r is not None and round(r) > last_round:
                last_round = round(r)
                j = value(text, "medic_probe_links_judged") or 0
                s = value(text, "medic_probe_links_slow") or 0
                files["judged.txt"].write(f"{last_round} {j:.0f} {s:.0f}\n")
        if time.time() >= next_rss:
            try:
                m = rss_mib(a.pid)
            except OSError:  # exited since: the next turn says so
                m = None
            if m is not None:
                files["rss.txt"].write(f"{int(time.time())} {m:.1f}\n")
            next_rss = time.time() + 10
        time.sleep(0.25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
