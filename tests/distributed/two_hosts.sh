#!/usr/bin/env bash
# Two hosts, not only two processes: two network namespaces joined by a veth pair, one rank in each,
# Open MPI's TCP transport between them over the veth addresses, and mpirun's launch agent entering
# the other namespace where it would ssh to another machine. Runs ddp_check's equivalence and zero there.
#   two_hosts.sh MPIRUN DDP_CHECK
# Exit 77 (CTest's SKIP_RETURN_CODE) with a message where namespaces cannot be made (no root, no
# CAP_NET_ADMIN, no iproute2); any other nonzero exit is a failure.
set -euo pipefail
mpirun=$1
ddp_check=$2

skip() {
  echo "SKIPPED: $*"
  exit 77
}
command -v ip > /dev/null || skip "iproute2's ip is not installed (apt-get install iproute2)"

tag=tg$$
ns_a=${tag}a ns_b=${tag}b
# A /24 from 10.200-254 chosen by the process id, so that concurrent runs do not collide.
net=10.$((200 + $$ % 55)).$(($$ % 251))
addr_a=$net.1 addr_b=$net.2
work=$(mktemp -d)

cleanup() {
  ip netns del "$ns_a" 2> /dev/null || true
  ip netns del "$ns_b" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

err=$(ip netns add "$ns_a" 2>&1) || skip "cannot create a network namespace here (ip netns add: $err)"
ip netns add "$ns_b"
# Deleting a namespace deletes the veth end inside it, and with it the pair.
err=$(ip link add "${tag}va" type veth peer name "${tag}vb" 2>&1) || skip "cannot create a veth pair here ($err)"
ip link set "${tag}va" netns "$ns_a"
ip link set "${tag}vb" netns "$ns_b"
ip -n "$ns_a" addr add "$addr_a/24" dev "${tag}va"
ip -n "$ns_b" addr add "$addr_b/24" dev "${tag}vb"
for ns in "$ns_a" "$ns_b"; do
  ip -n "$ns" link set lo up
done
ip -n "$ns_a" link set "${tag}va" up
ip -n "$ns_b" link set "${tag}vb" up

# The launch agent: called as `agent HOST COMMAND...` like ssh, it runs the command in HOST's namespace.
cat > "$work/agent.sh" << AGENT
#!/usr/bin/env bash
host=\$1
shift
case "\$host" in
  $addr_a) ns=$ns_a ;;
  $addr_b) ns=$ns_b ;;
  *) echo "agent.sh: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
AGENT
chmod +x "$work/agent.sh"
printf '%s slots=1\n%s slots=1\n' "$addr_a" "$addr_b" > "$work/hostfile"

echo "namespaces $ns_a ($addr_a) and $ns_b ($addr_b) joined by a veth pair; mpirun in $ns_a"
# mpirun runs in the first "host"; shared memory is off (btl self,tcp), so the ranks talk TCP over the veth.
run_check() {
  timeout 100 ip netns exec "$ns_a" "$mpirun" --allow-run-as-root -np 2 --hostfile "$work/hostfile" \
    --mca plm_rsh_agent "$work/agent.sh" --mca btl self,tcp --mca btl_tcp_if_include "$net.0/24" \
    --mca oob_tcp_if_include "$net.0/24" --mca plm_rsh_no_tree_spawn 1 \
    /bin/sh -c 'echo "rank $OMPI_COMM_WORLD_RANK runs in namespace $(ip netns identify $$)"; exec "$0" "$@"' \
    "$ddp_check" "$@"
}
run_check equivalence --dtype float
# ZeRO too: gradients reduced onto their owners and parameters broadcast back, across the "hosts".
run_check zero --dtype float
# Proof that the ranks talked over the veth pair, not through shared memory or the host's loopback.
sent=$(ip netns exec "$ns_a" cat "/sys/class/net/${tag}va/statistics/tx_bytes")
received=$(ip netns exec "$ns_a" cat "/sys/class/net/${tag}va/statistics/rx_bytes")
echo "veth ${tag}va in $ns_a: $sent bytes sent, $received bytes received"
if ((sent < 100000 || received < 100000)); then
  echo "FAILED: too little traffic on the veth pair for the gradient reductions" >&2
  exit 1
fi
