#!/usr/bin/env bash
# Makes sure a Chromium is here, for the dashboard's browser tests
# (internal/dashboard/dashboardtest), which drive a real headless browser
# over the DevTools protocol. It comes from Debian's chromium package:
# installed when missing if this runs as root, otherwise this fails and says
# how to install it. It never lets those tests be skipped.
set -euo pipefail

have() {
	if [ -n "${VIGIL_CHROMIUM:-}" ]; then
		[ -x "$VIGIL_CHROMIUM" ]
		return
	fi
	command -v chromium >/dev/null
}

if have; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "hack/ensure-chromium.sh: chromium is missing; the dashboard's tests drive a real headless browser." >&2
	echo "Install it as root:  apt-get install -y --no-install-recommends chromium   (or set VIGIL_CHROMIUM to a Chromium binary)" >&2
	exit 1
fi
echo "hack/ensure-chromium.sh: installing Debian's chromium package (the dashboard's browser tests)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
have || { echo "hack/ensure-chromium.sh: installed chromium, yet no chromium binary was found" >&2; exit 1; }
