#!/bin/sh
# Fails when the ctxstore binary contains a function no call path from
# main reaches (golang.org/x/tools/cmd/deadcode: functions only tests call
# count as dead). A function may stay only when it is listed in ALLOW
# below with the reason; keep the list short: delete a dead function, or
# move a test helper into a _test.go file, instead.
#
# DEADCODE is the tool's module path and version (the Makefile pins it;
# go run fetches it through the module proxy on first use).
set -eu
GO=${GO:-go}
DEADCODE=${DEADCODE:-golang.org/x/tools/cmd/deadcode@v0.53.0}

# package-path.Function or package-path.Type.Method, one a line; lines
# starting with # say why the entries below them stay (no single quotes:
# the list is one single-quoted string).
ALLOW='
# The op constructors of the store contract for valid-time ranges,
# beside Put, PutAt and Delete; the contract suite (store/storetest) and
# the tests of the backends write with them; the CLI builds its ops from
# flags.
github.com/ctxstore/ctxstore/store.PutRange
github.com/ctxstore/ctxstore/store.DeleteRange
# The read side of the sync cursor (source tx -> target tx, what XTDB
# cannot keep itself); the version log tests check every import with it.
github.com/ctxstore/ctxstore/sync/versionlog.Mappings
# Kills the XTDB node as a crash would; the crash and outage tests in
# tests/ use it on nodes the binary started.
github.com/ctxstore/ctxstore/xtdb/xtdbserver.Server.Kill
# What the server keeps of the deltas of a Pi session; the retention
# test of httpapi checks with them that it keeps counts and digests, not
# messages.
github.com/ctxstore/ctxstore/server/delta.Log.Len
github.com/ctxstore/ctxstore/server/delta.Answer.Len
github.com/ctxstore/ctxstore/server/delta.Answer.Digests
# The session id of opencode rows as the codec keeps them; the codec and
# importer tests find the restored session with it.
github.com/ctxstore/ctxstore/harness/opencode.SessionOf
'

out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$GO" run "$DEADCODE" -f '{{range .Funcs}}{{$.Path}}.{{.Name}} {{.Position}}{{"\n"}}{{end}}' ./cmd/ctxstore >"$out"
status=0
while read -r name pos; do
	[ -n "$name" ] || continue
	if printf '%s\n' "$ALLOW" | grep -qxF "$name"; then
		continue
	fi
	echo "$pos: unreachable func: $name"
	status=1
done <"$out"
if [ "$status" != 0 ]; then
	echo "deadcode: the functions above are not reachable from cmd/ctxstore's main; delete them (or, with a reason, list them in scripts/deadcode.sh)" >&2
fi
exit "$status"
