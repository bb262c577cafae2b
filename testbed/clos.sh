#!/usr/bin/env bash
# A small real Clos made of Linux network namespaces and veth links, for tests and demos:
#
#        c1        c2          spines (CTSW)
#        | \      / |
#        |  \    /  |
#        |   \  /   |
#        r1    r2              ToRs (RTSW), ECMP over both spines
#        |      |
#        h1     h2             GPU hosts
#
# Every link is a veth pair with a /31 from 198.18.0.0/15; interfaces are named as the
# topology names them (eth1.. on switches, nic0 on hosts). Every switch and host runs the
# real prometheus-node-exporter (Debian package) on its management address 198.19.0.N:9100,
# reached from a management namespace over a bridge. medicd runs inside that management
# namespace and reaches PostgreSQL over its Unix socket. Every node also runs medic-reflector
# (STAMP) on port 862, so medicd can probe every link from one end to the other and every
# host from the other. Every switch also runs the real net-snmp agent (Debian snmpd) on
# 198.19.0.N:161, serving IF-MIB for its interfaces to a v2c community and an SNMPv3
# authPriv user (DIR/snmp-credentials.json); DIR/topology-snmp.json is the same fabric with
# its switches polled over SNMP (snmp://198.19.0.N:161) instead of node_exporter, and each
# agent sends its linkDown/linkUp notifications to 198.19.0.254:1162 in the management
# namespace (medicd --snmp-trap-listen 198.19.0.254:1162).
#
#   testbed/clos.sh up DIR          build it; DIR keeps the state (names, pids) and topology.json
#   testbed/clos.sh down DIR        stop every process it started (by pid) and delete the namespaces
#   testbed/clos.sh ns DIR NODE     print the namespace name of a node (r1, c2, h1, mgmt, ...)
#   testbed/clos.sh flap DIR NODE IFACE COUNT PERIOD_S DOWN_S
#                                   take an interface down and up COUNT times (a real flap)
#   testbed/clos.sh lossy DIR NODE IFACE PERCENT
#                                   drop PERCENT% of what arrives on an interface (nftables numgen):
#                                   a gray failure no interface counter shows
#   testbed/clos.sh clean DIR NODE  remove that rule
set -euo pipefail

cmd=${1:-}
dir=${2:-}
[[ -n $cmd && -n $dir ]] || { echo "usage: testbed/clos.sh up|down|ns|flap DIR ..." >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "testbed: needs root (network namespaces)" >&2; exit 1; }
EXPORTER=${MEDIC_NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REFLECTOR=${MEDIC_REFLECTOR:-$ROOT/build/probes/medic-reflector}
SNMPD=${MEDIC_SNMPD:-/usr/sbin/snmpd}
SNMP_COMMUNITY=medic-testbed
SNMP_USER=medic
SNMP_AUTH=testbed-auth-pass
SNMP_PRIV=testbed-priv-pass
SNMP_TRAP_PORT=1162

NODES=(c1 c2 r1 r2 h1 h2)
# link: nodeA ifA addrA nodeB ifB addrB
LINKS=(
  "h1 nic0 198.18.1.1 r1 eth1 198.18.1.0"
  "h2 nic0 198.18.2.1 r2 eth1 198.18.2.0"
  "r1 eth2 198.18.3.0 c1 eth1 198.18.3.1"
  "r1 eth3 198.18.4.0 c2 eth1 198.18.4.1"
  "r2 eth2 198.18.5.0 c1 eth2 198.18.5.1"
  "r2 eth3 198.18.6.0 c2 eth2 198.18.6.1"
)
mgmt_addr() {
  case $1 in c1) echo 198.19.0.1 ;; c2) echo 198.19.0.2 ;; r1) echo 198.19.0.11 ;; r2) echo 198.19.0.12 ;;
    h1) echo 198.19.0.21 ;; h2) echo 198.19.0.22 ;; esac
}

state_prefix() { cat "$dir/prefix"; }
ns_of() { echo "$(state_prefix)-$1"; }

up() {
  mkdir -p "$dir"
  [[ -x $EXPORTER ]] || { echo "testbed: $EXPORTER missing; run scripts/setup" >&2; exit 1; }
  [[ -x $REFLECTOR ]] || { echo "testbed: $REFLECTOR missing; run scripts/build (or set MEDIC_REFLECTOR)" >&2; exit 1; }
  [[ -x $SNMPD ]] || { echo "testbed: $SNMPD missing; run scripts/setup" >&2; exit 1; }
  local prefix="mt$$"
  echo "$prefix" >"$dir/prefix"
  : >"$dir/pids"
  ip netns add "$prefix-mgmt"
  ip -n "$prefix-mgmt" link set lo up
  ip -n "$prefix-mgmt" link add br0 type bridge
  ip -n "$prefix-mgmt" addr add 198.19.0.254/24 dev br0
  ip -n "$prefix-mgmt" link set br0 up
  local i=0
  for n in "${NODES[@]}"; do
    local ns="$prefix-$n"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
      net.ipv4.conf.default.rp_filter=0 net.ipv4.fib_multipath_hash_policy=1
    # management: a veth into the mgmt bridge
    i=$((i + 1))
    ip link add "${prefix}m$i" type veth peer name mgmt0 netns "$ns"
    ip link set "${prefix}m$i" netns "$prefix-mgmt"
    ip -n "$prefix-mgmt" link set "${prefix}m$i" master br0 up
    ip -n "$ns" addr add "$(mgmt_addr "$n")/24" dev mgmt0
    ip -n "$ns" link set mgmt0 up
  done
  local l=0
  for spec in "${LINKS[@]}"; do
    read -r na ia aa nb ib ab <<<"$spec"
    l=$((l + 1))
    ip link add "${prefix}a$l" type veth peer name "${prefix}b$l"
    ip link set "${prefix}a$l" netns "$prefix-$na"
    ip link set "${prefix}b$l" netns "$prefix-$nb"
    ip -n "$prefix-$na" link set "${prefix}a$l" name "$ia"
    ip -n "$prefix-$nb" link set "${prefix}b$l" name "$ib"
    ip -n "$prefix-$na" addr add "$aa/31" dev "$ia"
    ip -n "$prefix-$nb" addr add "$ab/31" dev "$ib"
    ip -n "$prefix-$na" link set "$ia" up
    ip -n "$prefix-$nb" link set "$ib" up
  done
  # Routes: hosts default to their ToR; ToRs spread the other host over both spines (ECMP);
  # spines reach each host's subnet through its ToR.
  ip -n "$prefix-h1" route add default via 198.18.1.0
  ip -n "$prefix-h2" route add default via 198.18.2.0
  ip -n "$prefix-r1" route add 198.18.2.0/31 nexthop via 198.18.3.1 dev eth2 nexthop via 198.18.4.1 dev eth3
  ip -n "$prefix-r2" route add 198.18.1.0/31 nexthop via 198.18.5.1 dev eth2 nexthop via 198.18.6.1 dev eth3
  ip -n "$prefix-c1" route add 198.18.1.0/31 via 198.18.3.0 dev eth1
  ip -n "$prefix-c1" route add 198.18.2.0/31 via 198.18.5.0 dev eth2
  ip -n "$prefix-c2" route add 198.18.1.0/31 via 198.18.4.0 dev eth1
  ip -n "$prefix-c2" route add 198.18.2.0/31 via 198.18.6.0 dev eth2
  # The real exporter in every node, on its management address.
  for n in "${NODES[@]}"; do
    ip netns exec "$prefix-$n" "$EXPORTER" --web.listen-address="$(mgmt_addr "$n"):9100" \
      --collector.disable-defaults --collector.netclass --collector.netdev \
      --collector.netclass.ignored-devices='^(lo|mgmt0)$' --collector.netdev.device-exclude='^(lo|mgmt0)$' \
      >"$dir/exporter-$n.log" 2>&1 &
    echo "$!" >>"$dir/pids"
  done
  # A STAMP reflector in every node, answering on all its addresses.
  for n in "${NODES[@]}"; do
    ip netns exec "$prefix-$n" "$REFLECTOR" --listen 0.0.0.0:862 --rate-limit 0 >"$dir/reflector-$n.log" 2>&1 &
    echo "$!" >>"$dir/pids"
  done
  for n in "${NODES[@]}"; do
    local ok=""
    for _ in $(seq 1 100); do
      if ip netns exec "$prefix-mgmt" bash -c "exec 3<>/dev/tcp/$(mgmt_addr "$n")/9100" 2>/dev/null; then ok=1; break; fi
      sleep 0.1
    done
    [[ -n $ok ]] || { echo "testbed: node_exporter on $n did not start" >&2; cat "$dir/exporter-$n.log" >&2; exit 1; }
  done
  # The real SNMP agent in every switch, on its management address. No MIB files: every
  # OID medicd asks for is numeric.
  # Each agent also sends linkDown/linkUp (SNMPv3 traps, the medic user) to the management
  # namespace's 198.19.0.254:$SNMP_TRAP_PORT, checking ifOperStatus every second (DISMAN-EVENT
  # monitors, numeric OIDs: linkDown/linkUp with ifIndex, ifAdminStatus, ifOperStatus). The
  # monitors query the agent as an internal user; the write community is for setting the
  # agent's ifTable cache to 0 s below (mgmt namespace only), so they see a flap at once.
  cat >"$dir/snmpd.conf" <<CONF
rocommunity $SNMP_COMMUNITY 198.19.0.0/24
rwcommunity $SNMP_COMMUNITY-rw 198.19.0.254/32
createUser $SNMP_USER SHA "$SNMP_AUTH" AES "$SNMP_PRIV"
rouser $SNMP_USER priv
createUser medicinternal SHA "testbed-internal-pass"
rouser medicinternal auth
iquerySecName medicinternal
trapsess -v 3 -u $SNMP_USER -l authPriv -a SHA -A "$SNMP_AUTH" -x AES -X "$SNMP_PRIV" 198.19.0.254:$SNMP_TRAP_PORT
notificationEvent linkDownTrap 1.3.6.1.6.3.1.1.5.3 1.3.6.1.2.1.2.2.1.1 1.3.6.1.2.1.2.2.1.7 1.3.6.1.2.1.2.2.1.8
notificationEvent linkUpTrap 1.3.6.1.6.3.1.1.5.4 1.3.6.1.2.1.2.2.1.1 1.3.6.1.2.1.2.2.1.7 1.3.6.1.2.1.2.2.1.8
monitor -S -r 1 -u medicinternal -e linkDownTrap "linkDown" 1.3.6.1.2.1.2.2.1.8 == 2
monitor -S -r 1 -u medicinternal -e linkUpTrap "linkUp" 1.3.6.1.2.1.2.2.1.8 == 1
CONF
  for n in c1 c2 r1 r2; do
    mkdir -p "$dir/snmp-$n"
    ip netns exec "$prefix-$n" env MIBS= MIBDIRS=/nonexistent SNMP_PERSISTENT_DIR="$dir/snmp-$n" \
      "$SNMPD" -f -Lf "$dir/snmpd-$n.log" -C -c "$dir/snmpd.conf" -p "$dir/snmp-$n/pid" "udp:$(mgmt_addr "$n"):161" \
      >/dev/null 2>&1 &
    echo "$!" >>"$dir/pids"
  done
  cat >"$dir/snmp-credentials.json" <<JSON
{"version": "3", "user": "$SNMP_USER", "auth_password": "$SNMP_AUTH", "priv_password": "$SNMP_PRIV"}
JSON
  for n in c1 c2 r1 r2; do
    local ok=""
    for _ in $(seq 1 100); do
      if ip netns exec "$prefix-mgmt" env MIBS= MIBDIRS=/nonexistent snmpget -v2c -c "$SNMP_COMMUNITY" -t 0.2 -r 0 \
        "udp:$(mgmt_addr "$n"):161" 1.3.6.1.2.1.1.3.0 >/dev/null 2>&1; then ok=1; break; fi
      sleep 0.1
    done
    [[ -n $ok ]] || { echo "testbed: snmpd on $n did not answer" >&2; cat "$dir/snmpd-$n.log" >&2; exit 1; }
    # NET-SNMP-AGENT-MIB nsCacheTimeout of ifTable (IMPLIED index 1.3.6.1.2.1.2.2): 0 s.
    ip netns exec "$prefix-mgmt" env MIBS= MIBDIRS=/nonexistent snmpset -v2c -c "$SNMP_COMMUNITY-rw" -t 1 -r 2 \
      "udp:$(mgmt_addr "$n"):161" 1.3.6.1.4.1.8072.1.5.3.1.2.1.3.6.1.2.1.2.2 i 0 >/dev/null
  done
  for n in "${NODES[@]}"; do
    for _ in $(seq 1 100); do grep -q "medic-reflector on" "$dir/reflector-$n.log" 2>/dev/null && break; sleep 0.05; done
    grep -q "medic-reflector on" "$dir/reflector-$n.log" || { echo "testbed: reflector on $n did not start" >&2; cat "$dir/reflector-$n.log" >&2; exit 1; }
  done
  write_topology
  echo "testbed up: namespaces $prefix-{mgmt,${NODES[*]// /,}}, topology $dir/topology.json"
}

write_topology() {
  write_topology_polling "http" "$dir/topology.json"
  write_topology_polling "snmp" "$dir/topology-snmp.json"
}

# The fabric with its switches' counters read from node_exporter (http) or snmpd (snmp).
write_topology_polling() {
  local how=$1 out=$2 sw=""
  for n in c1 c2 r1 r2; do
    local role=ctsw telemetry="http://$(mgmt_addr "$n"):9100/metrics"
    [[ $n == r* ]] && role=rtsw
    [[ $how == snmp ]] && telemetry="snmp://$(mgmt_addr "$n"):161"
    sw+="${sw:+,}
    {\"name\": \"$n\", \"role\": \"$role\", \"zone\": 1, \"telemetry\": \"$telemetry\",
     \"driver\": {\"kind\": \"netns\", \"url\": \"netns:$(ns_of "$n")\"},
     \"probe\": {\"source\": \"netns:$(ns_of "$n")\", \"reflector_port\": 862}}"
  done
  cat >"$out" <<JSON
{
  "version": 1,
  "switches": [$sw
  ],
  "hosts": [
    {"name": "h1", "zone": 1, "nics": ["nic0"], "telemetry": "http://$(mgmt_addr h1):9100/metrics",
     "probe": {"source": "netns:$(ns_of h1)", "reflector_port": 862}},
    {"name": "h2", "zone": 1, "nics": ["nic0"], "telemetry": "http://$(mgmt_addr h2):9100/metrics",
     "probe": {"source": "netns:$(ns_of h2)", "reflector_port": 862}}
  ],
  "links": [
    {"a": "h1:nic0", "b": "r1:eth1", "speed_gbps": 400, "a_ip": "198.18.1.1", "b_ip": "198.18.1.0"},
    {"a": "h2:nic0", "b": "r2:eth1", "speed_gbps": 400, "a_ip": "198.18.2.1", "b_ip": "198.18.2.0"},
    {"a": "r1:eth2", "b": "c1:eth1", "speed_gbps": 400, "a_ip": "198.18.3.0", "b_ip": "198.18.3.1"},
    {"a": "r1:eth3", "b": "c2:eth1", "speed_gbps": 400, "a_ip": "198.18.4.0", "b_ip": "198.18.4.1"},
    {"a": "r2:eth2", "b": "c1:eth2", "speed_gbps": 400, "a_ip": "198.18.5.0", "b_ip": "198.18.5.1"},
    {"a": "r2:eth3", "b": "c2:eth2", "speed_gbps": 400, "a_ip": "198.18.6.0", "b_ip": "198.18.6.1"}
  ],
  "capacity_groups": [
    {"name": "r1 uplinks", "kind": "tor_uplinks", "floor": 0.5, "links": ["r1:eth2", "r1:eth3"]},
    {"name": "r2 uplinks", "kind": "tor_uplinks", "floor": 0.5, "links": ["r2:eth2", "r2:eth3"]}
  ]
}
JSON
  # Two uplinks per ToR and two downlinks per spine: the default floors (75%) would forbid
  # every drain, so the testbed's medicd runs with --capacity DIR/capacity.json.
  cat >"$dir/capacity.json" <<JSON
{
  "version": 1,
  "comment": "The testbed's floors: one of two links may be drained.",
  "floors": {"tor_uplinks": 0.5, "spine_downlinks": 0.5, "spine_uplinks": null, "plane": null}
}
JSON
}

down() {
  [[ -f $dir/prefix ]] || exit 0
  local prefix
  prefix=$(state_prefix)
  if [[ -f $dir/pids ]]; then
    while read -r pid; do
      [[ -n $pid ]] && kill "$pid" 2>/dev/null || true
    done <"$dir/pids"
    while read -r pid; do
      [[ -n $pid ]] || continue
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    done <"$dir/pids"
  fi
  for n in mgmt "${NODES[@]}"; do ip netns del "$prefix-$n" 2>/dev/null || true; done
  rm -f "$dir/prefix" "$dir/pids"
}

case $cmd in
  up) up ;;
  down) down ;;
  ns) ns_of "$3" ;;
  lossy)
    ns=$(ns_of "$3")
    # Prerouting sees what the interface receives, whether it is for the node or forwarded.
    ip netns exec "$ns" nft -f - <<NFT
table inet medic_testbed {
  chain loss {
    type filter hook prerouting priority -300; policy accept;
    iifname "$4" numgen random mod 100 < $5 drop
  }
}
NFT
    ;;
  clean) ip netns exec "$(ns_of "$3")" nft delete table inet medic_testbed 2>/dev/null || true ;;
  flap)
    node=$3 iface=$4 count=$5 period=$6 downtime=$7
    ns=$(ns_of "$node")
    for ((k = 0; k < count; k++)); do
      ip -n "$ns" link set "$iface" down
      sleep "$downtime"
      ip -n "$ns" link set "$iface" up
      sleep "$(awk -v p="$period" -v d="$downtime" 'BEGIN { s = p - d; if (s < 0) s = 0; print s }')"
    done
    ;;
  *) echo "usage: testbed/clos.sh up|down|ns|flap DIR ..." >&2; exit 2 ;;
esac
