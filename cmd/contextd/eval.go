package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"contextd"
	"contextd/coordinator"
	"contextd/session"
	"contextd/store"
)

// runEval is `contextd eval FILE`: the recoverability of every archived
// window of the file (coordinator.RecoverabilityOf), computed on a copy
// of the file in a temporary sessions directory with a throwaway index
// and state database. The file itself is only read.
func runEval(ctx context.Context, cmd command, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(cmd, stderr)
	mode := fs.String("mode", "auto", "how to read the file: local, tree, or auto (tree when the file holds a codex-context-tree-archive manifest)")
	asJSON := fs.Bool("json", false, "print the result as JSON instead of a table")
	if err := parseArgs(fs, args, stdout); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("eval takes exactly one session file, got %d arguments; usage: contextd eval [--mode auto|local|tree] FILE.jsonl", fs.NArg())
	}
	content, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	m := contextd.ModeLocal
	switch *mode {
	case "local":
	case "tree":
		m = contextd.ModeTree
	case "auto":
		if bytes.Contains(content, []byte(`"customType":"`+session.CustomTypeTreeArchive+`"`)) {
			m = contextd.ModeTree
		}
	default:
		return fmt.Errorf("--mode %q: use auto, local or tree", *mode)
	}
	dir, err := os.MkdirTemp("", "contextd-eval-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "sessions")
	if err := os.Mkdir(root, 0o700); err != nil {
		return err
	}
	path := filepath.Join(root, "session.jsonl")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		return err
	}
	idx, err := store.OpenIndex(ctx, root, filepath.Join(dir, "index"), store.Options{})
	if err != nil {
		return err
	}
	defer idx.Close()
	st, err := store.OpenState(ctx, filepath.Join(dir, "state.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	svc := coordinator.New(idx, st, contextd.ModeLocal, nil, coordinator.NewMetrics(nil))
	var h struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	first, _, _ := bytes.Cut(content, []byte("\n"))
	if json.Unmarshal(first, &h) != nil || h.Type != "session" || h.ID == "" {
		return fmt.Errorf("eval: %s does not start with a Pi session header line ({\"type\":\"session\",\"id\":…})", fs.Arg(0))
	}
	if _, _, err := svc.Register(ctx, h.ID, coordinator.RegisterRequest{SessionFile: path, Mode: string(m)}); err != nil {
		return err
	}
	r, err := svc.RecoverabilityOf(ctx, h.ID, "")
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(stdout, "%-38s %8s %10s %7s\n", "WINDOW", "DROPPED", "RECOVERED", "SHARE")
	for _, w := range r.Windows {
		fmt.Fprintf(stdout, "%-38s %8d %10d %7s\n", w.WindowID, w.Dropped, w.Recovered, percent(w.Share))
		for _, ms := range w.Misses {
			fmt.Fprintf(stdout, "  miss %s %q: %s\n", ms.Kind, ms.Value, ms.Reason)
		}
	}
	if len(r.Windows) == 0 {
		fmt.Fprintf(stdout, "(no closed windows to evaluate: in %s mode no rollover of this branch closed a window)\n", m)
	}
	fmt.Fprintf(stdout, "%-38s %8d %10d %7s\n", "overall ("+string(m)+")", r.Dropped, r.Recovered, percent(r.Share))
	return nil
}

// percent is share as a percentage with one decimal, n/a for nil (nothing
// was dropped, so there is nothing to recover).
func percent(share *float64) string {
	if share == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100**share)
}
