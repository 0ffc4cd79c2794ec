package e2e

// Every answer a real Pi run receives from contextd is checked against the
// committed OpenAPI document (openapi.Validator, the check the api tests
// use): the extension's client in test mode (extension/src/answerlog.ts,
// CONTEXTD_E2E_ANSWERS) logs each answer, and the rig checks the log when
// its test ends. An answer that breaks the spec (an array answered as
// null, an undocumented status) fails the test that received it.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"contextd/openapi"
)

var specValidator = sync.OnceValues(openapi.NewValidator)

// answer is one line of the extension's answer log.
type answer struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	Body        string `json:"body"`
}

// loggedAnswers reads the rig's answer log (none when Pi never called).
func (r *rig) loggedAnswers() []answer {
	r.t.Helper()
	f, err := os.Open(r.answers)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	var out []answer
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var a answer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			r.t.Errorf("answer log line: %v: %.200s", err, sc.Bytes())
			continue
		}
		out = append(out, a)
	}
	return out
}

// checkAnswers fails the rig's test for every logged answer that does not
// match the spec. With plainForwards, 200 answers of the Codex routes are
// only checked to be JSON objects (the fake backend's plain answers).
func (r *rig) checkAnswers() {
	r.t.Helper()
	v, err := specValidator()
	if err != nil {
		r.t.Fatalf("openapi: %v", err)
	}
	var bad []string
	answers := r.loggedAnswers()
	for _, a := range answers {
		u, err := url.Parse(a.Path)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s %q: %v", a.Method, a.Path, err))
			continue
		}
		if r.plainForwards && a.Status == http.StatusOK && strings.HasPrefix(u.Path, "/alpha/") {
			var obj map[string]any
			if json.Unmarshal([]byte(a.Body), &obj) != nil {
				bad = append(bad, fmt.Sprintf("%s %s: a forwarded Codex answer that is not a JSON object: %.200s", a.Method, u.Path, a.Body))
			}
			continue
		}
		if err := v.Check(a.Method, u.Path, a.Status, a.ContentType, []byte(a.Body)); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		r.t.Errorf("%d of %d contextd answers Pi received do not match openapi/openapi.yaml:\n%s", len(bad), len(answers), strings.Join(bad, "\n"))
	}
}
