package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/yaml"
	"github.com/go-chi/chi/v5"
)

// Spec builds the OpenAPI document of every route (no service needed).
func Spec() *huma.OpenAPI {
	s := New(Config{NoAuth: true}, nil, nil)
	return s.api.OpenAPI()
}

// SpecYAML is the OpenAPI 3.1 document as YAML (openapi/openapi.yaml).
func SpecYAML() ([]byte, error) { return Spec().YAML() }

// SpecJSON is the OpenAPI 3.1 document as JSON.
func SpecJSON() ([]byte, error) { return Spec().MarshalJSON() }

// Spec30JSON is the document downgraded to OpenAPI 3.0.3 (Downgrade30),
// for generators that read only 3.0 (oapi-codegen).
func Spec30JSON() ([]byte, error) { return Downgrade30(Spec()) }

// Spec30YAML is Spec30JSON as YAML (openapi/openapi-3.0.yaml).
func Spec30YAML() ([]byte, error) {
	b, err := Spec30JSON()
	if err != nil {
		return nil, err
	}
	return toYAML(b)
}

// Downgrade30 is huma's OpenAPI 3.1 → 3.0.3 downgrade (type arrays with
// "null" → nullable, exclusive bounds as booleans, one example) plus the
// case huma leaves as 3.1: a schema anyOf/oneOf with a {type: null}
// member (finishSpec's nullable objects). 3.0 has no null type, so the
// member is dropped and the schema gets nullable: true; a single remaining
// $ref becomes allOf [$ref] (3.0 ignores siblings of $ref).
func Downgrade30(o *huma.OpenAPI) ([]byte, error) {
	b, err := o.Downgrade()
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	dropNullType(doc)
	return json.Marshal(doc)
}

// dropNullType rewrites every anyOf/oneOf holding {type: "null"} below v.
func dropNullType(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range []string{"anyOf", "oneOf"} {
			list, ok := v[k].([]any)
			if !ok {
				continue
			}
			kept := list[:0:0]
			for _, m := range list {
				if mm, ok := m.(map[string]any); ok && mm["type"] == "null" && len(mm) == 1 {
					continue
				}
				kept = append(kept, m)
			}
			if len(kept) == len(list) {
				continue
			}
			v["nullable"] = true
			if len(kept) == 1 {
				delete(v, k)
				v["allOf"] = kept
			} else {
				v[k] = kept
			}
		}
		for _, m := range v {
			dropNullType(m)
		}
	case []any:
		for _, m := range v {
			dropNullType(m)
		}
	}
}

func toYAML(j []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := yaml.Convert(&buf, bytes.NewReader(j)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// serveSpecs serves the finished document: /openapi.json and /openapi.yaml
// (3.1), /openapi-3.0.json and /openapi-3.0.yaml (Downgrade30). Each is
// built on first use, after every route is registered.
func (s *Server) serveSpecs(r chi.Router) {
	o := s.api.OpenAPI()
	docs := []struct {
		path, contentType string
		build             func() ([]byte, error)
	}{
		{"/openapi.json", "application/openapi+json", o.MarshalJSON},
		{"/openapi.yaml", "application/openapi+yaml", o.YAML},
		{"/openapi-3.0.json", "application/openapi+json", func() ([]byte, error) { return Downgrade30(o) }},
		{"/openapi-3.0.yaml", "application/openapi+yaml", func() ([]byte, error) {
			b, err := Downgrade30(o)
			if err != nil {
				return nil, err
			}
			return toYAML(b)
		}},
	}
	for _, d := range docs {
		body := sync.OnceValues(d.build)
		r.Get(d.path, func(w http.ResponseWriter, _ *http.Request) {
			b, err := body()
			if err != nil {
				writeProblem(w, http.StatusInternalServerError, "Internal error.")
				return
			}
			w.Header().Set("Content-Type", d.contentType)
			w.Write(b)
		})
	}
}
