# Shell helpers the bench/ scripts share (sourced, not run). Expects ROOT, BUILD and WORK set,
# and a PIDS array that the caller's cleanup stops.
TCK=$(getconf CLK_TCK)
cpu_of() { awk -v t="$TCK" '{ print ($14 + $15) / t }' "/proc/$1/stat"; }
# medicd's CPU by part: "PIPELINE PROBER TOTAL" seconds. The pipeline is the main thread (the
# poll loop) and the map workers (threads named medic-map: parsing and mapping the answers),
# the prober the thread named medic-prober; TOTAL is the whole process (threads that have
# exited included).
parts_of() {
  local pid=$1 pipeline=0 prober=0 t name v
  for t in /proc/"$pid"/task/*; do
    name=$(cat "$t/comm" 2>/dev/null) || continue
    # Fields after the ")" that ends the name: utime and stime are the 12th and 13th.
    v=$(sed 's/^.*) //' "$t/stat" 2>/dev/null | awk -v t="$TCK" '{ print ($12 + $13) / t }') || continue
    if [[ ${t##*/} == "$pid" || $name == medic-map ]]; then
      pipeline=$(awk -v a="$pipeline" -v b="$v" 'BEGIN { print a + b }')
    elif [[ $name == medic-prober ]]; then
      prober=$v
    fi
  done
  echo "$pipeline $prober $(cpu_of "$pid")"
}
free_port() {
  for ((p = 31000 + RANDOM % 2000; p < 40000; p++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
counter() {  # URL METRIC -> value (0 if absent or unreachable)
  { curl -s "$1" || true; } | awk -v m="$2" '$1 == m { v = $2 } END { printf "%.0f\n", v + 0 }'
}
# start_fabsim PRESET [fabsim arguments...]: the generated fabric served by fabsim; sets
# FABSIM_PID and FABSIM_T0 (the Unix time its scenario's faults are timed from, as fabsim
# says) and writes $WORK/topology.json (generated) and $WORK/live.json (as served).
#
# With FABSIM_OWN_ADDRESSES=1, every switch and host is served at a loopback address of its
# own (127.20.0.1, 127.20.0.2, ..., one port for all), as each device of a real fabric has
# its own: the poller holds a connection to each instead of sharing a few to one address.
start_fabsim() {
  local preset=$1
  shift
  "$BUILD/cli/medic" fabric gen "$preset" --telemetry prometheus >"$WORK/topology.json"
  local where=(--listen 127.0.0.1:0)
  if [[ ${FABSIM_OWN_ADDRESSES:-0} == 1 ]]; then
    # fabsim listens on every address and holds a connection from medicd to each; medicd
    # keeps one to each within half its open-file limit: both need room.
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    local devices
    devices=$(python3 -c 'import json, sys; t = json.load(open(sys.argv[1])); print(len(t["switches"]) + len(t["hosts"]))' "$WORK/topology.json")
    if (($(ulimit -n) < 2 * devices + 1024)); then
      echo "bench: each device at its own address needs $((2 * devices + 1024)) open files, the limit is $(ulimit -n)" >&2
      exit 1
    fi
    python3 - "$WORK/topology.json" "$(free_port)" <<'PY'
import json, re, sys
path, port = sys.argv[1], sys.argv[2]
topo = json.load(open(path))
for i, d in enumerate(topo["switches"] + topo["hosts"]):
    ip = f"127.{20 + i // 62500}.{i % 62500 // 250}.{i % 250 + 1}"
    at = lambda url: re.sub(r"^(https?://)[^/]+", lambda m: f"{m.group(1)}{ip}:{port}", url)
    if isinstance(d.get("telemetry"), str):
        d["telemetry"] = at(d["telemetry"])
    if isinstance(d.get("driver"), dict) and isinstance(d["driver"].get("url"), str):
        d["driver"]["url"] = at(d["driver"]["url"])
json.dump(topo, open(path, "w"))
PY
    where=(--stamp-port 0)
  fi
  "$BUILD/sim/fabsim" --topology "$WORK/topology.json" "${where[@]}" --export-topology "$WORK/live.json" "$@" \
    >"$WORK/fabsim.log" 2>&1 &
  FABSIM_PID=$!
  PIDS+=($FABSIM_PID)
  # fabsim stands for the switches, each answering from its own CPU: the daemon under test
  # (three busy threads to fabsim's one, on the same cores) must not slow their answers.
  # Without the weight, fabsim waits its turn behind medicd's threads while a scrape waits
  # on fabsim (zone32k at 1 s: cycle p50 0.94 s, p99 1.27 s; with it 0.86 and 1.02).
  renice -n -10 -p "$FABSIM_PID" >/dev/null 2>&1 || echo "bench: could not renice fabsim (not root?): it shares the cores evenly" >&2
  for _ in $(seq 1 300); do [[ -f $WORK/live.json ]] && break; sleep 0.1; done
  [[ -f $WORK/live.json ]] || { cat "$WORK/fabsim.log" >&2; exit 1; }
  FABSIM_T0=$(sed -n 's/^fabsim scenario time 0 is Unix time \([0-9.]*\)$/\1/p' "$WORK/fabsim.log" | head -1)
  [[ -n $FABSIM_T0 ]] || { echo "bench: fabsim did not say when its scenario starts" >&2; cat "$WORK/fabsim.log" >&2; exit 1; }
}
