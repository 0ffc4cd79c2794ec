package history

import (
	"reflect"
	"testing"
)

// TestEncodedFormsMirrorResults: itemPreviewJSON and itemBodyJSON have
// ItemPreview's and ItemBody's fields, in order, with the same names and
// json tags (the content field typed text), so the encoding is the one
// the OpenAPI document describes.
func TestEncodedFormsMirrorResults(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[ItemPreview](), reflect.TypeFor[itemPreviewJSON]()},
		{reflect.TypeFor[ItemBody](), reflect.TypeFor[itemBodyJSON]()},
	} {
		a, b := pair[0], pair[1]
		if a.NumField() != b.NumField() {
			t.Fatalf("%s has %d fields, %s %d", a, a.NumField(), b, b.NumField())
		}
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			if fa.Name != fb.Name || fa.Tag.Get("json") != fb.Tag.Get("json") {
				t.Errorf("%s field %d: %s %q, %s has %s %q", a, i, fa.Name, fa.Tag.Get("json"), b, fb.Name, fb.Tag.Get("json"))
			}
			if fa.Type != fb.Type && !(fa.Type.Kind() == reflect.String && fb.Type == reflect.TypeFor[text]()) {
				t.Errorf("%s.%s is %s, its encoded form %s", a, fa.Name, fa.Type, fb.Type)
			}
		}
	}
}
