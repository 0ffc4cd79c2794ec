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
