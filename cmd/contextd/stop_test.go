package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"contextd/discovery"
)

// TestStop: `contextd stop` ends the contextd of a state directory (a
// real serve in a child process), waits until the process has exited and
// the discovery file is gone, and says which; run again, or with a stale
// discovery file, it says none runs and exits 0.
func TestStop(t *testing.T) {
	dir := t.TempDir()
	sessions, state := filepath.Join(dir, "sessions"), filepath.Join(dir, "state")
	c := startChild(t, sessions, state)
	out, _, err := runCLI(t, map[string]string{"CONTEXTD_STATE_DIR": state}, "stop")
	if err != nil {
		t.Fatal(err)
	}
	pid := c.cmd.Process.Pid
	if want := "stopped contextd pid " + strconv.Itoa(pid) + " (" + c.url + ", version "; !strings.HasPrefix(out, want) {
		t.Errorf("stop printed %q, want %q...", out, want)
	}
	// The process has exited when stop returns: it is gone, or a zombie
	// this test's Wait goroutine has not reaped yet (proc(5): state Z).
	// The channel below closes only after that goroutine runs, so it is
	// not the check; it is awaited so waitErr can be read.
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) == 0 || f[0] != "Z" {
			t.Fatalf("stop returned while pid %d still runs: /proc stat %q", pid, stat)
		}
	}
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the exited process was not reaped within 10 s")
	}
	if c.waitErr != nil {
		t.Errorf("contextd exited with %v after SIGTERM, want 0 (graceful shutdown)", c.waitErr)
	}
	if _, err := discovery.Read(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("discovery file after stop: %v", err)
	}

	out, _, err = runCLI(t, nil, "stop", "--state-dir", state)
	if want := "no contextd is running for " + state + " (no " + discovery.Path(state) + ")\n"; err != nil || out != want {
		t.Errorf("second stop: %q, %v; want %q", out, err, want)
	}

	// A crash leaves the file: its URL answers nothing; it is removed.
	if err := discovery.Write(state, discovery.Info{URL: "http://" + closedAddr(t), PID: os.Getpid(), Version: "v0.1.0"}); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCLI(t, nil, "stop", "--state-dir", state)
	if err != nil || !strings.Contains(out, "which does not answer; removed") {
		t.Errorf("stop with a stale file: %q, %v", out, err)
	}
	if _, err := discovery.Read(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale discovery file kept: %v", err)
	}
}
