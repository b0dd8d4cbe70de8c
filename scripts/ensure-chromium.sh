#!/usr/bin/env bash
# Makes sure Debian's chromium and chromium-driver are installed, for the
# web inspector's browser tests (server/inspector). Idempotent: does
# nothing when both are there. Prints the chromium binary's path on stdout.
#
# Without root or apt-get it cannot install: it exits 1 with a message
# (the tests then skip outside CI and fail under CI=true).
set -euo pipefail

find_chromium() {
	for b in chromium chromium-browser; do
		if p=$(command -v "$b" 2>/dev/null); then
			echo "$p"
			return 0
		fi
	done
	return 1
}

if p=$(find_chromium) && command -v chromedriver >/dev/null 2>&1; then
	echo "$p"
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-chromium: chromium is not installed and there is no apt-get to install it" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "ensure-chromium: chromium is not installed; installing it needs root (apt-get install chromium chromium-driver)" >&2
	exit 1
fi
echo "ensure-chromium: installing chromium and chromium-driver (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
# a lock file keeps parallel test packages from running apt-get twice
exec 9>/tmp/ctxstore-ensure-chromium.lock
flock 9
if ! { find_chromium >/dev/null && command -v chromedriver >/dev/null; }; then
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-liberation >&2
fi
find_chromium
