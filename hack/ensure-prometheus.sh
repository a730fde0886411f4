#!/usr/bin/env bash
# Makes sure a Prometheus server binary is here, for the test that scrapes
# the manager's Prometheus endpoint with a real Prometheus
# (internal/api/apitest). It comes from Debian's prometheus package:
# installed when missing if this runs as root, otherwise this fails and says
# how to install it. It never lets that test be skipped.
set -euo pipefail

have() {
	if [ -n "${VIGIL_PROMETHEUS:-}" ]; then
		[ -x "$VIGIL_PROMETHEUS" ]
		return
	fi
	command -v prometheus >/dev/null
}

if have; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "hack/ensure-prometheus.sh: the prometheus binary is missing; the tests scrape the manager with a real Prometheus." >&2
	echo "Install it as root:  apt-get install -y --no-install-recommends prometheus   (or set VIGIL_PROMETHEUS to a prometheus binary)" >&2
	exit 1
fi
echo "hack/ensure-prometheus.sh: installing Debian's prometheus package (the tests start their own server)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The package's own service is not used: the test starts its own server.
# policy-rc.d keeps the package from starting one, which a container may
# not allow.
policy=/usr/sbin/policy-rc.d
created=
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
fi
trap '[ -n "$created" ] && rm -f "$policy"' EXIT
apt-get install -y -qq --no-install-recommends prometheus >/dev/null
have || { echo "hack/ensure-prometheus.sh: installed prometheus, yet no prometheus binary was found" >&2; exit 1; }
