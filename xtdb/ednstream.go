package xtdb

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// seqReader reads the elements of one top-level EDN vector or list from a
// stream one at a time, so that a long answer (XTDB's tx log is the rest of
// the log after a tx id: XTDB's module takes no limit) can be read in
// memory bounded by one element and left unread after the elements wanted.
type seqReader struct {
	r       *bufio.Reader
	closer  byte // 0 before the opening bracket is read
	done    bool
	buf     []byte
	maxElem int
}

func newSeqReader(r io.Reader) *seqReader {
	return &seqReader{r: bufio.NewReaderSize(r, 64<<10), maxElem: 256 << 20}
}

// next returns the next element parsed, or ok=false after the closing
// bracket.
func (s *seqReader) next() (v any, ok bool, err error) {
	if s.done {
		return nil, false, nil
	}
	if s.closer == 0 {
		c, err := s.skipSpace()
		if err != nil {
			return nil, false, fmt.Errorf("EDN sequence: %w", err)
		}
		switch c {
		case '[':
			s.closer = ']'
		case '(':
			s.closer = ')'
		case 'n': // nil: no elements
			if err := s.expect("il"); err != nil {
				return nil, false, err
			}
			s.done = true
			return nil, false, nil
		default:
			return nil, false, fmt.Errorf("EDN sequence: expected [ or (, got %q", c)
		}
	}
	c, err := s.skipSpace()
	if err != nil {
		return nil, false, fmt.Errorf("EDN sequence: %w", err)
	}
	if c == s.closer {
		s.done = true
		return nil, false, nil
	}
	s.buf = s.buf[:0]
	if err := s.value(c); err != nil {
		return nil, false, fmt.Errorf("EDN sequence: %w", err)
	}
	v, err = readEDN(s.buf)
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

func (s *seqReader) expect(rest string) error {
	for i := 0; i < len(rest); i++ {
		c, err := s.r.ReadByte()
		if err != nil || c != rest[i] {
			return errors.New("EDN sequence: unexpected answer")
		}
	}
	return nil
}

// skipSpace returns the next byte that is not white space, a comma or in
// a comment.
func (s *seqReader) skipSpace() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r', ',', '\f', '\v':
		case ';':
			if _, err := s.r.ReadString('\n'); err != nil {
				return 0, err
			}
		default:
			return c, nil
		}
	}
}

func (s *seqReader) add(c byte) error {
	if len(s.buf) >= s.maxElem {
		return fmt.Errorf("an element is larger than %d bytes", s.maxElem)
	}
	s.buf = append(s.buf, c)
	return nil
}

// value copies one value starting with c into buf.
func (s *seqReader) value(c byte) error {
	switch c {
	case '"':
		return s.str()
	case '{', '[', '(':
		return s.coll(c)
	case '#':
		if err := s.add(c); err != nil {
			return err
		}
		n, err := s.r.ReadByte()
		if err != nil {
			return err
		}
		if n == '{' {
			return s.coll(n)
		}
		if n == '_' {
			if err := s.add(n); err != nil {
				return err
			}
		} else if err := s.r.UnreadByte(); err != nil {
			return err
		}
		if n != '_' {
			if err := s.token(); err != nil { // the tag
				return err
			}
		}
		if err := s.add(' '); err != nil {
			return err
		}
		c, err := s.skipSpace()
		if err != nil {
			return err
		}
		return s.value(c)
	}
	if err := s.r.UnreadByte(); err != nil {
		return err
	}
	return s.token()
}

func (s *seqReader) token() error {
	for {
		c, err := s.r.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if isDelim(c) {
			return s.r.UnreadByte()
		}
		if err := s.add(c); err != nil {
			return err
		}
	}
}

func (s *seqReader) str() error {
	if err := s.add('"'); err != nil {
		return err
	}
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return err
		}
		if err := s.add(c); err != nil {
			return err
		}
		switch c {
		case '\\':
			n, err := s.r.ReadByte()
			if err != nil {
				return err
			}
			if err := s.add(n); err != nil {
				return err
			}
		case '"':
			return nil
		}
	}
}

func (s *seqReader) coll(open byte) error {
	if err := s.add(open); err != nil {
		return err
	}
	closer := map[byte]byte{'{': '}', '[': ']', '(': ')'}[open]
	for {
		c, err := s.skipSpace()
		if err != nil {
			return err
		}
		if c == closer {
			return s.add(c)
		}
		if c == ')' || c == ']' || c == '}' {
			return fmt.Errorf("unexpected %q", c)
		}
		if err := s.value(c); err != nil {
			return err
		}
		if err := s.add(' '); err != nil {
			return err
		}
	}
}
