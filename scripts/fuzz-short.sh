#!/bin/sh
# Runs every fuzz target of the module for a short time each: the CI
# smoke run of the fuzzers (make fuzz-short). FUZZTIME sets the time per
# target (default 5s), FUZZPARALLEL the fuzzing workers (default 2; more
# workers than free cores make the fuzzer crawl).
set -eu
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
FUZZPARALLEL=${FUZZPARALLEL:-2}
status=0
for dir in $(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do
	for target in $(grep -h "^func Fuzz" "$dir"/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/' | sort -u); do
		echo "fuzz-short: $dir $target for $FUZZTIME" >&2
		if ! $GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -parallel "$FUZZPARALLEL" "$dir"; then
			status=1
		fi
	done
done
exit $status
