#!/usr/bin/env bash
# Makes sure the PostgreSQL server binaries (initdb, postgres) are here, for
# the tests that start a throw-away server (internal/testenv.StartPostgres).
# They come from Debian's postgresql package: installed when missing if this
# runs as root, otherwise this fails and says how to install them. It never
# lets the PostgreSQL tests be skipped.
set -euo pipefail

have() {
	if [ -n "${VIGIL_POSTGRES_BIN:-}" ]; then
		[ -x "$VIGIL_POSTGRES_BIN/initdb" ] && [ -x "$VIGIL_POSTGRES_BIN/postgres" ]
		return
	fi
	compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || command -v postgres >/dev/null
}

if have; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "hack/ensure-postgres.sh: the PostgreSQL server binaries are missing; the tests need a real server." >&2
	echo "Install them as root:  apt-get install -y postgresql   (or set VIGIL_POSTGRES_BIN to a directory with initdb and postgres)" >&2
	exit 1
fi
echo "hack/ensure-postgres.sh: installing Debian's postgresql package (the tests start their own server)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The package's own cluster is not used: the tests initdb their own. policy-rc.d
# keeps the package from starting a service, which a container may not allow.
policy=/usr/sbin/policy-rc.d
created=
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
fi
trap '[ -n "$created" ] && rm -f "$policy"' EXIT
apt-get install -y -qq --no-install-recommends postgresql >/dev/null
have || { echo "hack/ensure-postgres.sh: installed postgresql, yet no server binaries were found" >&2; exit 1; }
