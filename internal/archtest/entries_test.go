package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestTreeEntriesWrittenOnlyBySession: outside package session no Go file
// (tests included) assigns to a field reached through the Refs or Window
// of a value (X.Refs.F = v, X.Window.F++, *X.Window = w). A
// session.Tree's entries are rows of its own that only Tree.Add writes
// (session/entrymem.go; the Go compiler enforces that: the rows are
// unexported), but the Entry values Tree.Entry returns share the tree's
// copies of their Refs and Window, which snapshots of the tree read
// without a lock: a write through them would race with those readers and
// change what the index answers. (The check reads syntax, not types: a
// field named Refs or Window of another type is held to the same rule.)
func TestTreeEntriesWrittenOnlyBySession(t *testing.T) {
	root := "../.."
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "session", ".git", "e2e/node_modules", "extension/node_modules", "bench/out":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		files++
		// shared reports whether e is X.Refs.F or X.Window.F (any depth
		// of fields below), or *X.Refs or *X.Window: memory a tree's
		// entries share.
		var shared func(e ast.Expr) bool
		shared = func(e ast.Expr) bool {
			switch v := e.(type) {
			case *ast.SelectorExpr:
				if s, ok := v.X.(*ast.SelectorExpr); ok && (s.Sel.Name == "Refs" || s.Sel.Name == "Window") {
					return true
				}
				return shared(v.X)
			case *ast.StarExpr:
				if s, ok := v.X.(*ast.SelectorExpr); ok && (s.Sel.Name == "Refs" || s.Sel.Name == "Window") {
					return true
				}
				return shared(v.X)
			case *ast.IndexExpr:
				return shared(v.X)
			case *ast.ParenExpr:
				return shared(v.X)
			}
			return false
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch v := n.(type) {
			case *ast.AssignStmt:
				for _, l := range v.Lhs {
					if shared(l) {
						t.Errorf("%s: assigns through an entry's Refs or Window", rel)
					}
				}
			case *ast.IncDecStmt:
				if shared(v.X) {
					t.Errorf("%s: changes a field through an entry's Refs or Window", rel)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files read: the check would pass vacuously", files)
	}
}
