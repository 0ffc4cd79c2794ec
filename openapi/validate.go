package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// Validator checks answers against the committed OpenAPI 3.1 document
// (YAML) with a JSON Schema 2020-12 validator (santhosh-tekuri/jsonschema;
// OpenAPI 3.1 schemas are 2020-12). The api tests route every request
// through it, and e2e's checkAnswers (answers_test.go) checks every answer real Pi runs
// receive. Safe for concurrent use.
type Validator struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	routes   []route

	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema
	seen    map[string]bool // "METHOD template status" (status as documented: 200, 201, default)
}

// route is one path template and its matcher.
type route struct {
	template string
	re       *regexp.Regexp
}

const specURL = "file:///contextd/openapi.json"

// NewValidator compiles the committed document. Errors: the document does
// not parse (a broken commit).
func NewValidator() (*Validator, error) {
	var y any
	if err := yaml.Unmarshal(YAML, &y); err != nil {
		return nil, err
	}
	j, err := json.Marshal(y)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(specURL, doc); err != nil {
		return nil, err
	}
	v := &Validator{doc: doc.(map[string]any), compiler: c, schemas: map[string]*jsonschema.Schema{}, seen: map[string]bool{}}
	param := regexp.MustCompile(`\\\{[a-z_]+\\\}`)
	for tpl := range v.doc["paths"].(map[string]any) {
		pat := param.ReplaceAllString(regexp.QuoteMeta(tpl), `[^/]+`)
		v.routes = append(v.routes, route{template: tpl, re: regexp.MustCompile("^" + pat + "$")})
	}
	return v, nil
}

// pointerPart escapes one JSON pointer token (RFC 6901).
func pointerPart(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Check validates one answer to method urlPath (the path alone, no query)
// against the document: the status must be documented (or fall under
// default), the Content-Type one of the documented media types and the
// body valid under its schema. Paths the document does not describe
// (/healthz, /metrics, /openapi.*, unknown routes) and methods it has no
// operation for (the router's 405) are not checked. It returns nil or an
// error saying what is wrong.
func (v *Validator) Check(method, urlPath string, status int, contentType string, body []byte) error {
	tpl := ""
	for _, r := range v.routes {
		if r.re.MatchString(urlPath) {
			tpl = r.template
			break
		}
	}
	if tpl == "" {
		return nil
	}
	m := strings.ToLower(method)
	op, ok := v.doc["paths"].(map[string]any)[tpl].(map[string]any)[m].(map[string]any)
	if !ok {
		return nil
	}
	responses := op["responses"].(map[string]any)
	code := strconv.Itoa(status)
	resp, ok := responses[code].(map[string]any)
	if !ok {
		code = "default"
		resp, ok = responses[code].(map[string]any)
	}
	if !ok {
		return fmt.Errorf("%s %s: status %d is not documented", method, tpl, status)
	}
	v.mu.Lock()
	v.seen[method+" "+tpl+" "+code] = true
	v.mu.Unlock()
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if len(body) != 0 {
			return fmt.Errorf("%s %s %d: a body where the spec documents none: %.200s", method, tpl, status, body)
		}
		return nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || content[mt] == nil {
		return fmt.Errorf("%s %s %d: Content-Type %q, documented %v", method, tpl, status, contentType, keys(content))
	}
	ptr := "#/paths/" + pointerPart(tpl) + "/" + m + "/responses/" + code + "/content/" + pointerPart(mt) + "/schema"
	v.mu.Lock()
	sch := v.schemas[ptr]
	if sch == nil {
		sch, err = v.compiler.Compile(specURL + ptr)
		if err != nil {
			v.mu.Unlock()
			return fmt.Errorf("compiling %s: %w", ptr, err)
		}
		v.schemas[ptr] = sch
	}
	v.mu.Unlock()
	val, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s %d: body is not JSON: %w: %.200s", method, tpl, status, err, body)
	}
	if err := sch.Validate(val); err != nil {
		return fmt.Errorf("%s %s %d: the body does not match the spec: %w\nbody: %.1000s", method, tpl, status, err, body)
	}
	return nil
}

// Responses lists every documented response as "METHOD template status"
// (status as the document keys it: 200, 201, default), sorted.
func (v *Validator) Responses() []string {
	var out []string
	for tpl, item := range v.doc["paths"].(map[string]any) {
		for m, op := range item.(map[string]any) {
			for code := range op.(map[string]any)["responses"].(map[string]any) {
				out = append(out, strings.ToUpper(m)+" "+tpl+" "+code)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Seen reports whether Check has checked an answer of response
// ("METHOD template status", as Responses lists them).
func (v *Validator) Seen(response string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.seen[response]
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
