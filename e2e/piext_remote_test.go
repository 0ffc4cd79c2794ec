package e2e

// Remote mode on the Codex transport, end to end: real Pi runs the
// openai-codex provider (pi-ai's Codex Responses transport) against a local
// fake Responses backend that plays the Codex Responses API and records
// every request; contextd forwards history/notes calls to a second local
// fake, the Codex history/notes backend. No network: Pi's openai-codex base
// URL is overridden in the agent's models.json, transport SSE in
// settings.json.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// codexModel is an openai-codex model both Pi versions list.
const codexModel = "openai-codex/gpt-5.6-luna"

// fakeResponses plays the Codex Responses API (POST /codex/responses, SSE)
// from a script of output items per request and records each request body
// (zstd-decoded: pi-ai compresses SSE request bodies). A summarization
// request (Pi's compaction, whose system prompt starts with summaryPrompt)
// is answered "Summary N: …", takes no script step and is recorded apart.
type fakeResponses struct {
	t         *testing.T
	mu        sync.Mutex
	steps     [][]map[string]any
	reqs      []map[string]any
	summaries []map[string]any
	srv       *httptest.Server
}

// summaryPrompt begins Pi's summarization system prompt (compaction/utils.js SUMMARIZATION_SYSTEM_PROMPT, both Pis).
const summaryPrompt = "You are a context summarization assistant"

func newFakeResponses(t *testing.T, steps [][]map[string]any) *fakeResponses {
	f := &fakeResponses{t: t, steps: steps}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/codex/responses" {
			http.Error(w, "fake Codex Responses: only POST /codex/responses", http.StatusNotFound)
			return
		}
		var rd io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "zstd" {
			dec, err := zstd.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			defer dec.Close()
			rd = dec
		}
		var body map[string]any
		if err := json.NewDecoder(rd).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		n := len(f.reqs)
		var items []map[string]any
		if strings.Contains(mustJSON(body), summaryPrompt) {
			f.summaries = append(f.summaries, body)
			items = []map[string]any{textItem(1000+len(f.summaries), fmt.Sprintf("Summary %d: window 1's work.", len(f.summaries)))}
		} else {
			f.reqs = append(f.reqs, body)
			items = []map[string]any{textItem(n, "script exhausted")}
			if n < len(f.steps) {
				items = f.steps[n]
			}
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for i, it := range items {
			if it["type"] == "function_call" {
				it = withIDs(it, n)
			}
			writeSSE(w, map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
		}
		writeSSE(w, map[string]any{"type": "response.completed", "response": map[string]any{
			"id": fmt.Sprintf("resp_%d", n), "status": "completed",
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 10, "total_tokens": 110},
		}})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func writeSSE(w io.Writer, ev map[string]any) {
	b, _ := json.Marshal(ev)
	fmt.Fprintf(w, "data: %s\n\n", b)
}

// withIDs gives a scripted function_call the ids of request n: call_n and fc_n.
func withIDs(it map[string]any, n int) map[string]any {
	out := map[string]any{"id": fmt.Sprintf("fc_%d", n), "call_id": fmt.Sprintf("call_%d", n), "status": "completed"}
	for k, v := range it {
		out[k] = v
	}
	return out
}

// nsCall is a model function_call in a reserved namespace (docs/codex-contract.md "Tool surface" "Calls on
// the wire"); ns "" is a plain function.
func nsCall(ns, name, args string) map[string]any {
	it := map[string]any{"type": "function_call", "name": name, "arguments": args}
	if ns != "" {
		it["namespace"] = ns
	}
	return it
}

func textItem(n int, text string) map[string]any {
	return map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n), "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

func (f *fakeResponses) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.reqs...)
}

// inputItems returns request n's input items of the given type.
func inputItems(req map[string]any, typ string) []map[string]any {
	var out []map[string]any
	items, _ := req["input"].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		if m != nil && m["type"] == typ {
			out = append(out, m)
		}
	}
	return out
}

// itemByCallID returns the input item of type typ for callID.
func itemByCallID(t *testing.T, req map[string]any, typ, callID string) map[string]any {
	t.Helper()
	for _, it := range inputItems(req, typ) {
		if it["call_id"] == callID {
			return it
		}
	}
	t.Fatalf("request has no %s for %s; input: %s", typ, callID, mustJSON(req["input"]))
	return nil
}

// declaredTools returns the tool specs of a request: the top-level tools
// and those declared in input items (Pi 1.6 sends `additional_tools`
// developer items).
func declaredTools(req map[string]any) []any {
	tools, _ := req["tools"].([]any)
	for _, typ := range []string{"additional_tools", "tool_search_output"} {
		for _, it := range inputItems(req, typ) {
			more, _ := it["tools"].([]any)
			tools = append(tools, more...)
		}
	}
	return tools
}

// conversationItems returns the input items of the conversation: user and
// assistant messages, function calls and their outputs (not developer
// items, which carry Pi's system prompt and tool declarations).
func conversationItems(req map[string]any) []map[string]any {
	var out []map[string]any
	items, _ := req["input"].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		if m == nil {
			continue
		}
		if m["role"] == "user" || m["role"] == "assistant" || m["type"] == "function_call" || m["type"] == "function_call_output" {
			out = append(out, m)
		}
	}
	return out
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// extensionNamespaceSpecs is what extension/src/remote.ts declares as the
// history and notes namespace specs, read through Node (type stripping).
func extensionNamespaceSpecs(t *testing.T) []any {
	t.Helper()
	src := filepath.Join(extensionDir(), "src", "remote.ts")
	cmd := exec.Command(NodeBinary(t), "--input-type=module", "-e",
		fmt.Sprintf(`import { HISTORY_SPEC, NOTES_SPEC } from %q; process.stdout.write(JSON.stringify([HISTORY_SPEC, NOTES_SPEC]));`, src))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("read the extension's namespace specs: %v", err)
	}
	var specs []any
	if err := json.Unmarshal(out, &specs); err != nil {
		t.Fatal(err)
	}
	return specs
}

// codexRig is a Remote-mode rig on the openai-codex provider: the agent
// directory holds the Codex login (auth.json), the base URL override
// (models.json) and transport sse (settings.json).
func codexRig(t *testing.T, v piVersion, responsesURL string) *rig {
	r := newRig(t, v, "remote", nil)
	r.model = codexModel
	r.plainForwards = true // newFakeCodex answers plain JSON
	files := map[string]any{
		"auth.json": map[string]any{"openai-codex": map[string]any{"type": "oauth", "access": codexToken(), "refresh": "refresh-e2e",
			"expires": time.Now().Add(24 * time.Hour).UnixMilli(), "accountId": "acct-e2e"}},
		"models.json":   map[string]any{"providers": map[string]any{"openai-codex": map[string]any{"baseUrl": responsesURL}}},
		"settings.json": map[string]any{"transport": "sse"},
	}
	for name, v := range files {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(r.agent, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// TestPiExtensionRemoteCodexTransport (scenario 8 on the Codex transport):
// the provider request declares Codex's reserved namespaces exactly as the
// extension's specs (no flat router tools); the model's namespaced
// function_calls run as contextd forwards to the exact Codex endpoints; the
// encrypted result is replayed as an encrypted_content item (never as
// text); replayed calls keep their namespace; new_context starts the next
// request at the new boundary with the backend's thread hint. With the
// history backend down the tool reports the error and no local data
// reaches the model.
func TestPiExtensionRemoteCodexTransport(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		codex := newFakeCodex(t)
		resp := newFakeResponses(t, [][]map[string]any{
			{nsCall("history", "list_windows", `{"recent_first":true}`)},                   // 0
			{nsCall("notes", "write_file", `{"text":"ENC:remote-note","path":"plan.md"}`)}, // 1
			{nsCall("", "new_context", `{}`)},                                              // 2
			{textItem(3, "forwarded")},                                                     // 3
			{nsCall("history", "search_contents", `{"query":"ENC:needle"}`)},               // 4: backend down
			{textItem(5, "backend down")},                                                  // 5
		})
		r := codexRig(t, v, resp.srv.URL)
		r.startContextd("--codex-base-url", codex.srv.URL)
		p := r.startPi()
		p.prompt("use remote history", 1)
		_, sid, es := r.session()
		reqs := resp.requests()
		if len(reqs) != 4 {
			t.Fatalf("Responses requests = %d, want 4; stderr:\n%s", len(reqs), p.stderr.String())
		}

		// Tools: the namespace specs, exactly the extension's, and no flat router.
		want := extensionNamespaceSpecs(t)
		for i, q := range reqs {
			var ns []any
			names := []string{}
			for _, tl := range declaredTools(q) {
				m := tl.(map[string]any)
				names = append(names, fmt.Sprint(m["name"]))
				if m["type"] == "namespace" {
					ns = append(ns, m)
				}
			}
			if !reflect.DeepEqual(ns, want) {
				t.Errorf("request %d namespace tools:\n got %s\nwant %s", i, mustJSON(ns), mustJSON(want))
			}
			if strings.Count(strings.Join(names, ","), "history") != 1 || strings.Count(strings.Join(names, ","), "notes") != 1 || !strings.Contains(strings.Join(names, ","), "new_context") {
				t.Errorf("request %d tool names %v: want history and notes once (as namespaces) and new_context", i, names)
			}
		}

		// The calls reached the exact Codex endpoints through contextd.
		codex.mu.Lock()
		var calls []codexCall
		hints := 0
		for _, c := range codex.reqs {
			if c.Path == "/alpha/notes/v2/thread_hint" {
				hints++
			} else {
				calls = append(calls, c)
			}
		}
		codex.mu.Unlock()
		if hints != 2 {
			t.Errorf("thread_hint calls = %d, want 2 (window 0 and window 1)", hints)
		}
		if len(calls) != 2 || calls[0].Path != "/alpha/history/v2/list_windows" || calls[1].Path != "/alpha/notes/v2/write_file" {
			t.Fatalf("backend calls = %+v", calls)
		}
		for _, c := range calls {
			ctx, _ := c.Body["context"].(map[string]any)
			if c.Header.Get("Authorization") != "Bearer "+codexToken() || c.Header.Get("ChatGPT-Account-ID") != "acct-e2e" ||
				ctx["session_id"] != sid || ctx["current_agent_name"] != "/root" || c.Body["action"] != nil {
				t.Errorf("%s: authorization %q account %q body %v", c.Path, c.Header.Get("Authorization"), c.Header.Get("ChatGPT-Account-ID"), c.Body)
			}
		}
		codex.mu.Lock()
		for _, c := range codex.reqs {
			want := `{"mode":"tokens","limit":10000}`
			if c.Path == "/alpha/notes/v2/thread_hint" {
				want = `{"mode":"bytes","limit":4000}`
			}
			if got := c.Header.Get("X-Openai-Tool-Output-Truncation-Policy"); got != want {
				t.Errorf("%s: truncation policy %q, want %q", c.Path, got, want)
			}
		}
		codex.mu.Unlock()
		if calls[0].Body["recent_first"] != true || calls[0].Header.Get("X-Openai-Encrypted-Tool-Arguments") != "" {
			t.Errorf("list_windows forwarded as %v %v", calls[0].Header, calls[0].Body)
		}
		if calls[1].Header.Get("X-Openai-Encrypted-Tool-Arguments") != "true" || calls[1].Body["text"] != "ENC:remote-note" || calls[1].Body["path"] != "plan.md" {
			t.Errorf("write_file forwarded as %v %v", calls[1].Header, calls[1].Body)
		}

		// Replays: namespaced calls; plaintext result as its JSON text;
		// the encrypted result as an encrypted_content item.
		fc0 := itemByCallID(t, reqs[1], "function_call", "call_0")
		if fc0["namespace"] != "history" || fc0["name"] != "list_windows" || fc0["arguments"] != `{"recent_first":true}` || fc0["id"] != "fc_0" {
			t.Errorf("replayed list_windows call = %v", fc0)
		}
		if out := itemByCallID(t, reqs[1], "function_call_output", "call_0")["output"]; out != `{"windows":[{"window_id":"remote-window-1","item_count":3}]}` {
			t.Errorf("list_windows output = %v, want the backend's JSON text", out)
		}
		fc1 := itemByCallID(t, reqs[2], "function_call", "call_1")
		if fc1["namespace"] != "notes" || fc1["name"] != "write_file" || fc1["arguments"] != `{"text":"ENC:remote-note","path":"plan.md"}` {
			t.Errorf("replayed write_file call = %v", fc1)
		}
		out1 := itemByCallID(t, reqs[2], "function_call_output", "call_1")["output"]
		if mustJSON(out1) != `[{"encrypted_content":"opaque-remote-result","type":"encrypted_content"}]` {
			t.Errorf("write_file output = %s, want one encrypted_content item", mustJSON(out1))
		}
		for i, q := range reqs {
			s := mustJSON(q["input"])
			if strings.Count(s, "opaque-remote-result") > strings.Count(s, `"encrypted_content":"opaque-remote-result"`) {
				t.Errorf("request %d carries the ciphertext outside an encrypted_content item", i)
			}
			if strings.Contains(s, `\"action\"`) {
				t.Errorf("request %d replays a router call: %s", i, s)
			}
		}
		// Pi's session keeps the router form and the ciphertext only in details.
		for _, e := range es {
			if e.Message != nil && e.Message.Role == "toolResult" && strings.Contains(string(e.Message.Content), "opaque-remote-result") {
				t.Errorf("tool result text holds the ciphertext: %s", e.Message.Content)
			}
		}

		// After new_context the request starts at window 1's boundary with the hint.
		bs := boundaries(es)
		if len(bs) != 2 {
			t.Fatalf("boundaries = %d, want 2", len(bs))
		}
		w0, w1 := windowOf(t, bs[0]), windowOf(t, bs[1])
		if w0.WindowNumber != 0 || w1.WindowNumber != 1 || w1.PreviousWindowID != w0.CurrentWindowID {
			t.Errorf("remote windows %+v %+v", w0, w1)
		}
		conv := conversationItems(reqs[3])
		if s := mustJSON(conv); len(conv) != 1 || conv[0]["role"] != "user" || !strings.Contains(s, "Current context window id: "+w1.CurrentWindowID) ||
			!strings.Contains(s, "- /root/notes/remote.md (1 lines, 7 UTF-8 bytes)") {
			t.Errorf("request after new_context: %d conversation items: %.400s", len(conv), s)
		}

		// Backend down: the tool reports the error, nothing local reaches the model.
		codex.srv.Close()
		p.prompt("again", 2)
		reqs = resp.requests()
		if len(reqs) != 6 {
			t.Fatalf("Responses requests = %d, want 6", len(reqs))
		}
		out4 := itemByCallID(t, reqs[5], "function_call_output", "call_4")["output"]
		if s, _ := out4.(string); !strings.Contains(s, "Unable to perform operation") {
			t.Errorf("backend down: output %v, want the backend error", out4)
		}
		_, _, es = r.session()
		var last pmsg
		for _, e := range es {
			if e.Message != nil && e.Message.Role == "toolResult" {
				last = *e.Message
			}
		}
		if !last.IsError || !strings.Contains(last.text(), "Unable to perform operation") {
			t.Errorf("backend down: tool result error=%v %s", last.IsError, last.text())
		}
		for i, q := range reqs {
			if strings.Contains(mustJSON(q["input"]), `"source":"pi-session"`) {
				t.Errorf("local data reached the model in request %d", i)
			}
		}
		if n := p.notices("error"); len(n) != 0 {
			t.Errorf("UI errors: %q", n)
		}
	})
}
