package assemble

import (
	"encoding/json"
	"fmt"

	"github.com/ctxstore/ctxstore/objects"
)

// ItemDoc is an item as stored in a context commit: Ref is the static
// reference (text form) of object items; Text and Calls hold chat items.
type ItemDoc struct {
	K     ItemKind   `json:"k"`
	Ref   string     `json:"ref,omitempty"`
	Text  string     `json:"text,omitempty"`
	Calls []ToolCall `json:"calls,omitempty"`
	// Input is, for a tool result, the static reference of the file version
	// its call produced when the call's large input can collapse into it.
	Input string `json:"input,omitempty"`
	// Out is, for a tool result (rendering version 3), "inline" when the
	// call's output is rendered in it and "collapsed" when a rebase
	// rewrote it after that output collapsed.
	Out string `json:"out,omitempty"`
	// Sent is, for a tool result (rendering 6), true when it renders as the
	// harness sent it, Text, until a rebase rewrites it (item.sent).
	Sent bool `json:"sent,omitempty"`
	// Opens is true for an item that starts a message of its own where it
	// would have joined the one before (item.opens).
	Opens bool `json:"opens,omitempty"`
	// Named are the files a write or edit pooled without a metadata line
	// (item.named).
	Named []string `json:"named,omitempty"`
}

func (it *item) doc() ItemDoc {
	d := ItemDoc{K: it.kind, Text: it.text, Calls: it.calls}
	if it.kind.hasRef() {
		d.Ref = it.ref.String()
	}
	if it.input != nil {
		d.Input = it.input.String()
	}
	d.Named, d.Sent, d.Opens = it.named, it.sent, it.opens
	switch {
	case it.out && it.preview:
		d.Out = outPreview
	case it.out:
		d.Out = outInline
	case it.collapsed:
		d.Out = outCollapsed
	}
	return d
}

// fromDoc reads a stored item; its object is resolved later.
func fromDoc(d ItemDoc) (*item, error) {
	it := &item{kind: d.K, text: d.Text, calls: d.Calls, out: d.Out == outInline || d.Out == outPreview, preview: d.Out == outPreview, collapsed: d.Out == outCollapsed, named: d.Named, sent: d.Sent, opens: d.Opens}
	switch d.K {
	case kUser, kAssistant, kNote:
	case kToolRef, kMeta, kContent, kStub, kPatch:
		r, err := objects.ParseRef(d.Ref)
		if err != nil {
			return nil, err
		}
		it.ref = r
		if d.Input != "" {
			in, err := objects.ParseRef(d.Input)
			if err != nil {
				return nil, fmt.Errorf("input: %w", err)
			}
			it.input = &in
		}
	default:
		return nil, fmt.Errorf("unknown item kind %q", d.K)
	}
	return it, nil
}

// normalizeArgs round-trips args through JSON so that live and rebuilt
// items hold the same values (numbers as float64).
func normalizeArgs(a map[string]any) (map[string]any, error) {
	if a == nil {
		return nil, nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// toJSONValue converts v to plain JSON values (maps, slices, float64,
// strings) for a store document.
func toJSONValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// fromJSONValue decodes a plain JSON value into dst.
func fromJSONValue(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// The values of ItemDoc.Out.
const (
	outInline    = "inline"
	outPreview   = "preview"
	outCollapsed = "collapsed"
)
