#!/usr/bin/env bash
# The end of `make test`: reports how many control planes the run started
# (testenv's boot log), and fails if a process the tests started is still
# running. The tests ran with TMPDIR set to RUN_DIR, so every kube-apiserver,
# etcd, PostgreSQL, browser or manager they started names it on its command
# line; those are listed, killed, and the run fails.
#
# Usage: hack/test-report.sh RUN_DIR
set -uo pipefail
run=${1:?usage: hack/test-report.sh RUN_DIR}

if [ -s "$run/boots" ]; then
	awk '
		$1 == "boot" { boots++; secs += $3; by[$2]++ }
		$1 == "reset" { resets++; rsecs += $3 }
		END {
			printf "== control planes: %d booted (%.0f s in all, %.1f s on average), %d reused after a reset (%.1f s on average)\n",
				boots, secs, boots ? secs / boots : 0, resets, resets ? rsecs / resets : 0
			for (b in by) if (by[b] > 1) printf "   %s booted %d\n", b, by[b]
		}' "$run/boots"
fi

# Every process naming RUN_DIR but this script (and its subshells).
left=$(ps -eo pid=,args= | awk -v run="$run" 'index($0, run) && !index($0, "test-report.sh")')
if [ -n "$left" ]; then
	echo "== FAIL: processes the tests started are still running; killed now:"
	echo "$left" | cut -c1-200 | sed 's/^/   /'
	kill -9 $(echo "$left" | awk '{print $1}') 2>/dev/null || true
	exit 1
fi
