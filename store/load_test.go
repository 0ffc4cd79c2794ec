package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"contextd/history"
	"contextd/migrations"
)

// TestLoadRowsCancelled: the rows of a session's first load (entries, then
// tool calls) are read under the request's context. A request cancelled
// while rows are read must fail the load (rows.Err): database/sql ends the
// row loop as if the rows were all read, so without the check the session
// was left half loaded until a restart. Deadlines sweep from before the
// query to after it; every call either fails with the context's error or
// returns every row.
func TestLoadRowsCancelled(t *testing.T) {
	ctx := context.Background()
	db, err := OpenDB(ctx, filepath.Join(t.TempDir(), "index.db"), migrations.Index, "index")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 60000
	res, err := db.Writer.ExecContext(ctx, `INSERT INTO sessions(path) VALUES ('/s.jsonl')`)
	if err != nil {
		t.Fatal(err)
	}
	fileID, _ := res.LastInsertId()
	tx, err := db.Writer.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tool_calls(file_id, call_id, name, namespace, action) VALUES (?,?,?,?,?)`, fileID, fmt.Sprint("call-", i), "read", "", ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	cancelled, complete := 0, 0
	for d := 10 * time.Microsecond; d < 5*time.Second && complete == 0; d = d * 5 / 4 {
		calls := map[string]history.Call{}
		cctx, cancel := context.WithTimeout(ctx, d)
		err := loadCalls(cctx, db, fileID, calls)
		cancel()
		switch {
		case err == nil && len(calls) == n:
			complete++
		case err == nil:
			t.Errorf("deadline %v: loadCalls returned %d of %d rows and no error", d, len(calls), n)
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || err.Error() == "interrupted":
			cancelled++
		default:
			t.Fatalf("deadline %v: %v", d, err)
		}
	}
	if cancelled == 0 || complete == 0 {
		t.Errorf("%d cancelled and %d complete loads; the sweep must see both", cancelled, complete)
	}
}
