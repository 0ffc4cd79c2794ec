package store

import (
	"path/filepath"
	"sync"
	"testing"

	"contextd"
)

// Of 20 concurrent first registrations of one session id exactly one is
// new (PUT answers 201 once, 200 for the rest), and all keep the first
// registration's registered_at.
func TestPutRegistrationConcurrentOneNew(t *testing.T) {
	st, err := OpenState(t.Context(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 20
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
		errs    []error
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, isNew, err := st.PutRegistration(t.Context(), contextd.Registration{SessionID: "s1", SessionFile: "/x/s1.jsonl", Mode: contextd.ModeLocal, AgentName: "/root"})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			if isNew {
				created++
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if created != 1 {
		t.Fatalf("new registrations reported = %d, want 1", created)
	}
	regs, err := st.Registrations(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(regs) != 1 || regs[0].SessionID != "s1" {
		t.Fatalf("registrations = %+v, want the one of s1", regs)
	}
}

// Registration answers from memory once it has read an id (State): its
// absence, then what PutRegistration wrote, equal to what the database
// holds; a change made behind PutRegistration's back is not seen (only a
// new State reads it), which is why PutRegistration must stay the only
// writer of registrations.
func TestRegistrationCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := OpenState(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok, err := st.Registration(t.Context(), "s1"); ok || err != nil {
		t.Fatalf("Registration before any: ok %v err %v, want false, nil", ok, err)
	}
	put, _, err := st.PutRegistration(t.Context(), contextd.Registration{SessionID: "s1", SessionFile: "/x/s1.jsonl", Mode: contextd.ModeLocal, AgentName: "/root", PiVersion: "1.6.0"})
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := st.Registration(t.Context(), "s1")
	if !ok || err != nil || got != put {
		t.Fatalf("Registration after PutRegistration = %+v %v %v, want %+v", got, ok, err, put)
	}
	st2, err := OpenState(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if fromDB, ok, err := st2.Registration(t.Context(), "s1"); !ok || err != nil || fromDB != put {
		t.Fatalf("the database holds %+v (%v, %v), the cache %+v", fromDB, ok, err, put)
	}
	if _, err := st.DB.Writer.ExecContext(t.Context(), `UPDATE registrations SET mode='tree' WHERE session_id='s1'`); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := st.Registration(t.Context(), "s1"); got.Mode != contextd.ModeLocal {
		t.Errorf("cached mode = %s, want local (read from memory)", got.Mode)
	}
	st3, err := OpenState(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st3.Close()
	if got, _, _ := st3.Registration(t.Context(), "s1"); got.Mode != contextd.ModeTree {
		t.Errorf("a new State reads mode %s, want tree", got.Mode)
	}
	// A re-registration replaces the cached one.
	put2, isNew, err := st.PutRegistration(t.Context(), contextd.Registration{SessionID: "s1", SessionFile: "/x/s1.jsonl", Mode: contextd.ModeRemote, AgentName: "/root", PiVersion: "1.6.0"})
	if err != nil || isNew {
		t.Fatalf("re-registration: new %v err %v", isNew, err)
	}
	if got, _, _ := st.Registration(t.Context(), "s1"); got != put2 || got.Mode != contextd.ModeRemote || !got.RegisteredAt.Equal(put.RegisteredAt) {
		t.Errorf("after re-registration = %+v, want %+v (mode remote, registered_at kept)", got, put2)
	}
}
