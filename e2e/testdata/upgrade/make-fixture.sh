#!/usr/bin/env bash
# Makes the upgrade fixtures of e2e/upgrade_test.go: a database written by a
# released paygate (the binary given as $1) with real traffic, on SQLite
# (a database file) and on PostgreSQL (a plain SQL dump of one schema), plus a
# manifest of every request made, its answer, and the answer a replay of it
# gave at the end. Run once per release whose databases must upgrade; the
# output is committed. Traffic goes to 127.0.0.1 only.
#
#   bash e2e/testdata/upgrade/make-fixture.sh /tmp/paygate-old 0620bb3
set -euo pipefail
bin=$1 rel=$2
here=$(cd "$(dirname "$0")" && pwd)
vault_key=$(printf 'paygate-upgrade-fixture-vaultkey' | base64)  # 32 bytes, fixed: the fixture's key
port=18431
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

run_traffic() { # $1 database URL, $2 output manifest
  local db=$1 out=$2 key merchant
  "$bin" merchant create --name "Upgrade Fixture" --json --database-url "$db" >"$work/merchant.json"
  key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["testSecretKey"])' "$work/merchant.json")
  merchant=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["merchantId"])' "$work/merchant.json")
  "$bin" webhook set --merchant "$merchant" --mode test --url http://127.0.0.1:9/hooks --json --database-url "$db" >/dev/null
  "$bin" serve --database-url "$db" --addr 127.0.0.1:$port --vault-key "$vault_key" --recovery-interval 1s \
    --webhook-retry-schedule 1h 2>"$work/serve.log" &
  local pid=$!
  for _ in $(seq 50); do curl -sf http://127.0.0.1:$port/healthz >/dev/null && break; sleep 0.2; done
  python3 "$here/traffic.py" "http://127.0.0.1:$port" "$key" "$merchant" "$out"
  kill -TERM $pid; wait $pid || true
}

run_traffic "sqlite:$work/old.db" "$work/manifest-sqlite.json"
cp "$work/old.db" "$here/$rel.sqlite"
cp "$work/manifest-sqlite.json" "$here/$rel.sqlite.json"

schema=paygate_fixture_$rel
psql -h 127.0.0.1 -U root -d test -qc "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema"
run_traffic "postgres://root@127.0.0.1:5432/test?search_path=$schema" "$work/manifest-postgres.json"
pg_dump -h 127.0.0.1 -U root --schema="$schema" --no-owner --no-privileges --inserts test \
  | grep -v '^\\' >"$here/$rel.postgres.sql"
psql -h 127.0.0.1 -U root -d test -qc "DROP SCHEMA $schema CASCADE"
cp "$work/manifest-postgres.json" "$here/$rel.postgres.json"
echo "$vault_key" >"$here/vault-key"
