package httpapi

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/ingest"
)

// TestSchemasDeclareEveryField: every JSON field of the types the API
// reads and answers is a property of its schema in docs/openapi.yaml. The
// schemas forbid other properties, so a field the document lacks fails an
// exchange only when it is set, which a test may never do (the ingest
// report's `known`, set only after a branch switch, went undeclared).
func TestSchemasDeclareEveryField(t *testing.T) {
	s := loadSpec(t)
	for name, v := range map[string]any{
		"OpenRequest": OpenRequest{}, "OpenResponse": OpenResponse{}, "CloseResponse": CloseResponse{}, "SessionInfo": SessionInfo{},
		"ContextRequest": ContextRequest{}, "ContextResponse": ContextResponse{}, "IngestReport": ingest.Report{}, "Converted": Converted{},
		"ToolRequest": ToolRequest{}, "ToolResponse": ToolResponse{}, "ObserveRequest": ObserveRequest{}, "ObserveResponse": ObserveResponse{},
		"ObjectResponse": ObjectResponse{}, "HistoryResponse": HistoryResponse{}, "QueryRequest": QueryRequest{}, "QueryResponse": QueryResponse{},
		"SearchRequest": SearchRequest{}, "SearchResponse": SearchResponse{}, "PiOutMessage": PiOutMessage{}, "PiUsage": PiUsage{},
	} {
		props, ok := s.Properties(name)
		if !ok {
			t.Errorf("docs/openapi.yaml has no schema %s", name)
			continue
		}
		for _, f := range jsonFields(reflect.TypeOf(v)) {
			if !slices.Contains(props, f) {
				t.Errorf("schema %s lacks %q, a field of %T", name, f, v)
			}
		}
	}
}

// jsonFields returns the JSON names of t's fields, those of embedded
// structs included; fields tagged "-" are left out.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
