#!/bin/sh
# Regenerates the token-economy figures of docs/benchmarks.md: the blocks
# between "<!-- BEGIN figures:NAME -->" and "<!-- END figures:NAME -->" are
# rewritten from two runs of scripts/replay-bench.sh (docs/replay.md):
#
#   default  every strategy, the harnesses as recorded (no warming);
#   harness  Pi warming while the agent runs, Claude Code through ctxstore's
#            proxy with its defaults (REPLAY_WARM=running REPLAY_CC_PROXY=running).
#
#   make docs-figures                      # or: ./scripts/docs-figures.sh
#   DOCS_FIGURES_DEFAULT=DIR DOCS_FIGURES_HARNESS=DIR ./scripts/docs-figures.sh
#                                          # reuse the tables of earlier runs
#   DOCS_FIGURES_ONLY=faults make docs-figures
#                                          # only the fault figures (block
#                                          # replay-faults; a few minutes)
#
# The fault figures (block replay-faults) are the default run's faults.md
# (scripts/replay-bench.sh: every session replayed alone).
#
# Both runs together take 15-30 minutes on a 2-core machine (the literal
# layout is most of it). The other benchmarks of the page are go test -bench
# runs too long to repeat for a document; each keeps its command and date.
set -eu
GO=${GO:-go}
DOC=${DOCS_FIGURES_DOC:-docs/benchmarks.md}
OUT=${DOCS_FIGURES_OUT:-/tmp/docs-figures}
DEF=${DOCS_FIGURES_DEFAULT:-}
HAR=${DOCS_FIGURES_HARNESS:-}
# The revision the runs measure: HEAD, and whether the tree had changes.
REV=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null | head -1)" ]; then
	REV="$REV plus uncommitted changes"
fi
ONLY=${DOCS_FIGURES_ONLY:-}
# faultsblock DIR STAMP: the replay-faults block from DIR/faults.md.
faultsblock() {
	echo "$2"
	echo
	echo "Each cell: faults per 100 calls / share of calls with a fault."
	echo
	cat "$1/faults.md"
}
# rewrite NAME FILE: replaces the block NAME of $DOC with FILE.
rewrite() {
	if ! grep -q "^<!-- BEGIN figures:$1 -->\$" "$DOC"; then
		echo "docs-figures: $DOC has no block figures:$1" >&2
		exit 1
	fi
	awk -v name="$1" -v body="$2" '
		$0 == "<!-- BEGIN figures:" name " -->" { print; while ((getline l < body) > 0) print l; skip = 1; next }
		$0 == "<!-- END figures:" name " -->" { skip = 0 }
		!skip { print }
	' "$DOC" >"$DOC.new"
	mv "$DOC.new" "$DOC"
}
if [ "$ONLY" = faults ]; then
	DEF=${DEF:-$OUT/faults}
	if [ ! -s "$DEF/faults.md" ]; then
		GO=$GO REPLAY_OUT=$DEF REPLAY_FAULTS=only ./scripts/replay-bench.sh
		echo "$REV" >"$DEF/revision"
	fi
	rev=$(if [ -s "$DEF/revision" ]; then cat "$DEF/revision"; else echo unknown; fi)
	day=$(date -u -r "$DEF/faults.md" +%Y-%m-%d 2>/dev/null || date -u +%Y-%m-%d)
	f=$(mktemp)
	faultsblock "$DEF" "Measured $day at $rev by \`DOCS_FIGURES_ONLY=faults make docs-figures\`." >"$f"
	rewrite replay-faults "$f"
	rm -f "$f"
	echo "docs-figures: the fault figures of $DOC rewritten from $DEF" >&2
	exit 0
fi
if [ -z "$DEF" ]; then
	DEF=$OUT/default
	GO=$GO REPLAY_OUT=$DEF ./scripts/replay-bench.sh
	echo "$REV" >"$DEF/revision"
fi
if [ -z "$HAR" ]; then
	HAR=$OUT/harness
	GO=$GO REPLAY_OUT=$HAR REPLAY_WARM=running REPLAY_CC_PROXY=running REPLAY_FAULTS=0 \
		REPLAY_STRATEGIES=naive,clear_tool_uses,ctxstore_stream,ctxstore_stream_bare_head,claude_code_managed \
		./scripts/replay-bench.sh
	echo "$REV" >"$HAR/revision"
fi
for f in "$DEF/tables.md" "$DEF/tables-other.md" "$HAR/tables.md" "$HAR/tables-other.md"; do
	if [ ! -s "$f" ]; then
		echo "docs-figures: $f missing or empty" >&2
		exit 1
	fi
done
# The stamp names the revision each run measured (written beside its
# tables; "unknown" for tables made otherwise) and the day of the runs.
rev() { if [ -s "$1/revision" ]; then cat "$1/revision"; else echo unknown; fi; }
day=$(date -u -r "$DEF/tables.md" +%Y-%m-%d 2>/dev/null || date -u +%Y-%m-%d)
STAMP="Measured $day at $(rev "$DEF") (no warming) and $(rev "$HAR") (the harnesses' defaults) by \`make docs-figures\`."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# table FILE HEADING: the rows of the first table after the line HEADING,
# as "|"-separated lines without the header and separator rows.
table() {
	awk -v h="$2" '
		$0 == h { on = 1; n = 0; next }
		on && /^\|/ { n++; if (n > 2) print; next }
		on && n > 0 && !/^\|/ { exit }
	' "$1"
}

# header FILE HEADING: the header row of that table.
header() {
	awk -v h="$2" '$0 == h { on = 1; next } on && /^\|/ { print; exit }' "$1"
}

# col HEADER NAME: the awk field number (with -F'|') of column NAME.
col() {
	printf '%s\n' "$1" | awk -F'|' -v name="$2" '{ for (i = 2; i < NF; i++) { c = $i; gsub(/^ +| +$/, "", c); if (c == name) { print i; exit } } }'
}

# strategies FILE: one row per strategy of the "All N sessions" table:
# strategy, cost/naive, cache share, history/naive, calls over the window,
# base-input tokens.
strategies() {
	h=$(awk '/^#### All [0-9]+ sessions$/ { print; exit }' "$1")
	table "$1" "$h" | awk -F'|' '{
		for (i = 2; i < NF; i++) gsub(/^ +| +$/, "", $i)
		printf "%s|%s|%s|%s|%s|%s\n", $2, $8, $5, $10, $14, $7
	}'
}

# persession FILE STRATEGY: "session|cost" for each session of the "Per
# session" table, the first figure of the strategy's cell.
persession() {
	hd=$(header "$1" "#### Per session")
	c=$(col "$hd" "$2")
	table "$1" "#### Per session" | awk -F'|' -v c="$c" '{
		s = $2; gsub(/^ +| +$/, "", s); gsub(/__/, " ", s)
		split($c, v, " / "); x = v[1]; gsub(/ /, "", x)
		printf "%s|%s\n", s, x
	}'
}

# check FILE ROW: "calls|cost error|read-share error|hits" of a row of the
# cache model's check table.
check() {
	table "$1" "#### The cache model against the recorded usage" | awk -F'|' -v r="$2" '{
		s = $2; gsub(/^ +| +$/, "", s)
		if (s != r) next
		for (i = 2; i < NF; i++) gsub(/^ +| +$/, "", $i)
		split($5, c, " / ")
		printf "%s|%s|%s|%s\n", c[1], $8, $9, $10
	}'
}

sessions_line() { # FILE STRATEGY: "a 0.69, b 1.00, ..."
	persession "$1" "$2" | awk -F'|' '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 } END { print "" }'
}

strategy_row() { # FILE NAME: the strategies() row of one strategy
	strategies "$1" | awk -F'|' -v n="$2" '$1 == n || index($1, n " (") == 1'
}

# Block: the defaults of the harnesses.
{
	echo "$STAMP"
	echo
	echo "| strategy | cost / naive, cache share, history / naive |"
	echo "|---|---|"
	strategies "$HAR/tables.md" | awk -F'|' '{
		name = $1
		if (name == "naive") name = "naive (" $6 " base-input tokens)"
		if (name == "ctxstore_stream") name = "ctxstore_stream (managed head)"
		if (index(name, "claude_code_managed") == 1) name = "claude_code_managed (what `ctxstore claude-code run` sends: Claude Code sessions only)"
		if (name == "ctxstore_stream_bare_head") { printf "| **%s** (the Pi extension'"'"'s and OpenClaw plugin'"'"'s default) | **%s / %s / %s** |\n", name, $2, $3, $4; next }
		printf "| %s | %s / %s / %s |\n", name, $2, $3, $4
	}'
	echo
	echo "Per session, bare head: $(sessions_line "$HAR/tables.md" ctxstore_stream_bare_head)."
	if [ -n "$(col "$(header "$HAR/tables.md" "#### Per session")" claude_code_managed)" ]; then
		echo "Per session, Claude Code managed: $(persession "$HAR/tables.md" claude_code_managed |
			awk -F'|' '$2 != "-" { printf "%s%s %s", (n++ ? ", " : ""), $1, $2 } END { print "" }')."
	fi
	b=$(strategy_row "$HAR/tables-other.md" ctxstore_stream_bare_head)
	m=$(strategy_row "$HAR/tables-other.md" ctxstore_stream)
	echo "The 18 short sessions (\`tables-other.md\`): bare head $(echo "$b" | cut -d'|' -f2) of naive,"
	echo "$(echo "$b" | cut -d'|' -f3) cached; managed head $(echo "$m" | cut -d'|' -f2)."
} >"$TMP/replay-harness-defaults"

# Block: every strategy, no warming.
{
	echo "$STAMP"
	echo
	echo "| strategy | cost / naive | cache share | history / naive | calls over the window |"
	echo "|---|---|---|---|---|"
	strategies "$DEF/tables.md" | awk -F'|' '{
		name = $1
		if (name == "naive") name = "naive (" $6 " base-input tokens)"
		else if (name == "naive_capped") name = "naive_capped (naive cut to the window)"
		else if (name == "recorded") name = "recorded (what the harnesses sent)"
		else if (name == "ctxstore_literal") name = "ctxstore_literal (the specification'"'"'s literal order)"
		printf "| %s | %s | %s | %s | %s |\n", name, $2, $3, $4, $5
	}'
	echo
	echo "Per session, bare head: $(sessions_line "$DEF/tables.md" ctxstore_stream_bare_head)."
	b=$(strategy_row "$DEF/tables-other.md" ctxstore_stream_bare_head)
	m=$(strategy_row "$DEF/tables-other.md" ctxstore_stream)
	r=$(strategy_row "$DEF/tables-other.md" recorded)
	echo "The 18 short sessions: bare head $(echo "$b" | cut -d'|' -f2), managed head $(echo "$m" | cut -d'|' -f2),"
	echo "what Claude Code recorded on its five fixtures $(echo "$r" | cut -d'|' -f2) of naive."
} >"$TMP/replay-every-strategy"

# Block: the cache model's check.
{
	echo "$STAMP"
	echo
	echo "| harness | calls compared | cost error | read-share error (points) | hits agreed |"
	echo "|---|---|---|---|---|"
	for h in claude-code pi; do
		check "$DEF/tables.md" "**all $h**" | awk -F'|' -v h="$h" '{ printf "| %s | %s | %s | %s | %s |\n", (h == "pi" ? "Pi" : "Claude Code"), $1, $2, $3, $4 }'
	done
	check "$HAR/tables.md" "**all claude-code**" | awk -F'|' '{ printf "| Claude Code, checked with --warm and --claude-code-proxy | %s | %s | %s | %s |\n", $1, $2, $3, $4 }'
} >"$TMP/replay-cache-check"

# Block: the fault figures (the default run's).
if [ -s "$DEF/faults.md" ]; then
	faultsblock "$DEF" "Measured $day at $(rev "$DEF") by \`make docs-figures\`." >"$TMP/replay-faults"
fi

# Rewrite each block of the document.
cp "$DOC" "$TMP/doc"
for name in replay-harness-defaults replay-every-strategy replay-cache-check replay-faults; do
	if [ ! -e "$TMP/$name" ]; then
		echo "docs-figures: no figures for block $name (kept)" >&2
		continue
	fi
	if ! grep -q "^<!-- BEGIN figures:$name -->\$" "$TMP/doc"; then
		echo "docs-figures: $DOC has no block figures:$name" >&2
		exit 1
	fi
	awk -v name="$name" -v body="$TMP/$name" '
		$0 == "<!-- BEGIN figures:" name " -->" { print; while ((getline l < body) > 0) print l; skip = 1; next }
		$0 == "<!-- END figures:" name " -->" { skip = 0 }
		!skip { print }
	' "$TMP/doc" >"$TMP/doc.new"
	mv "$TMP/doc.new" "$TMP/doc"
done
cp "$TMP/doc" "$DOC"
echo "docs-figures: $DOC rewritten from $DEF and $HAR" >&2
