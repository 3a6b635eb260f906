# Sourced by the benchmark scripts: start_opencode DIR installs opencode
# (npm opencode-ai, pinned) into DIR, runs `opencode serve` there offline on
# a free loopback port with HOME and the XDG dirs inside DIR, makes a
# session (POST /session), seeds its todo list with the benchmarks' five
# items through opencode's own SQLite database, checks that
# GET /session/<id>/todo serves them, and sets opencode_pid and
# opencode_todos (that URL). wait_quiet waits for the machine to be quiet.
opencode_version=1.18.33
# The benchmarks' list (internal/api/todos_read_bench_test.go, scripts/bench-wrk).
bench_todos='[["read the code","completed"],["write the test","completed"],
  ["fix the bug","in_progress"],["run the suite","pending"],["ship it","pending"]]'

start_opencode() {
  local tmp=$1
  npm install --prefix "$tmp/npm" --no-audit --no-fund --loglevel=error "opencode-ai@$opencode_version"
  local oc=$tmp/npm/node_modules/.bin/opencode
  [[ $("$oc" --version) == "$opencode_version" ]] || { echo "opencode --version is not $opencode_version" >&2; return 1; }
  # opencode sees only the temporary home: no user config, no provider key.
  local home=$tmp/home
  mkdir -p "$home" "$tmp/work"
  (cd "$tmp/work" && exec env HOME="$home" XDG_CONFIG_HOME="$home/.config" \
    XDG_DATA_HOME="$home/.local/share" XDG_CACHE_HOME="$home/.cache" \
    XDG_STATE_HOME="$home/.local/state" OPENCODE_DISABLE_AUTOUPDATE=1 \
    OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_SHARE=1 \
    "$oc" serve --pure --hostname 127.0.0.1 --port 0) >"$tmp/serve.log" 2>&1 &
  opencode_pid=$!
  local url=
  for _ in $(seq 150); do
    kill -0 "$opencode_pid" 2>/dev/null || { echo "opencode serve exited: $(cat "$tmp/serve.log")" >&2; return 1; }
    url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$tmp/serve.log" | head -1 || true)
    [[ -n $url ]] && curl -fsS -o /dev/null "$url/session" 2>/dev/null && break
    url=
    sleep 0.2
  done
  [[ -n $url ]] || { echo "opencode serve did not answer: $(cat "$tmp/serve.log")" >&2; return 1; }
  echo "opencode $opencode_version at $url"
  local id db
  id=$(curl -fsS -X POST -H 'Content-Type: application/json' -d '{}' "$url/session" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
  db=$home/.local/share/opencode/opencode.db
  [[ -f $db ]] || { echo "no database at $db" >&2; return 1; }
  python3 - "$db" "$id" "$bench_todos" <<'PY'
import json, sqlite3, sys, time
db, session, todos = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
now = int(time.time() * 1000)
with sqlite3.connect(db) as c:
    c.executemany(
        "INSERT INTO todo (session_id, content, status, priority, position, time_created, time_updated)"
        " VALUES (?, ?, ?, 'medium', ?, ?, ?)",
        [(session, content, status, i, now, now) for i, (content, status) in enumerate(todos)])
PY
  opencode_todos=$url/session/$id/todo
  curl -fsS "$opencode_todos" | python3 -c '
import json, sys
got = [[t["content"], t["status"]] for t in json.load(sys.stdin)]
want = json.loads(sys.argv[1])
if got != want:
    sys.exit(f"GET {sys.argv[2]} lists {got}, not {want}")' "$bench_todos" "$opencode_todos"
  echo "opencode serves the 5 items at $opencode_todos"
}

# busy prints the share of the last second the machine's CPUs were busy,
# in percent, from /proc/stat.
busy() {
  local a b
  read -ra a < <(head -1 /proc/stat)
  sleep 1
  read -ra b < <(head -1 /proc/stat)
  local total=0 idle=$(( (b[4] + b[5]) - (a[4] + a[5]) ))
  for i in 1 2 3 4 5 6 7 8; do total=$(( total + b[i] - a[i] )); done
  echo $(( total > 0 ? 100 * (total - idle) / total : 0 ))
}

# wait_quiet waits until two seconds in a row are under 10 % busy, or a
# minute has gone: an opencode still starting up would take CPU from the
# first phases of a benchmark.
wait_quiet() {
  local quiet=0 waited
  for waited in $(seq 60); do
    if (( $(busy) < 10 )); then quiet=$((quiet + 1)); else quiet=0; fi
    (( quiet >= 2 )) && break
  done
  if (( quiet >= 2 )); then echo "the machine was quiet after ${waited}s"
  else echo "the machine did not go quiet in a minute; measuring anyway" >&2; fi
}
