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
// (tests included) assigns to an element of X.Entries or to a field of
// one, or appends to X.Entries. A session.Tree's Entries live in
// memory the garbage collector does not scan, and the tree keeps
// reachable only what Tree.Add put there (session/entrymem.go): a pointer
// written any other way could be freed while the entry still holds it.
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
		// entriesOf reports whether e is X.Entries[i] or X.Entries[i].F
		// (any depth of fields): an element of an Entries slice. (An
		// assignment to a field named Entries is not flagged: other
		// types have one.)
		var entriesOf func(e ast.Expr, indexed bool) bool
		entriesOf = func(e ast.Expr, indexed bool) bool {
			switch v := e.(type) {
			case *ast.SelectorExpr:
				return v.Sel.Name == "Entries" && indexed || entriesOf(v.X, indexed)
			case *ast.IndexExpr:
				return entriesOf(v.X, true)
			case *ast.ParenExpr:
				return entriesOf(v.X, indexed)
			}
			return false
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch v := n.(type) {
			case *ast.AssignStmt:
				for _, l := range v.Lhs {
					if entriesOf(l, false) {
						t.Errorf("%s: assigns to a tree's Entries (%s)", rel, types(l))
					}
				}
			case *ast.IncDecStmt:
				if entriesOf(v.X, false) {
					t.Errorf("%s: changes a tree's Entries (%s)", rel, types(v.X))
				}
			case *ast.CallExpr:
				if id, ok := v.Fun.(*ast.Ident); ok && id.Name == "append" && len(v.Args) > 0 {
					if s, ok := v.Args[0].(*ast.SelectorExpr); ok && s.Sel.Name == "Entries" {
						t.Errorf("%s: appends to a tree's Entries", rel)
					}
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

// types names an expression's kind for the message.
func types(e ast.Expr) string {
	switch e.(type) {
	case *ast.SelectorExpr:
		return "a field"
	case *ast.IndexExpr:
		return "an element"
	}
	return "an expression"
}
