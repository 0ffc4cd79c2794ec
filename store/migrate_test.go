package store

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"contextd/migrations"
)

// TestMigrationNumbering: migration files are numbered 1, 2, 3… with no
// repeat and no gap. Two files with one number would leave the second
// unapplied on every fresh database (its version is already reached), so
// OpenDB refuses such a set; the embedded sets pass.
func TestMigrationNumbering(t *testing.T) {
	sql := &fstest.MapFile{Data: []byte("CREATE TABLE t%d (x);")}
	for _, tc := range []struct {
		name  string
		files []string
		err   string // "" = opens
	}{
		{"consecutive", []string{"m/0001_a.sql", "m/0002_b.sql"}, ""},
		{"repeat", []string{"m/0001_a.sql", "m/0002_b.sql", "m/0002_c.sql"}, "m/0002_c.sql: number 2, want 3"},
		{"gap", []string{"m/0001_a.sql", "m/0003_b.sql"}, "m/0003_b.sql: number 3, want 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for i, f := range tc.files {
				fsys[f] = &fstest.MapFile{Data: []byte(strings.Replace(string(sql.Data), "%d", string(rune('a'+i)), 1))}
			}
			db, err := OpenDB(t.Context(), filepath.Join(t.TempDir(), "x.db"), fsys, "m")
			if tc.err == "" {
				if err != nil {
					t.Fatalf("OpenDB: %v", err)
				}
				db.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("OpenDB error = %v, want one containing %q", err, tc.err)
			}
		})
	}
	for _, set := range []struct {
		fsys fs.FS
		dir  string
	}{{migrations.Index, "index"}, {migrations.State, "state"}} {
		db, err := OpenDB(t.Context(), filepath.Join(t.TempDir(), set.dir+".db"), set.fsys, set.dir)
		if err != nil {
			t.Fatalf("embedded %s migrations: %v", set.dir, err)
		}
		db.Close()
	}
}
