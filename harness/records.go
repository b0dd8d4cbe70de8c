package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ctxstore/ctxstore/internal/jsonlimit"
)

// Record is one JSON object read from the input, with the line it was on.
type Record struct {
	Line int
	Data json.RawMessage
}

// resyncBudget bounds the bytes decoded while looking for the next object
// on a damaged line, as a multiple of the line's length, so that a long
// damaged line costs linear time.
const resyncBudget = 8

// ReadRecords reads r line by line, however long the lines, and decodes
// every JSON value on each line with a streaming decoder. A line holding
// several objects gives them all (and a problem saying so); a value that
// does not decode (a truncated write, a truncated last line) is reported
// with its line number and byte offset, and reading goes on with the next
// object on the same line, if any, then with the next line. Only an I/O
// error stops it. known tells the record types of the formats read, so that
// an object found past damage is taken for a record only if it looks like
// one.
func ReadRecords(r io.Reader, rep *Report, known func(recordType string) bool) ([]Record, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var recs []Record
	line := 0
	for {
		b, long, err := readLine(br)
		if len(b) > 0 || long > 0 {
			line++
			if line == 1 {
				b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
			}
			switch derr := jsonlimit.Depth(b, jsonlimit.MaxDepth); {
			case long > 0:
				rep.Problem(line, "the line is %d bytes or more, over the limit of %d bytes per line; skipped", long, MaxLineBytes)
			case derr != nil:
				rep.Problem(line, "%v; the line is skipped", derr)
			default:
				recs = splitLine(b, line, recs, rep, known)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			rep.Lines = line
			return recs, fmt.Errorf("transcript: reading line %d: %w", line+1, err)
		}
	}
	rep.Lines = line
	rep.Records = len(recs)
	return recs, nil
}

// MaxLineBytes bounds one line of a transcript: a longer line is reported
// as damaged and skipped without being held in memory, so that one huge
// line cannot make a reader hold it all.
const MaxLineBytes = 32 << 20

// readLine reads one line, newline included. A line longer than
// MaxLineBytes is read to its end and dropped: long is then the bytes read
// (b is nil).
func readLine(br *bufio.Reader) (b []byte, long int, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if long > 0 || len(b)+len(frag) > MaxLineBytes {
			if long == 0 {
				long = len(b)
			}
			long += len(frag)
			b = nil
		} else {
			b = append(b, frag...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return b, long, err
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// splitLine appends the objects of one line to recs.
func splitLine(b []byte, line int, recs []Record, rep *Report, known func(string) bool) []Record {
	values := 0
	pos := skipSpace(b, 0)
	for pos < len(b) {
		v, end, err := decodeAt(b, pos)
		if err != nil {
			next := resync(b, pos, err, known)
			if next < 0 {
				rep.Problem(line, "invalid JSON at byte %d: %v; %d bytes skipped to the end of the line",
					pos+1, err, len(bytes.TrimRight(b[pos:], " \t\r\n")))
				break
			}
			rep.Problem(line, "invalid JSON at byte %d: %v; %d bytes skipped, reading on at byte %d",
				pos+1, err, next-pos, next+1)
			pos = next
			continue
		}
		values++
		if v[0] != '{' {
			rep.Problem(line, "a JSON value that is not an object at byte %d, skipped", pos+1)
		} else {
			recs = append(recs, Record{Line: line, Data: v})
		}
		pos = skipSpace(b, end)
	}
	if values > 1 {
		rep.Problem(line, "%d JSON values on one line (a missing newline); all were read", values)
	}
	return recs
}

// decodeAt decodes one JSON value starting at b[pos]; end is the offset just
// after it.
func decodeAt(b []byte, pos int) (json.RawMessage, int, error) {
	dec := json.NewDecoder(bytes.NewReader(b[pos:]))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, err
	}
	return v, pos + int(dec.InputOffset()), nil
}

// resync finds where the next object starts on a line whose value at pos
// did not decode: the object-start "{\"" nearest before the point where the
// decoder failed (a record written over the end of a truncated one starts
// there), else any later one. A candidate is taken only if it decodes, looks
// like a record (a "type" plus a known type, a timestamp or an id) and is
// followed by the end of the line or another object, so that a complete
// object nested inside the damaged one is not mistaken for a record. It
// returns -1 when there is none. Inside valid JSON strings a quote is always
// escaped, so "{\"" only occurs where an object starts.
func resync(b []byte, pos int, err error, known func(string) bool) int {
	var cands []int
	var se *json.SyntaxError
	if errors.As(err, &se) {
		at := pos + int(se.Offset)
		if at > len(b) {
			at = len(b)
		}
		if i := bytes.LastIndex(b[pos+1:at], []byte(`{"`)); i >= 0 {
			cands = append(cands, pos+1+i)
		}
	}
	budget := resyncBudget * len(b)
	try := func(i int) bool {
		v, end, err := decodeAt(b, i)
		if err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				budget -= int(se.Offset)
			} else {
				budget -= len(b) - i
			}
			return false
		}
		budget -= end - i
		if !plausibleRecord(v, known) {
			return false
		}
		end = skipSpace(b, end)
		return end == len(b) || b[end] == '{'
	}
	for _, i := range cands {
		if try(i) {
			return i
		}
	}
	for i := pos + 1; i < len(b)-1 && budget > 0; i++ {
		if b[i] != '{' || b[i+1] != '"' {
			continue
		}
		if len(cands) > 0 && i == cands[0] {
			continue
		}
		if try(i) {
			return i
		}
	}
	return -1
}

// plausibleRecord tells a top-level record from an object nested in one
// (content blocks, messages, usage).
func plausibleRecord(v json.RawMessage, known func(string) bool) bool {
	var head struct {
		Type      *string         `json:"type"`
		Timestamp json.RawMessage `json:"timestamp"`
		UUID      json.RawMessage `json:"uuid"`
		SessionID json.RawMessage `json:"sessionId"`
	}
	if json.Unmarshal(v, &head) != nil || head.Type == nil {
		return false
	}
	return (known != nil && known(*head.Type)) ||
		head.Timestamp != nil || head.UUID != nil || head.SessionID != nil
}

// LineRecords decodes the JSON objects of one line (without or with its
// newline) as ReadRecords does for each of its lines: damage is reported
// in rep with the line number and read past. For readers that keep the
// lines' bytes themselves (the importer).
func LineRecords(b []byte, line int, rep *Report, known func(recordType string) bool) []Record {
	if line == 1 {
		b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	}
	if len(b) > MaxLineBytes {
		rep.Problem(line, "the line is %d bytes, over the limit of %d bytes per line; skipped", len(b), MaxLineBytes)
		return nil
	}
	if err := jsonlimit.Depth(b, jsonlimit.MaxDepth); err != nil {
		rep.Problem(line, "%v; the line is skipped", err)
		return nil
	}
	// The common case, one whole object on the line, in one scan.
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return []Record{{Line: line, Data: t}}
	}
	return splitLine(b, line, nil, rep, known)
}

// EachRecord reads an artifact, complete lines of a JSONL file, record by
// record as LineRecords reads each line: the problems of a damaged line
// go to damaged before the line's records go to each. Blank lines count
// as lines.
func EachRecord(b []byte, known func(recordType string) bool, each func(Record), damaged func(Problem)) {
	line := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		var l []byte
		if i < 0 {
			l, b = b, nil
		} else {
			l, b = b[:i+1], b[i+1:]
		}
		line++
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var rep Report
		recs := LineRecords(l, line, &rep, known)
		for _, p := range rep.Problems {
			damaged(p)
		}
		for _, rc := range recs {
			each(rc)
		}
	}
}
