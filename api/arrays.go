package api

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Arrays are arrays: the OpenAPI document declares every result slice as
// {type: array} (setArrayNullable), so no answer may encode one as null
// (encoding/json writes a nil slice as null). withArrays is applied to every
// body contextd encodes (strictJSON, the Codex routes' local answers), so
// no handler has to remember to answer []. The rule is the committed
// document's; api's TestResponsesMatchSpec and e2e's checkAnswers check
// every answer against it.
//
// withArrays returns v with every nil slice and nil map reachable through
// exported, encoded fields, pointers, interfaces, slices and maps replaced
// by an empty one. v itself is never modified: the values on the path to a
// replaced slice are copied (shallowly; nothing else is copied), and v is
// returned as it is when it holds no nil slice or map. Values whose type
// encodes itself (json.Marshaler, encoding.TextMarshaler) and []byte are
// left alone. Depth is bounded by maxArrayDepth (result types are trees).
func withArrays(v any) any {
	if v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	if !mayHoldNil(rv.Type()) {
		return v
	}
	if out, changed := fillArrays(rv, 0); changed {
		return out.Interface()
	}
	return v
}

// maxArrayDepth bounds fillArrays' recursion; deeper values are encoded as
// they are.
const maxArrayDepth = 64

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	// nilKinds caches mayHoldNil per type.
	nilKinds sync.Map // reflect.Type → bool
)

// selfEncoding reports whether t (or *t) chooses its own encoding.
func selfEncoding(t reflect.Type) bool {
	return t.Implements(marshalerType) || t.Implements(textMarshalerType) ||
		reflect.PointerTo(t).Implements(marshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)
}

// mayHoldNil reports whether a value of type t can hold a nil slice or map
// that encoding/json would write as null (interfaces always may).
func mayHoldNil(t reflect.Type) bool {
	if b, ok := nilKinds.Load(t); ok {
		return b.(bool)
	}
	b := computeMayHoldNil(t, map[reflect.Type]bool{})
	nilKinds.Store(t, b)
	return b
}

// computeMayHoldNil is mayHoldNil without the cache; visiting holds the
// types being computed (a recursive type is answered by its other parts).
func computeMayHoldNil(t reflect.Type, visiting map[reflect.Type]bool) bool {
	if visiting[t] || selfEncoding(t) {
		return false
	}
	visiting[t] = true
	defer delete(visiting, t)
	switch t.Kind() {
	case reflect.Interface, reflect.Map:
		return true
	case reflect.Pointer, reflect.Array:
		return computeMayHoldNil(t.Elem(), visiting)
	case reflect.Slice:
		return t.Elem().Kind() != reflect.Uint8 || selfEncoding(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); encodedField(f) && computeMayHoldNil(f.Type, visiting) {
				return true
			}
		}
	}
	return false
}

// encodedField reports whether encoding/json writes f (exported or an
// embedded struct, and not tagged "-").
func encodedField(f reflect.StructField) bool {
	if f.Tag.Get("json") == "-" {
		return false
	}
	return f.IsExported() || (f.Anonymous && f.Type.Kind() == reflect.Struct)
}

// fillArrays returns v with its nil slices and maps made empty, and
// whether anything changed (when not, the returned value is v).
func fillArrays(v reflect.Value, depth int) (reflect.Value, bool) {
	t := v.Type()
	if depth > maxArrayDepth || !mayHoldNil(t) {
		return v, false
	}
	switch t.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return v, false
		}
		inner, changed := fillArrays(v.Elem(), depth+1)
		if !changed {
			return v, false
		}
		out := reflect.New(t).Elem()
		out.Set(inner)
		return out, true
	case reflect.Pointer:
		if v.IsNil() {
			return v, false
		}
		inner, changed := fillArrays(v.Elem(), depth+1)
		if !changed {
			return v, false
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(inner)
		return p, true
	case reflect.Slice:
		if v.IsNil() {
			return reflect.MakeSlice(t, 0, 0), true
		}
		var out reflect.Value
		for i := range v.Len() {
			e, changed := fillArrays(v.Index(i), depth+1)
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.MakeSlice(t, v.Len(), v.Len())
				reflect.Copy(out, v)
			}
			out.Index(i).Set(e)
		}
		if out.IsValid() {
			return out, true
		}
		return v, false
	case reflect.Map:
		if v.IsNil() {
			return reflect.MakeMap(t), true
		}
		var out reflect.Value
		for it := v.MapRange(); it.Next(); {
			e, changed := fillArrays(it.Value(), depth+1)
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.MakeMapWithSize(t, v.Len())
				for c := v.MapRange(); c.Next(); {
					out.SetMapIndex(c.Key(), c.Value())
				}
			}
			out.SetMapIndex(it.Key(), e)
		}
		if out.IsValid() {
			return out, true
		}
		return v, false
	case reflect.Array:
		var out reflect.Value
		for i := range v.Len() {
			e, changed := fillArrays(v.Index(i), depth+1)
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.New(t).Elem()
				out.Set(v)
			}
			out.Index(i).Set(e)
		}
		if out.IsValid() {
			return out, true
		}
		return v, false
	case reflect.Struct:
		var out reflect.Value
		for i := range t.NumField() {
			f := t.Field(i)
			if !encodedField(f) || !mayHoldNil(f.Type) || omitsEmpty(f) && isNilSliceOrMap(v.Field(i)) {
				continue
			}
			if !f.IsExported() {
				continue // an embedded unexported struct: reflect cannot set it
			}
			e, changed := fillArrays(v.Field(i), depth+1)
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.New(t).Elem()
				out.Set(v)
			}
			out.Field(i).Set(e)
		}
		if out.IsValid() {
			return out, true
		}
		return v, false
	}
	return v, false
}

// omitsEmpty reports whether f is tagged omitempty (a nil or empty slice
// is then left out either way).
func omitsEmpty(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	for _, o := range strings.Split(opts, ",") {
		if o == "omitempty" {
			return true
		}
	}
	return false
}

func isNilSliceOrMap(v reflect.Value) bool {
	return (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.IsNil()
}
