#!/bin/sh
# The token-economy benchmark of docs/benchmarks.md: every strategy on every
# Claude Code and Pi session of the shared datasets, replayed by
# `ctxstore replay` (docs/replay.md). Writes to $REPLAY_OUT (default
# /tmp/replay-bench): tables.md (the Markdown tables the doc quotes;
# tables-other.md for the small Claude Code fixtures and the SWE-agent
# trajectories),
# chart-N-SESSION.svg (one chart per session: context per call and
# cumulative cost, one line per strategy) and, with REPLAY_JSON=1, all.json
# (every call of every strategy); faults.md (the fault rule's figures per
# strategy and session, docs/replay.md "Faults") from faults/NAME.json (one
# `replay --json --per-call` per session, run one at a time; needs jq).
# Build output, never committed.
#
#   make replay-bench                      # or: ./scripts/replay-bench.sh
#   REPLAY_STRATEGIES=naive,ctxstore_stream make replay-bench
#   REPLAY_CACHE_MODEL=anthropic make replay-bench   # the model on every harness
#   REPLAY_WARM=idle make replay-bench     # the harness warms the cache (replay --warm)
#   REPLAY_CC_PROXY=running make replay-bench   # Claude Code through ctxstore's proxy
#                                          # (replay --claude-code-proxy; running is the proxy's default)
#   REPLAY_FAULTS=only make replay-bench   # only faults.md (a few minutes); =0 skips it
set -eu
GO=${GO:-go}
OUT=${REPLAY_OUT:-/tmp/replay-bench}
CACHE_MODEL=${REPLAY_CACHE_MODEL:-auto}
WARM=${REPLAY_WARM:-off}
PROXY=${REPLAY_CC_PROXY:-}
DEFAULT_STRATEGIES=naive,naive_capped,clear_tool_uses,clear_tool_uses_20k,recorded,ctxstore_stream,ctxstore_stream_bare_head,ctxstore_literal
# Through the proxy (the harness run), Claude Code's managed mode too: what
# `ctxstore claude-code run` sends, through the proxy's own code (the Pi
# sessions decline it).
if [ -n "$PROXY" ]; then DEFAULT_STRATEGIES=$DEFAULT_STRATEGIES,claude_code_managed; fi
STRATEGIES=${REPLAY_STRATEGIES:-$DEFAULT_STRATEGIES}
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
FAULTS=${REPLAY_FAULTS:-1}
# The fault figures' strategies: every one with a known context (recorded's
# is not known, so it has no faults) but the literal layout, whose faults
# are the stream's and whose replay is most of the run's time.
FAULT_STRATEGIES=${REPLAY_FAULT_STRATEGIES:-naive,naive_capped,clear_tool_uses,clear_tool_uses_20k,ctxstore_stream,ctxstore_stream_bare_head}
mkdir -p "$OUT"
$GO build -o "$OUT/ctxstore" ./cmd/ctxstore

# faults FILE...: replays each session alone with --json --per-call into
# $OUT/faults/NAME.json, then writes $OUT/faults.md: per session and per
# strategy, faults per 100 calls and the share of calls with a fault
# ("a / b%"), then the sums of the long sessions, of the short ones and of
# all (faults over calls of the sessions together).
faults() {
	if ! command -v jq >/dev/null; then
		echo "replay-bench: the fault figures need jq" >&2
		exit 1
	fi
	mkdir -p "$OUT/faults"
	for f in "$@"; do
		[ -e "$f" ] || continue
		n=$(basename "$f"); n=${n%.*}
		"$OUT/ctxstore" replay --json --per-call --cache-model "$CACHE_MODEL" --warm "$WARM" ${PROXY:+--claude-code-proxy "$PROXY"} --strategies "$FAULT_STRATEGIES" "$f" >"$OUT/faults/$n.json" 2>"$OUT/faults/$n.log"
	done
	# One line per session and strategy: group, session, strategy, calls,
	# faults, calls with a fault, page-ins.
	for f in "$@"; do
		[ -e "$f" ] || continue
		n=$(basename "$f"); n=${n%.*}
		case $f in */claude-code/raw/* | */swe-agent/*) g=short ;; *) g=long ;; esac
		jq -r --arg g "$g" --arg n "$n" '.sessions[] | .results[] |
			[$g, $n, .strategy, .totals.calls, .totals.faults, .totals.fault_calls, .totals.page_ins] | @tsv' "$OUT/faults/$n.json"
	done >"$OUT/faults/all.tsv"
	awk -F'\t' -v strategies="$FAULT_STRATEGIES" '
		function cell(c, f, fc) { return c ? sprintf("%.1f / %.1f%%", 100 * f / c, 100 * fc / c) : "-" }
		BEGIN { ns = split(strategies, st, ",") }
		{
			k = $2 SUBSEP $3
			if (!($2 in seen)) { seen[$2] = 1; order[++nr] = $2; group[$2] = $1 }
			calls[k] += $4; f[k] += $5; fc[k] += $6; pi[k] += $7
			for (i = 1; i <= 2; i++) {
				g = (i == 1 ? $1 : "all")
				calls[g, $3] += $4; f[g, $3] += $5; fc[g, $3] += $6; pi[g, $3] += $7
			}
		}
		END {
			printf "| session | calls |"
			for (j = 1; j <= ns; j++) printf " %s |", st[j]
			printf "\n|---|---|"
			for (j = 1; j <= ns; j++) printf "---|"
			printf "\n"
			for (r = 1; r <= nr; r++) {
				s = order[r]
				printf "| %s | %d |", s, calls[s, st[1]]
				for (j = 1; j <= ns; j++) printf " %s |", cell(calls[s, st[j]], f[s, st[j]], fc[s, st[j]])
				printf "\n"
			}
			name["long"] = "**the long sessions**"; name["short"] = "**the short sessions**"; name["all"] = "**all sessions**"
			for (i = 1; i <= 3; i++) {
				g = (i == 1 ? "long" : i == 2 ? "short" : "all")
				if (!((g, st[1]) in calls)) continue
				printf "| %s | %d |", name[g], calls[g, st[1]]
				for (j = 1; j <= ns; j++) printf " **%s** |", cell(calls[g, st[j]], f[g, st[j]], fc[g, st[j]])
				printf "\n"
			}
			printf "\nFaults (calls with a fault) / page-ins, all sessions:"
			for (j = 1; j <= ns; j++) printf "%s %s %d (%d) / %d", (j > 1 ? ";" : ""), st[j], f["all", st[j]], fc["all", st[j]], pi["all", st[j]]
			printf ".\n"
		}
	' "$OUT/faults/all.tsv" >"$OUT/faults.md"
	echo "replay-bench: fault figures in $OUT/faults.md" >&2
}
if [ "$FAULTS" = only ]; then
	faults "$DATA"/claude-code/*.jsonl "$DATA"/pi/*.jsonl "$DATA"/claude-code/raw/*.jsonl "$DATA"/swe-agent/*.traj
	exit 0
fi
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
if [ "$FAULTS" != 0 ]; then
	faults "$DATA"/claude-code/*.jsonl "$DATA"/pi/*.jsonl "$DATA"/claude-code/raw/*.jsonl "$DATA"/swe-agent/*.traj
fi
echo "replay-bench: tables in $OUT/tables.md" >&2
