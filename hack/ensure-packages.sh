#!/usr/bin/env bash
# Makes sure the programs the tests run for real are here, from Debian's
# packages:
#   postgres    the PostgreSQL server binaries (initdb, postgres): the tests
#               start throw-away servers (internal/testenv.StartPostgres);
#   prometheus  a Prometheus server: a test scrapes the manager with it;
#   chromium    a headless Chromium: the dashboard's browser tests;
#   podman      podman with runc: test/image runs Vigil's image with it.
# What is missing is installed, all of it with one apt-get, when this runs
# as root; otherwise this fails and says how to install it. It never lets a
# test be skipped.
#
# Usage: hack/ensure-packages.sh postgres prometheus chromium podman
set -euo pipefail

have() {
	case "$1" in
	postgres)
		if [ -n "${VIGIL_POSTGRES_BIN:-}" ]; then
			[ -x "$VIGIL_POSTGRES_BIN/initdb" ] && [ -x "$VIGIL_POSTGRES_BIN/postgres" ]
			return
		fi
		compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || command -v postgres >/dev/null ;;
	prometheus) if [ -n "${VIGIL_PROMETHEUS:-}" ]; then [ -x "$VIGIL_PROMETHEUS" ]; else command -v prometheus >/dev/null; fi ;;
	chromium) if [ -n "${VIGIL_CHROMIUM:-}" ]; then [ -x "$VIGIL_CHROMIUM" ]; else command -v chromium >/dev/null; fi ;;
	podman) command -v podman >/dev/null && command -v runc >/dev/null ;;
	*) echo "hack/ensure-packages.sh: unknown program $1 (postgres, prometheus, chromium, podman)" >&2; exit 2 ;;
	esac
}

# The Debian packages of each, and the variable that names one elsewhere.
packages() {
	case "$1" in
	postgres) echo postgresql ;;
	prometheus) echo prometheus ;;
	chromium) echo chromium fonts-dejavu-core ;;
	podman) echo podman runc ;;
	esac
}
variable() {
	case "$1" in
	postgres) echo "VIGIL_POSTGRES_BIN to a directory with initdb and postgres" ;;
	prometheus) echo "VIGIL_PROMETHEUS to a prometheus binary" ;;
	chromium) echo "VIGIL_CHROMIUM to a Chromium binary" ;;
	podman) echo "nothing: podman and runc must be on PATH" ;;
	esac
}

missing=()
for p in "$@"; do
	have "$p" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

debs=()
for p in "${missing[@]}"; do
	read -ra d <<<"$(packages "$p")"
	debs+=("${d[@]}")
done
if [ "$(id -u)" -ne 0 ]; then
	echo "hack/ensure-packages.sh: ${missing[*]} missing; the tests run them for real and are never skipped." >&2
	echo "Install as root:  apt-get install -y --no-install-recommends ${debs[*]}" >&2
	for p in "${missing[@]}"; do echo "  (or set $(variable "$p"))" >&2; done
	exit 1
fi
echo "hack/ensure-packages.sh: installing Debian's ${debs[*]} (the tests start their own servers and browser)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The packages' own services are not used: the tests start their own.
# policy-rc.d keeps a package from starting one, which a container may not
# allow.
policy=/usr/sbin/policy-rc.d
created=
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
fi
trap '[ -n "$created" ] && rm -f "$policy"' EXIT
apt-get install -y -qq --no-install-recommends "${debs[@]}" >/dev/null
for p in "${missing[@]}"; do
	have "$p" || { echo "hack/ensure-packages.sh: installed $(packages "$p"), yet no $p was found" >&2; exit 1; }
done
