#!/bin/sh
# Start ovsdb-server, configure a netdev bridge controlled by sdnlb, then run
# ovs-vswitchd in the foreground as the container's main process.
set -eu

bridge="${OVS_BRIDGE:-br0}"
controller="${OVS_CONTROLLER:-tcp:sdnlb:6653}"
run=/var/run/openvswitch
db=/etc/openvswitch/conf.db

# OVS wants an address in the controller target: resolve the host part
# (a compose service name) with a bounded wait, since sdnlb may start later.
proto="${controller%%:*}"
rest="${controller#*:}"
host="${rest%:*}"
port="${rest##*:}"
addr=""
i=0
while [ -z "$addr" ] && [ "$i" -lt 60 ]; do
	addr="$(getent ahostsv4 "$host" | awk '{ print $1; exit }')" || true
	[ -n "$addr" ] || { i=$((i + 1)); sleep 1; }
done
[ -n "$addr" ] || { echo "cannot resolve controller host $host" >&2; exit 1; }

mkdir -p "$run" /etc/openvswitch /var/log/openvswitch
[ -f "$db" ] || ovsdb-tool create "$db" /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server "$db" --remote="punix:$run/db.sock" --pidfile --detach --log-file
ovs-vsctl --no-wait init
ovs-vsctl --no-wait --may-exist add-br "$bridge" \
	-- set bridge "$bridge" datapath_type=netdev fail_mode=secure protocols=OpenFlow13 \
	other-config:disable-in-band=true
ovs-vsctl --no-wait set-controller "$bridge" "$proto:$addr:$port"
exec ovs-vswitchd "unix:$run/db.sock" --pidfile
