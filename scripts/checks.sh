#!/usr/bin/env bash
# The static checks of `npm test` at once: the type check, ESLint and Prettier each keep one
# core busy, so on a machine with two or more they take the time of the slowest, not the
# sum. Each one's output is printed when it ends; any failure fails the whole.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
npx tsc -p tsconfig.check.json >"$out/typecheck" 2>&1 &
typecheck=$!
npx eslint . >"$out/eslint" 2>&1 &
eslint=$!
npx prettier --check . >"$out/prettier" 2>&1 &
prettier=$!
status=0
for name in typecheck eslint prettier; do
  if wait "${!name}"; then
    echo "== $name: ok"
  else
    status=1
    echo "== $name: FAILED"
    cat "$out/$name"
  fi
done
exit $status
