package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
	select {
	case <-c.exited:
	default:
		t.Fatal("stop returned before the process exited")
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
