#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries (initdb, pg_ctl, postgres) are on
# this machine, installing Debian's `postgresql` package when they are not,
# and prints the directory that holds them. Idempotent: a second run only
# prints. It never starts or configures a system service: the tests run
# their own server in a temporary directory (xtdb/xtdbtest/postgres.go).
set -euo pipefail

find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then
      echo "$d"
    fi
  done | sort -V | tail -n 1
}

bin="$(find_bin)"
if [ -z "$bin" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "ensure-postgres: PostgreSQL is not installed and this is not root; run: sudo apt-get install postgresql" >&2
    exit 1
  fi
  echo "ensure-postgres: installing Debian's postgresql package" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends postgresql >&2; then
    apt-get update -q >&2
    apt-get install -y -q --no-install-recommends postgresql >&2
  fi
  # The package may start a system cluster; the tests do not use it.
  if command -v pg_lsclusters >/dev/null 2>&1; then
    pg_lsclusters -h 2>/dev/null | while read -r ver name _; do
      pg_ctlcluster "$ver" "$name" stop >/dev/null 2>&1 || true
    done
  fi
  bin="$(find_bin)"
fi
if [ -z "$bin" ]; then
  echo "ensure-postgres: no initdb/pg_ctl/postgres under /usr/lib/postgresql/*/bin after installing" >&2
  exit 1
fi
# postgres refuses to run as root: the tests run it as this user.
if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
  useradd --system --home-dir /var/lib/postgresql --shell /bin/sh postgres >&2
fi
echo "$bin"
