#!/usr/bin/env bash
# The PostgreSQL leg of `npm test`: the same suite, on PostgreSQL. Where no PostgreSQL can
# be found it says so loudly and, on CI (CI=true) or with PARLEY_REQUIRE_POSTGRES=1, fails.
set -uo pipefail
url=$(bash "$(dirname "$0")/ensure-postgres.sh")
status=$?
if [ $status -ne 0 ] || [ -z "$url" ]; then
  echo "!! PostgreSQL leg NOT RUN: no PostgreSQL found (apt-get install postgresql, or set PARLEY_TEST_DATABASE_URL)" >&2
  if [ "${CI:-}" = "true" ] || [ "${PARLEY_REQUIRE_POSTGRES:-}" = "1" ]; then exit 1; fi
  exit 0
fi
PARLEY_TEST_DATABASE_URL="$url" PARLEY_TEST_ENGINE=postgres exec npx vitest run "$@"
