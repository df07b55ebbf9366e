#!/usr/bin/env bash
# Runs a command next to a throwaway PostgreSQL cluster:
#   scripts/with-postgres.sh npx vitest run test/integration
# The command sees MEETBOT_TEST_DATABASE_URL, an admin URL to the cluster (the test harness makes
# one database per test server in it). The cluster lives in a temp dir, listens on 127.0.0.1 only
# on a free port, trades durability for speed, and is stopped and removed when the command ends,
# fails or is interrupted. Needs Debian's `postgresql` package; a default cluster it may have
# started on 5432 is neither used nor touched.
set -euo pipefail

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "with-postgres: PostgreSQL is not installed (Debian: apt-get install postgresql)" >&2
  exit 1
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/meetbot-pg.XXXXXX")
as=()
if [ "$(id -u)" = 0 ]; then
  # initdb refuses to run as root: the cluster belongs to the postgres OS user.
  chown postgres: "$dir"
  as=(runuser -u postgres --)
fi
# In the cluster's dir: the postgres user may not be able to read the caller's working directory.
pg() { (cd "$dir" && "${as[@]}" "$@"); }

stop() {
  pg "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

password=$(node -e 'process.stdout.write(require("node:crypto").randomBytes(18).toString("hex"))')
port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); })')
printf '%s\n' "$password" >"$dir/pwfile"
chmod 644 "$dir/pwfile"

pg "$bindir/initdb" -D "$dir/data" -U postgres --pwfile="$dir/pwfile" \
  --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
  { cat "$dir/initdb.log" >&2; exit 1; }
rm -f "$dir/pwfile"

# Durability off (a crash loses nothing we need); many connections (each test server has a pool).
# setsid: the cluster is ours to stop; a Ctrl-C at the terminal reaches the command, not postgres.
options="-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir"
options+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
if ! pg setsid -w "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$options" start >/dev/null; then
  echo "with-postgres: PostgreSQL did not start:" >&2
  cat "$dir/server.log" >&2
  exit 1
fi

export MEETBOT_TEST_DATABASE_URL="postgres://postgres:$password@127.0.0.1:$port/postgres"
"$@"
