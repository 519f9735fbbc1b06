#!/usr/bin/env bash
# Makes a PostgreSQL server available for the test suite's PostgreSQL leg and prints its
# admin URL (a role that may create databases: each test file gets its own database).
#
# - PARLEY_TEST_DATABASE_URL set: used as it is.
# - else, Debian's packaged cluster (apt-get install postgresql): started if down, and a
#   `parley` role created. Needs root or the postgres user, as on CI and dev machines here.
# - else: exits 3 (no PostgreSQL here).
set -euo pipefail
if [ -n "${PARLEY_TEST_DATABASE_URL:-}" ]; then
  echo "$PARLEY_TEST_DATABASE_URL"
  exit 0
fi
if ! command -v pg_lsclusters >/dev/null 2>&1; then
  exit 3
fi
cluster=$(pg_lsclusters --no-header | awk 'NR==1 {print $1" "$2" "$3" "$4}')
if [ -z "$cluster" ]; then
  version=$(ls /usr/lib/postgresql | sort -n | tail -1)
  pg_createcluster "$version" main >&2
  cluster=$(pg_lsclusters --no-header | awk 'NR==1 {print $1" "$2" "$3" "$4}')
fi
read -r version name port status <<<"$cluster"
if [ "$status" != "online" ]; then
  pg_ctlcluster "$version" "$name" start >&2
fi
as_postgres() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }
for _ in $(seq 1 30); do
  as_postgres psql -p "$port" -qAtc 'select 1' >/dev/null 2>&1 && break
  sleep 0.5
done
as_postgres psql -p "$port" -qAt -v ON_ERROR_STOP=1 >&2 <<'SQL'
do $$ begin
  if not exists (select from pg_roles where rolname = 'parley') then
    create role parley login createdb password 'parley';
  end if;
end $$;
-- Test databases are dropped WITH (FORCE): that must be able to end an autovacuum worker
-- that happens to be on the database at that moment.
grant pg_signal_backend to parley;
-- The peer's benchmark (docs/benchmarks.md) runs CHECKPOINT between phases.
grant pg_checkpoint to parley;
SQL
if ! as_postgres psql -p "$port" -qAtc "select 1 from pg_database where datname = 'parley'" | grep -q 1; then
  as_postgres createdb -p "$port" -O parley parley >&2
fi
echo "postgres://parley:parley@127.0.0.1:${port}/parley"
