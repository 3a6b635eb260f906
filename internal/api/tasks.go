package api

import (
	"errors"
	"net/http"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// taskWriteAttempts bounds how often a task tool's change is made again
// when another write moved the list between its read and its write.
const taskWriteAttempts = 4

// taskTool serves one of Claude Code's task tools (projection.TaskTools):
// the reading ones answer from the list, the changing ones write the list
// they make of it; every answer is Claude Code's own text.
func (s *Server) taskTool(tool string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body := bodyOf(r)
		args, err := projection.ParseTaskArgs(tool, body)
		if err != nil {
			toolRejected(w, err)
			return
		}
		switch tool {
		case projection.ToolTaskList:
			// The model is shown the list, as by todo_read.
			todos, err := s.store.TodoRead(r.Context(), idOf(r))
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			toolOK(w, projection.TaskListText(todos.Todos), todos)
		case projection.ToolTaskGet:
			todos, err := s.store.Todos(r.Context(), idOf(r))
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			if res := projection.RunTask(args, todos.Todos, 0); res.NotFound {
				taskNotFound(w)
			} else {
				toolOK(w, res.Text, todos)
			}
		default:
			s.taskWrite(w, r, args, body)
		}
	}
}

// taskWrite makes a TaskCreate's or TaskUpdate's change of the current
// list and writes the new list against the version it was made of; when
// another write came between, it reads and makes the change again.
func (s *Server) taskWrite(w http.ResponseWriter, r *http.Request, args projection.TaskArgs, body []byte) {
	id := idOf(r)
	for attempt := 1; ; attempt++ {
		st, err := s.store.TodoList(r.Context(), id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		res := projection.RunTask(args, st.Items, st.TaskHigh)
		switch {
		case res.NotFound:
			taskNotFound(w)
			return
		case !res.Changed:
			toolOK(w, res.Text, st.Todos(id))
			return
		}
		base := st.Version
		req := store.AppendRequest{Events: []projection.NewEvent{projection.TaskWrite(res.Todos)}, BaseVersion: &base}
		if err := idempotency(r, body, &req); err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := s.commit(r, w, id, req)
		var pe *projection.Error
		switch {
		case err == nil && out.Replayed:
			// The first answer's list is the one stored; its text is the
			// change made of the list before it.
			s.taskReplayed(w, r, args, out)
			return
		case err == nil:
			toolOK(w, res.Text, *out.Todos)
			return
		case errors.As(err, &pe) && pe.Code == projection.CodeConflict && attempt < taskWriteAttempts:
			continue // the list moved on (or the rule holds still: the next read says)
		}
		if !toolRejected(w, taskReworded(err)) {
			s.writeError(w, r, err)
		}
		return
	}
}

// taskReplayed answers a retried change (the same Idempotency-Key and
// body) as it was first answered: the text is the change made of the
// version before the stored one.
func (s *Server) taskReplayed(w http.ResponseWriter, r *http.Request, args projection.TaskArgs, out store.AppendResult) {
	var (
		prev []projection.Item
		v    int64
	)
	if len(out.Events) > 0 {
		v = out.Events[0].Seq
	}
	versions, _, err := s.store.TodoHistory(r.Context(), idOf(r), v, 1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(versions) > 0 {
		prev = versions[0].Todos
	}
	todos, err := s.store.Todos(r.Context(), idOf(r))
	if out.Todos != nil {
		todos, err = *out.Todos, nil
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	toolOK(w, projection.RunTask(args, prev, 0).Text, todos)
}

// taskReworded is a rejection of the list a task tool made, in the task
// tools' terms.
func taskReworded(err error) error {
	var pe *projection.Error
	if errors.As(err, &pe) {
		return projection.TaskReword(pe)
	}
	return err
}

// taskNotFound answers a call that names no task of the list with Claude
// Code's own text; nothing is written.
func taskNotFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, toolResult{IsError: true, Content: projection.TaskNotFound})
}
