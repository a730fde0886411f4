#!/usr/bin/env bash
# The release test/upgrade upgrades from: the newest tag before this commit
# (on a release commit, not its own), or, in a tree without tags, 6f9af1f,
# the last commit before the store's schema 15 (SLAs). VIGIL_UPGRADE_FROM
# names another.
#
# Usage: hack/previous-release.sh          prints the revision
#        hack/previous-release.sh build    builds its vigil command, once,
#                                          into bin/upgrade/<commit>/vigil,
#                                          and prints the revision and path
#
# The release's tree comes from `git archive` and builds as a module alone
# (GOWORK=off), with its own dependencies: from a cold cache that is most
# of ten minutes, so `make test` builds it before the tests run, and a
# built release is kept.
set -euo pipefail
cd "$(dirname "$0")/.."

rev=${VIGIL_UPGRADE_FROM:-$(git describe --tags --abbrev=0 HEAD^ 2>/dev/null || echo 6f9af1f)}
if [ "${1:-}" != build ]; then
	echo "$rev"
	exit 0
fi

if ! commit=$(git rev-parse --verify --quiet "$rev^{commit}"); then
	echo "hack/previous-release.sh: the previous release $rev is not in this clone (fetch its history, or set VIGIL_UPGRADE_FROM)" >&2
	exit 1
fi
out=$PWD/bin/upgrade/$commit/vigil
if [ ! -x "$out" ]; then
	echo ">> building vigil $rev for test/upgrade (once; kept in bin/upgrade)" >&2
	mkdir -p "$(dirname "$out")"
	src=$(mktemp -d)
	trap 'rm -rf "$src" "$out.tmp.$$"' EXIT
	git archive "$commit" | tar -x -C "$src"
	(cd "$src" && GOWORK=off go build -trimpath -buildvcs=false -o "$out.tmp.$$" ./cmd/vigil)
	mv "$out.tmp.$$" "$out"
fi
echo "$rev $out"
