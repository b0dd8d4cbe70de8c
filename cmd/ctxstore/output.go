package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/store"
)

// printJSON writes v to stdout as one line of compact JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// jsonDoc marshals a document with "xt/id" first and the other keys
// sorted, without HTML escaping.
type jsonDoc store.Doc

// MarshalJSON implements json.Marshaler.
func (d jsonDoc) MarshalJSON() ([]byte, error) {
	if d == nil {
		return []byte("null"), nil
	}
	keys := make([]string, 0, len(d))
	for k := range d {
		if k != store.IDKey {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if _, ok := d[store.IDKey]; ok {
		keys = append([]string{store.IDKey}, keys...)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := encodeValue(&b, k); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := encodeValue(&b, d[k]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func encodeValue(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}

// docText formats a document as JSON, indented by two spaces if pretty,
// with terminal controls escaped (see termSafe; the result is still JSON).
func docText(doc store.Doc, pretty bool) (string, error) {
	raw, err := jsonDoc(doc).MarshalJSON()
	if err != nil {
		return "", err
	}
	if !pretty {
		return termSafe(string(raw), false), nil
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return "", err
	}
	return termSafe(b.String(), true), nil
}

// termSafe escapes what a terminal would act on instead of showing: C0
// and C1 controls (ESC starts the escape sequences that move the cursor,
// retitle the window or hide text), DEL, the bidirectional overrides
// (which reorder what is shown) and line separators, as \uXXXX; invalid
// UTF-8 bytes as \xXX. With keepNewlines, '\n' and '\t' stay (line breaks and
// alignment). Text output only: --json output is JSON, for programs.
func termSafe(s string, keepNewlines bool) string {
	clean := true
	for i, r := range s {
		if unsafeRune(r) && !(keepNewlines && (r == '\n' || r == '\t')) || r == utf8.RuneError && !validAt(s, i) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unsafeRune(r) && !(keepNewlines && (r == '\n' || r == '\t')):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// validAt reports whether s holds a valid encoding (not a bad byte) at i.
func validAt(s string, i int) bool {
	r, n := utf8.DecodeRuneInString(s[i:])
	return r != utf8.RuneError || n > 1
}

// valueText formats one field value for a table cell: strings as they
// are, everything else as compact JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b bytes.Buffer
	if err := encodeValue(&b, v); err != nil {
		return fmt.Sprint(v)
	}
	return b.String()
}

// timeText formats a time as RFC 3339 UTC with milliseconds.
func timeText(t time.Time) string { return store.FormatTime(t) }

// optTimeText is timeText for an optional time; nil gives nil (JSON null
// or an omitted field).
func optTimeText(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timeText(*t)
	return &s
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...any) *table {
	t := &table{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, termSafe(fmt.Sprint(c), false))
	}
	fmt.Fprintln(t.tw)
}

func (t *table) flush() error { return t.tw.Flush() }

// txJSON is the --json form of a transaction receipt.
type txJSON struct {
	TxID   int64  `json:"tx_id"`
	TxTime string `json:"tx_time"`
}

func txOut(tx store.Tx) txJSON { return txJSON{TxID: tx.ID, TxTime: timeText(tx.Time)} }

// textOut returns stdout for human text output that may show stored
// strings: what is written through it has terminal controls escaped
// (termSafe), line breaks and tabs kept. Not for --json or raw data.
func (a *app) textOut() io.Writer { return termSafeWriter{a.stdout} }

type termSafeWriter struct{ w io.Writer }

// Write escapes p as one piece (fmt writes each formatted line in one call).
func (t termSafeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, termSafe(string(p), true)); err != nil {
		return 0, err
	}
	return len(p), nil
}
