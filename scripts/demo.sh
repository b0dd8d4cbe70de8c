#!/usr/bin/env bash
# The main job on the embedded SQLite default: write versions of a document
# in valid time, correct the past, and read it back at several bases.
# Usage: scripts/demo.sh [path/to/ctxstore]
set -euo pipefail
bin="${1:-bin/ctxstore}"
store="${CTXSTORE_URL:-.ctxstore/demo.db}"
mkdir -p "$(dirname "$store")"
rm -f "$store" "$store-wal" "$store-shm"
run() { echo "\$ ctxstore $*" >&2; "$bin" --store "$store" "$@"; }
echo '{"xt/id":"note:plan","type":"note","title":"Plan","status":"draft"}' | run put --valid-from 2024-01-01T00:00:00Z -
echo '{"xt/id":"note:plan","type":"note","title":"Plan","status":"final"}' | run put --valid-from 2024-03-01T00:00:00Z -
# A correction: the plan was under review in February (valid time in the past).
echo '{"xt/id":"note:plan","type":"note","title":"Plan","status":"review"}' | run put --valid-from 2024-02-01T00:00:00Z --valid-to 2024-03-01T00:00:00Z -
run get note:plan --valid-time 2024-02-15T00:00:00Z
run get note:plan --valid-time 2024-02-15T00:00:00Z --tx-id 1
run history note:plan --with-corrections --valid-time 9999-01-01T00:00:00Z
run query --where type=note --find title,status --valid-time 2024-01-15T00:00:00Z
run status
