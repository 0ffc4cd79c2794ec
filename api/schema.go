package api

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"

	"contextd"
	"contextd/history"
	"contextd/session"
)

// DefaultServerURL is the servers entry of the OpenAPI document: contextd's
// default --addr (cmd/contextd), on plain HTTP (loopback only).
const DefaultServerURL = "http://127.0.0.1:7467"

// RemoteResult is the 200 body of a Codex route in Remote mode: the Codex
// backend's JSON object, forwarded unchanged (docs/codex-contract.md
// "Results and encryption": a result holding encrypted_output is
// ciphertext the client never decrypts; in practice every result is). Other
// members the backend adds pass through as they are.
type RemoteResult struct {
	_               struct{} `additionalProperties:"true"`
	EncryptedOutput string   `json:"encrypted_output" doc:"Remote mode: the Codex backend's encrypted result, opaque to contextd and to the client (the model reads it)."`
}

// Roles of the documents' role fields, taken from the code that produces
// them (so the enum cannot drift from what contextd answers).
var (
	// itemRoles: history.Render's roles of history items (docs/codex-contract.md "Local history"
	// "Normalized rendering"); system is never produced.
	itemRoles = []any{history.RoleUser, history.RoleAssistant, history.RoleTool, history.RoleDeveloper}
	// filterRoles: the Codex role filter (docs/codex-contract.md "Tool surface" table:
	// user|assistant|tool|system|developer|null), plus "" which means no
	// filter (docs/codex-contract.md "Local history" "Filters").
	filterRoles = []any{history.RoleUser, history.RoleAssistant, history.RoleTool, history.RoleSystem, history.RoleDeveloper, "", nil}
	// contextRoles: session.ContextRoles, Pi's context message roles (see
	// there for where in Pi each comes from), plus session.RoleUnknown.
	contextRoles = func() []any {
		out := []any{}
		for _, r := range session.ContextRoles {
			out = append(out, r)
		}
		return append(out, session.RoleUnknown)
	}()
)

// arrayNullable is set once, before the first API is built: result arrays
// are never null (every handler answers [] for none), so huma must not
// document them as [array, null]. huma reads the package variable while it
// builds schemas; the Once orders that write before every read.
var arrayNullable sync.Once

func setArrayNullable() {
	arrayNullable.Do(func() { huma.DefaultArrayNullable = false })
}

// finishSpec completes the document huma derived from the Go types with
// what struct tags cannot say. It panics when a schema or property it
// names is missing (a renamed type), so a stale name fails every test that
// builds a Server.
//
//   - servers: DefaultServerURL;
//   - nullable objects: a pointer-to-struct field without omitempty is
//     answered null when unset, e.g. HistoryReadResult.item and
//     NotesReadResult.file when nothing matches (docs/codex-contract.md "Local history", "Local notes"):
//     written as anyOf [$ref, {type: null}] (huma refuses nullable on
//     struct fields);
//   - the second success status of register-session (201 new, 200
//     updated) and rollover-create (201 new, 200 joined);
//   - role enums (itemRoles, filterRoles, contextRoles), and the four
//     modes on every field of type contextd.Mode;
//   - the Codex routes' request body is application/json only (their
//     handlers keep the raw bytes too, to forward them unchanged in Remote
//     mode, which huma would advertise as application/octet-stream; any
//     other media type gets 415 from checkBody);
//   - the Codex routes' 200 body is anyOf [the local result, RemoteResult].
func finishSpec(o *huma.OpenAPI) {
	o.Servers = []*huma.Server{{URL: DefaultServerURL, Description: "contextd on its default address (--addr 127.0.0.1:7467); the extension reads the actual URL from <state-dir>/contextd.json."}}
	reg := o.Components.Schemas
	nullablePointers(reg)
	modeEnums(reg)
	alsoStatus(o, "register-session", http.StatusCreated, "The session was registered (200: its registration was updated).")
	alsoStatus(o, "rollover-create", http.StatusOK, "The same leaf joined the pending rollover (201: a new one was recorded).")
	setEnum(reg, "HistoryItemPreview", "role", itemRoles)
	setEnum(reg, "HistoryItemBody", "role", itemRoles)
	setEnum(reg, "ListItemsBody", "role", filterRoles)
	setEnum(reg, "HistorySearchBody", "role", filterRoles)
	setEnum(reg, "CoordinatorBranchEntry", "role", contextRoles)

	remote := reg.Schema(reflect.TypeOf(RemoteResult{}), true, "RemoteResult")
	for p, item := range o.Paths {
		if !strings.HasPrefix(p, "/alpha/") {
			continue
		}
		op := item.Post
		if op == nil || op.RequestBody == nil {
			panic(fmt.Sprintf("api: Codex route %s has no POST body", p))
		}
		if _, ok := op.RequestBody.Content["application/json"]; !ok {
			panic(fmt.Sprintf("api: Codex route %s has no application/json body", p))
		}
		delete(op.RequestBody.Content, "application/octet-stream")
		mt := op.Responses[fmt.Sprint(http.StatusOK)].Content["application/json"]
		mt.Schema = &huma.Schema{AnyOf: []*huma.Schema{mt.Schema, remote},
			Description: "Local and Tree mode: the Codex-shaped result. Remote mode: the Codex backend's JSON object unchanged ({\"encrypted_output\": …})."}
	}
}

// property returns schema name's property prop, panicking when either is
// missing.
func property(reg huma.Registry, name, prop string) (*huma.Schema, *huma.Schema) {
	s := reg.Map()[name]
	if s == nil || s.Properties[prop] == nil {
		panic(fmt.Sprintf("api: finishSpec: schema %s has no property %q", name, prop))
	}
	return s, s.Properties[prop]
}

// nullablePointers applies nullableObject to every property of a
// registered struct whose field is a pointer to a struct and has no
// omitempty: encoding/json writes null for it when nil.
func nullablePointers(reg huma.Registry) {
	for name, s := range reg.Map() {
		t := reg.TypeFromRef("#/components/schemas/" + name)
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct || s.Properties == nil {
			continue
		}
		for _, f := range reflect.VisibleFields(t) {
			if !f.IsExported() || f.Anonymous || f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
				continue
			}
			tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "-" || strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,") {
				continue
			}
			if tag == "" {
				tag = f.Name
			}
			if p := s.Properties[tag]; p != nil && p.Ref != "" {
				nullableObject(reg, name, tag)
			}
		}
	}
}

// modeEnums sets the enum of every property whose field has type
// contextd.Mode (contextd.ParseMode accepts exactly these).
func modeEnums(reg huma.Registry) {
	modes := []any{contextd.ModeOff, contextd.ModeLocal, contextd.ModeTree, contextd.ModeRemote}
	for name, s := range reg.Map() {
		t := reg.TypeFromRef("#/components/schemas/" + name)
		if t == nil || t.Kind() != reflect.Struct {
			continue
		}
		for _, f := range reflect.VisibleFields(t) {
			if !f.IsExported() || f.Type != reflect.TypeOf(contextd.Mode("")) {
				continue
			}
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if p := s.Properties[tag]; p != nil && p.Type == huma.TypeString && p.Enum == nil {
				setEnum(reg, name, tag, modes)
			}
		}
	}
}

// alsoStatus documents a second success status of operation id with the
// same body as its default status.
func alsoStatus(o *huma.OpenAPI, id string, status int, desc string) {
	for _, item := range o.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Put, item.Post} {
			if op == nil || op.OperationID != id {
				continue
			}
			def := op.Responses[fmt.Sprint(op.DefaultStatus)]
			if def == nil {
				panic(fmt.Sprintf("api: finishSpec: %s has no %d response", id, op.DefaultStatus))
			}
			r := *def
			r.Description = desc
			op.Responses[fmt.Sprint(status)] = &r
			return
		}
	}
	panic(fmt.Sprintf("api: finishSpec: no operation %s", id))
}

// nullableObject rewrites an object-valued property (a $ref) as
// anyOf [$ref, {type: null}], keeping its description.
func nullableObject(reg huma.Registry, name, prop string) {
	s, p := property(reg, name, prop)
	if p.Ref == "" {
		panic(fmt.Sprintf("api: finishSpec: %s.%s is not a $ref", name, prop))
	}
	s.Properties[prop] = &huma.Schema{Description: p.Description, AnyOf: []*huma.Schema{{Ref: p.Ref}, {Type: "null"}}}
}

// setEnum sets a string property's enum (a nil value allows null) and
// refreshes huma's validation messages: request bodies are validated
// against it too.
func setEnum(reg huma.Registry, name, prop string, values []any) {
	_, p := property(reg, name, prop)
	if p.Type != huma.TypeString {
		panic(fmt.Sprintf("api: finishSpec: %s.%s is not a string", name, prop))
	}
	p.Enum = values
	p.PrecomputeMessages()
}

// exportedName turns an operation id into a type name: list-sessions →
// ListSessions, history-read_item → HistoryReadItem.
func exportedName(id string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(id, func(r rune) bool { return r == '-' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}
