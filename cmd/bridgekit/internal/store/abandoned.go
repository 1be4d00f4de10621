package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// writer names the process that writes a session: enough for another
// process on the same machine to tell whether it still runs. A PID is
// only compared within the PID namespace and boot it was taken in, and
// with the process's start time, so that a PID used again is not taken
// for the writer.
type writer struct {
	Host  string `json:"host"`
	Boot  string `json:"boot,omitempty"`
	PIDNS string `json:"pidns,omitempty"`
	PID   int    `json:"pid"`
	Start string `json:"start,omitempty"` // /proc/PID/stat's starttime
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procStart returns the start time of process pid (in clock ticks since
// boot), "" when there is no such process or no /proc.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22
}

func here() writer {
	host, _ := os.Hostname()
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return writer{Host: host, Boot: readTrim("/proc/sys/kernel/random/boot_id"), PIDNS: ns}
}

// self is this process, as the writer of the sessions it stores.
var self = sync.OnceValue(func() string {
	w := here()
	w.PID = os.Getpid()
	w.Start = procStart(w.PID)
	b, _ := json.Marshal(w)
	return string(b)
})

// gone reports whether the writer w of a session is known to have
// stopped. A writer on another machine or in another PID namespace cannot
// be told, and is taken to run; a session with no writer (written before
// schema version 2) has none running.
func gone(w string) bool {
	if w == "" {
		return true
	}
	var x writer
	if json.Unmarshal([]byte(w), &x) != nil || x.PID <= 0 {
		return true
	}
	me := here()
	if x.Host != me.Host {
		return false
	}
	if x.Boot != "" && me.Boot != "" && x.Boot != me.Boot {
		return true // the machine has restarted since
	}
	if x.PIDNS != me.PIDNS {
		return false
	}
	if x.Start != "" {
		return procStart(x.PID) != x.Start
	}
	return errors.Is(syscall.Kill(x.PID, 0), syscall.ESRCH)
}

// endAbandoned ends the sessions whose writer died before ending them:
// each gets an end record marked unclean, at the time of its last record,
// that lists the requests its frames leave unanswered. Of two processes
// opening the store at once, one ends each such session.
func (s *DB) endAbandoned(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT id, writer, family FROM sessions WHERE ended IS NULL`)
	if err != nil {
		return err
	}
	type open struct{ id, writer, family string }
	var live []open
	for rows.Next() {
		var o open
		if err := rows.Scan(&o.id, &o.writer, &o.family); err != nil {
			rows.Close()
			return err
		}
		live = append(live, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, o := range live {
		if !gone(o.writer) {
			continue
		}
		recs, err := s.Records(ctx, o.id, 0, 0)
		if err != nil {
			return err
		}
		if err := s.endUnclean(ctx, o.id, frames.Family(o.family), recs); err != nil {
			return fmt.Errorf("session %s: %w", o.id, err)
		}
	}
	return nil
}

func (s *DB) endUnclean(ctx context.Context, id string, family frames.Family, recs []*tracelog.Record) error {
	cls := frames.New(family)
	end := &tracelog.Record{Type: tracelog.TypeEnd, Session: id, Seq: 1, Unclean: true}
	for _, r := range recs {
		if r.Type == tracelog.TypeFrame {
			cls.Classify(r.Seq, r.Dir, r.Time, r.Line(), r.Truncated)
		}
		end.Seq, end.Time = r.Seq+1, r.Time
	}
	if end.Time.IsZero() {
		end.Time = time.Now().UTC()
	}
	end.Family, end.Unanswered = cls.Family(), cls.Unanswered()
	for _, p := range end.Unanswered {
		end.Problems = append(end.Problems, frames.Problem{Code: frames.ProblemUnanswered,
			Message: fmt.Sprintf("%s request %s (frame %d) was never answered: the session's writer died", p.Method, p.ID, p.Seq)})
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Claim the session first: a write takes the database's lock, so a
	// second process ending it at once finds it ended and leaves it.
	res, err := tx.ExecContext(ctx, `UPDATE sessions SET ended = ? WHERE id = ? AND ended IS NULL`, end.Time.Format(time.RFC3339Nano), id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	if err := put(ctx, tx, []*tracelog.Record{end}); err != nil {
		return err
	}
	return tx.Commit()
}
