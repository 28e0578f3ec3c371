# Open vSwitch with the userspace datapath (no kernel module needed), one
# bridge in secure fail mode pointed at the sdnlb controller.
FROM debian:bookworm-slim
RUN apt-get update \
	&& apt-get install -y --no-install-recommends openvswitch-switch iproute2 \
	&& rm -rf /var/lib/apt/lists/*
COPY ovs-entrypoint.sh /usr/local/bin/ovs-entrypoint.sh
ENTRYPOINT ["/usr/local/bin/ovs-entrypoint.sh"]
