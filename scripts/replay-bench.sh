#!/bin/sh
# The token-economy benchmark of docs/benchmarks.md: every strategy on every
# Claude Code and Pi session of the shared datasets, replayed by
# `ctxstore replay` (docs/replay.md). Writes to $REPLAY_OUT (default
# /tmp/replay-bench): tables.md (the Markdown tables the doc quotes;
# tables-other.md for the small Claude Code fixtures and the SWE-agent
# trajectories),
# chart-N-SESSION.svg (one chart per session: context per call and
# cumulative cost, one line per strategy) and, with REPLAY_JSON=1, all.json
# (every call of every strategy). Build output, never committed.
#
#   make replay-bench                      # or: ./scripts/replay-bench.sh
#   REPLAY_STRATEGIES=naive,ctxstore_stream make replay-bench
#   REPLAY_CACHE_MODEL=anthropic make replay-bench   # the model on every harness
#   REPLAY_WARM=idle make replay-bench     # the harness warms the cache (replay --warm)
#   REPLAY_CC_PROXY=running make replay-bench   # Claude Code through ctxstore's proxy
#                                          # (replay --claude-code-proxy; running is the proxy's default)
set -eu
GO=${GO:-go}
OUT=${REPLAY_OUT:-/tmp/replay-bench}
CACHE_MODEL=${REPLAY_CACHE_MODEL:-auto}
WARM=${REPLAY_WARM:-off}
PROXY=${REPLAY_CC_PROXY:-}
STRATEGIES=${REPLAY_STRATEGIES:-naive,naive_capped,clear_tool_uses,clear_tool_uses_20k,recorded,ctxstore_stream,ctxstore_stream_bare_head,ctxstore_literal}
# The datasets: $CTXSTORE_DATASETS, else shared/datasets beside this
# checkout or a directory above it (as internal/datasets finds them).
DATA=${CTXSTORE_DATASETS:-}
if [ -z "$DATA" ]; then
	d=$(pwd)
	while [ "$d" != / ]; do
		if [ -d "$d/../shared/datasets" ]; then DATA="$d/../shared/datasets"; break; fi
		d=$(dirname "$d")
	done
fi
if [ -z "$DATA" ] || [ ! -d "$DATA/claude-code" ]; then
	echo "replay-bench: datasets not found: set CTXSTORE_DATASETS" >&2
	exit 1
fi
mkdir -p "$OUT"
$GO build -o "$OUT/ctxstore" ./cmd/ctxstore
# The other sessions of the datasets (below), as a comma-separated list:
# every run's cache-model check is over every dataset session of a
# harness (--check-also), so both runs decide alike.
OTHER=
for f in "$DATA"/claude-code/raw/*.jsonl "$DATA"/swe-agent/*.traj; do
	if [ -e "$f" ]; then OTHER="${OTHER:+$OTHER,}$f"; fi
done
MAIN=
for f in "$DATA"/claude-code/*.jsonl "$DATA"/pi/*.jsonl; do MAIN="${MAIN:+$MAIN,}$f"; done
set -- "$DATA"/claude-code/*.jsonl "$DATA"/pi/*.jsonl
echo "replay-bench: $# files, strategies $STRATEGIES, cache model $CACHE_MODEL, warming $WARM${PROXY:+, Claude Code through the proxy warming $PROXY}, into $OUT" >&2
"$OUT/ctxstore" replay --markdown --cache-model "$CACHE_MODEL" --warm "$WARM" ${PROXY:+--claude-code-proxy "$PROXY"} ${OTHER:+--check-also "$OTHER"} --chart "$OUT/chart.svg" --strategies "$STRATEGIES" "$@" >"$OUT/tables.md"
if [ "${REPLAY_JSON:-}" = 1 ]; then
	"$OUT/ctxstore" replay --json --per-call --cache-model "$CACHE_MODEL" --warm "$WARM" ${PROXY:+--claude-code-proxy "$PROXY"} --strategies "$STRATEGIES" "$@" >"$OUT/all.json"
fi
# The other sessions of the datasets, in their own tables so that the sums
# above stay those of the eight long sessions: the small Claude Code fixtures
# (claude-code/raw) and the SWE-agent trajectories, which record no usage
# (no calibration, no cache check).
set --
for f in "$DATA"/claude-code/raw/*.jsonl "$DATA"/swe-agent/*.traj; do
	if [ -e "$f" ]; then set -- "$@" "$f"; fi
done
if [ $# -gt 0 ]; then
	echo "replay-bench: $# other sessions" >&2
	"$OUT/ctxstore" replay --markdown --cache-model "$CACHE_MODEL" --warm "$WARM" ${PROXY:+--claude-code-proxy "$PROXY"} --check-also "$MAIN" --strategies "$STRATEGIES" "$@" >"$OUT/tables-other.md"
fi
echo "replay-bench: tables in $OUT/tables.md" >&2
