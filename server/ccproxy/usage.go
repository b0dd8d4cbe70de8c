package ccproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
)

// usage is a Messages response's usage: what the prompt cost.
type usage struct {
	Input         int `json:"input_tokens"`
	CacheRead     int `json:"cache_read_input_tokens"`
	CacheWrite    int `json:"cache_creation_input_tokens"`
	CacheCreation *struct {
		Long  int `json:"ephemeral_1h_input_tokens"`
		Short int `json:"ephemeral_5m_input_tokens"`
	} `json:"cache_creation"`
}

// prompt is the prompt's size in tokens.
func (u usage) prompt() int { return u.Input + u.CacheRead + u.CacheWrite }

// long is the prompt's tokens written at the one-hour lifetime.
func (u usage) long() int {
	if u.CacheCreation == nil {
		return 0
	}
	return u.CacheCreation.Long
}

// outcome is what the proxy learned from a response it passed on.
type outcome struct {
	// Complete: the whole answer arrived (a streamed message_stop, or a
	// JSON message).
	Complete bool
	Usage    usage
	// Stop is the stop reason ("tool_use": the agent runs a tool next).
	Stop string
}

// maxJSON bounds how much of a non-streamed answer is kept for reading its
// usage (the answer itself passes through whole).
const maxJSON = 8 << 20

// sniffer passes a response body through and reads its outcome on the
// way: the usage of a streamed message_start (and message_delta) event or
// of a JSON message. read, when set, is called once when the answer shows
// the provider read the prompt (message_start, or a whole JSON message);
// done is called once, at the end of the body or when it is closed.
type sniffer struct {
	body     io.ReadCloser
	stream   bool
	buf      bytes.Buffer
	out      outcome
	once     sync.Once
	read     func()
	readOnce sync.Once
	done     func(outcome)
	over     bool
}

func newSniffer(body io.ReadCloser, contentType string, read func(), done func(outcome)) *sniffer {
	return &sniffer{body: body, stream: strings.HasPrefix(contentType, "text/event-stream"), read: read, done: done}
}

// started calls read once.
func (s *sniffer) started() {
	if s.read != nil {
		s.readOnce.Do(s.read)
	}
}

func (s *sniffer) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	if n > 0 {
		s.feed(p[:n])
	}
	if err != nil {
		s.finish()
	}
	return n, err
}

func (s *sniffer) Close() error {
	err := s.body.Close()
	s.finish()
	return err
}

func (s *sniffer) finish() {
	s.once.Do(func() {
		if !s.stream && !s.over {
			var m struct {
				Type       string `json:"type"`
				StopReason string `json:"stop_reason"`
				Usage      usage  `json:"usage"`
			}
			if json.Unmarshal(s.buf.Bytes(), &m) == nil && m.Type == "message" {
				s.out = outcome{Complete: true, Usage: m.Usage, Stop: m.StopReason}
				s.started()
			}
		}
		s.done(s.out)
	})
}

func (s *sniffer) feed(p []byte) {
	if !s.stream {
		if s.buf.Len()+len(p) > maxJSON {
			s.over, s.buf = true, bytes.Buffer{}
		}
		if !s.over {
			s.buf.Write(p)
		}
		return
	}
	s.buf.Write(p)
	for {
		i := bytes.IndexByte(s.buf.Bytes(), '\n')
		if i < 0 {
			if s.buf.Len() > maxJSON {
				s.buf.Reset() // a line no event of interest is this long
			}
			return
		}
		line := s.buf.Next(i + 1)
		s.event(bytes.TrimRight(line, "\r\n"))
	}
}

// event reads one line of a server-sent event stream.
func (s *sniffer) event(line []byte) {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"message_`)) {
		return // the many content deltas are not decoded
	}
	var e struct {
		Type    string `json:"type"`
		Message *struct {
			Usage usage `json:"usage"`
		} `json:"message"`
		Delta *struct {
			StopReason string `json:"stop_reason"`
		} `json:"delta"`
	}
	if json.Unmarshal(bytes.TrimSpace(data), &e) != nil {
		return
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			s.out.Usage = e.Message.Usage
		}
		s.started()
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			s.out.Stop = e.Delta.StopReason
		}
	case "message_stop":
		s.out.Complete = true
	}
}
