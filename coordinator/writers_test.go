package coordinator

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
)

// TestConcurrentWriters: a session registered from two live Pi processes
// (this test's process and a child) carries one concurrent_writers problem
// naming both pids in GET /v1/sessions/{id} and /context; it goes away when
// the second process ends, and when a process registers another session.
func TestConcurrentWriters(t *testing.T) {
	svc, _ := localService(t, map[string][]byte{"adopt.jsonl": adoptedFile(), "new.jsonl": handLines("new", hUser("hi"))})
	ctx := t.Context()
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	me, other := os.Getpid(), child.Process.Pid
	reg := func(sid, file string, pid int) {
		t.Helper()
		if _, _, err := svc.Register(ctx, sid, RegisterRequest{SessionFile: file, Mode: "local", PID: pid}); err != nil {
			t.Fatal(err)
		}
	}
	problems := func() []SessionProblem {
		t.Helper()
		st, err := svc.SessionStateOf(ctx, "adopt")
		if err != nil {
			t.Fatal(err)
		}
		c, err := svc.Context(ctx, "adopt", ContextRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var fromCtx []SessionProblem
		for _, p := range c.Problems {
			if p.Reason == "concurrent_writers" {
				fromCtx = append(fromCtx, p)
			}
		}
		if !slices.Equal(st.Problems, fromCtx) {
			t.Errorf("GET session problems %+v, /context %+v: want the same", st.Problems, fromCtx)
		}
		return st.Problems
	}
	reg("adopt", "adopt.jsonl", me)
	reg("adopt", "adopt.jsonl", me) // the same Pi again (/reload): one writer
	if p := problems(); len(p) != 0 {
		t.Fatalf("one Pi: %+v", p)
	}
	reg("adopt", "adopt.jsonl", other)
	lo, hi := min(me, other), max(me, other)
	want := []SessionProblem{{Reason: "concurrent_writers", Detail: fmt.Sprintf("2 Pi processes (pid %d, pid %d) have this session open and append to it: each sees only its own branch, "+
		"so windows and notes written in one are not in the other; close all but one, or continue in a copy with /fork", lo, hi)}}
	if p := problems(); !slices.Equal(p, want) {
		t.Errorf("two Pis: %+v, want %+v", p, want)
	}
	if p := svc.WritersProblem("adopt"); p == nil || *p != want[0] {
		t.Errorf("WritersProblem (PUT's answer) = %+v", p)
	}
	// The second Pi exits.
	_ = child.Process.Kill()
	_ = child.Wait()
	if p := problems(); len(p) != 0 {
		t.Errorf("after the second Pi ended: %+v", p)
	}
	// A Pi that moves to another session (/new, /resume) leaves this one.
	child2 := exec.Command("sleep", "60")
	if err := child2.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child2.Process.Kill(); _ = child2.Wait() })
	reg("adopt", "adopt.jsonl", child2.Process.Pid)
	if p := problems(); len(p) != 1 {
		t.Errorf("two Pis again: %+v", p)
	}
	reg("new", "new.jsonl", child2.Process.Pid)
	if p := problems(); len(p) != 0 {
		t.Errorf("after the second Pi switched sessions: %+v", p)
	}
}
