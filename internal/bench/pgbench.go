package bench

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

// script is one todo_write as raw SQL; see the file for how it follows the store.
//
//go:embed todo_write.pgbench
var script []byte

// pgbench runs the script against sessions of its own in the run's schema,
// with as many clients as the Tack phase and each client on its own sessions.
type pgbench struct {
	db   *database
	dir  string
	span time.Duration
	args []string
	env  []string
	path string
}

func newPgbench(ctx context.Context, db *database, cfg WriteConfig) (*pgbench, error) {
	if err := db.setupPgbenchSessions(ctx, cfg.Sessions); err != nil {
		return nil, fmt.Errorf("pgbench sessions: %w", err)
	}
	dir, err := os.MkdirTemp("", "tackbench")
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "todo_write.pgbench")
	if err := os.WriteFile(file, script, 0o644); err != nil {
		return nil, err
	}
	data, items, changes := storedTodoWrite(todoList(1))
	return &pgbench{
		db:   db,
		span: cfg.Duration,
		dir:  dir,
		path: cfg.Pgbench,
		env:  append(os.Environ(), "PGOPTIONS="+db.pgOptions(), "PGAPPNAME="+db.pgbenchApp()),
		args: []string{
			"-n",             // no vacuum of pgbench's own tables: there are none
			"-M", "prepared", // pgx prepares and caches every statement too
			"-c", strconv.Itoa(cfg.Clients),
			"-j", strconv.Itoa(cfg.Threads),
			"-T", strconv.Itoa(int(cfg.Duration / time.Second)),
			"-f", file,
			"-D", "clients=" + strconv.Itoa(cfg.Clients),
			"-D", "per_client=" + strconv.Itoa(cfg.Sessions/cfg.Clients),
			"-D", "todo_data=" + string(data),
			"-D", "todo_items=" + string(items),
			"-D", "todo_changes=" + string(changes),
			db.url,
		},
	}, nil
}

// storedTodoWrite is what the store writes for one todo_write of todos: the
// event's data, the projection's items and the changes of the list's version,
// made by the projection itself.
func storedTodoWrite(todos []projection.TodoInput) (data, items, changes []byte) {
	args, _ := json.Marshal(map[string]any{"todos": todos})
	ev, _, err := projection.ParseTodoWriteArgs(args)
	if err != nil {
		panic(err)
	}
	st := projection.State{LastSeq: 1, Turn: projection.Turn{Number: 1, Open: true}}
	stored, err := st.Apply(ev, projection.NewTime(time.Now()), projection.Config{}, nil)
	if err != nil {
		panic(err)
	}
	items, _ = json.Marshal(st.Todos("pgb").Todos)
	changes, _ = json.Marshal(st.VersionOf(nil, stored).Changes)
	return stored.Data, items, changes
}

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

func (p *pgbench) run(ctx context.Context) (result, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, p.path, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	// pgbench's backends exit with it, so their CPU is read while they run:
	// from a second in, when all have connected, to a second before the end.
	var usage cpuUsage
	var act activity
	var tls string
	if sleep(ctx, time.Second) == nil {
		backends := p.db.backends(ctx, p.db.pgbenchApp())
		tls = p.db.tlsOf(ctx, backends)
		groups := []group{{"pgbench", []int{cmd.Process.Pid}}, backends}
		before := sampleCPU(groups...)
		watch := p.db.watchActivity(ctx, backends.pids)
		err := sleep(ctx, p.span-2*time.Second)
		act = watch()
		if err == nil {
			usage = sampleCPU(groups...).sub(before)
		}
	}
	if err := cmd.Wait(); err != nil {
		return result{}, fmt.Errorf("pgbench: %w\n%s", err, out.Bytes())
	}
	m := tpsLine.FindSubmatch(out.Bytes())
	if m == nil || !bytes.Contains(out.Bytes(), []byte("failed transactions: 0 (")) {
		return result{}, fmt.Errorf("pgbench: unexpected output\n%s", out.Bytes())
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	return result{perSecond: tps, cpu: usage, tls: tls, backends: act}, nil
}

func (p *pgbench) close() { _ = os.RemoveAll(p.dir) }
