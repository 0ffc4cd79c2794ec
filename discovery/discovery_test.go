package discovery

import (
	"errors"
	"io/fs"
	"os"
	"testing"
)

// TestWriteReadRemove: the file holds exactly the JSON the extension reads
// ({url, pid, version}), mode 0600; Remove leaves a file of another pid.
func TestWriteReadRemove(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read before Write: %v, want ErrNotExist", err)
	}
	in := Info{URL: "http://127.0.0.1:7467", PID: 4242, Version: "devel"}
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"url":"http://127.0.0.1:7467","pid":4242,"version":"devel"}`+"\n"; got != want {
		t.Fatalf("file = %q, want %q", got, want)
	}
	if st, _ := os.Stat(Path(dir)); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", st.Mode().Perm())
	}
	if out, err := Read(dir); err != nil || out != in {
		t.Fatalf("Read = %+v, %v", out, err)
	}
	if err := Remove(dir, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err != nil {
		t.Fatalf("Remove of another pid deleted the file: %v", err)
	}
	if err := Remove(dir, 4242); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after Remove: %v", err)
	}
	if err := Remove(dir, 4242); err != nil {
		t.Fatalf("Remove of a missing file: %v", err)
	}
}
