package api

import (
	"github.com/danielgtaylor/huma/v2"
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
