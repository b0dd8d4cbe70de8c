package recall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/ctxstore/ctxstore/context/recall/provider"
)

// DefaultMinNewUserMessages is how many new user messages make a session
// due for re-indexing (001: minNewUserMessages).
const DefaultMinNewUserMessages = 5

// Config is the recall config file (JSON, docs/recall.md): the indexing
// threshold, the serialization caps, the model providers and which to use.
type Config struct {
	// MinNewUserMessages: regenerate a session's metadata after this many
	// new user messages (default 5).
	MinNewUserMessages int `json:"min_new_user_messages,omitempty"`
	// MaxBytes caps the serialized conversation the index is generated
	// from (default 50 KiB, the most recent text kept).
	MaxBytes int `json:"max_bytes,omitempty"`
	// QueryMaxBytes caps the conversation query_session sends (default
	// 200 KiB, most recent first, compaction summaries kept).
	QueryMaxBytes int `json:"query_max_bytes,omitempty"`
	// Providers are the model clients that may be used.
	Providers []provider.Config `json:"providers,omitempty"`
	// Use lists provider names in order of preference (001: modelKeys);
	// the first that can be built is used. Empty: the first provider.
	Use []string `json:"use,omitempty"`
}

// Settings is a loaded configuration: what generation does.
type Settings struct {
	Config
	// Provider is the model client, nil when none is configured (the
	// offline generator then fills the index).
	Provider provider.Provider
	// Disabled is set when the file is invalid or names a model that
	// cannot be used: generation then does nothing (001: a start-up
	// warning, the indexing path safely no-ops).
	Disabled bool
}

// Offline returns settings without a provider: the offline generator.
func Offline() *Settings {
	return &Settings{Config: Config{MinNewUserMessages: DefaultMinNewUserMessages}}
}

// LoadConfig reads the config file at path. A missing file (path "" or
// absent) gives offline settings and no warning. An invalid file, or one
// whose providers cannot be used, gives disabled settings and warnings
// naming the file and field: callers print them at start-up.
func LoadConfig(path string) (*Settings, []string) {
	if path == "" {
		return Offline(), nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Offline(), nil
	}
	if err != nil {
		return &Settings{Disabled: true}, []string{fmt.Sprintf("recall config %s: %v; session indexing is off", path, err)}
	}
	s, err := ParseConfig(data)
	if err != nil {
		return &Settings{Disabled: true}, []string{fmt.Sprintf("recall config %s: %v; session indexing is off", path, err)}
	}
	return s, nil
}

// ParseConfig validates a config file's bytes and builds its provider.
// Unknown fields are errors.
func ParseConfig(data []byte) (*Settings, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if c.MinNewUserMessages == 0 {
		c.MinNewUserMessages = DefaultMinNewUserMessages
	}
	switch {
	case c.MinNewUserMessages < 1:
		return nil, fmt.Errorf("min_new_user_messages: %d, want at least 1", c.MinNewUserMessages)
	case c.MaxBytes < 0:
		return nil, fmt.Errorf("max_bytes: must not be negative")
	case c.QueryMaxBytes < 0:
		return nil, fmt.Errorf("query_max_bytes: must not be negative")
	}
	byName := map[string]provider.Config{}
	for i, p := range c.Providers {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("providers[%d]: %w", i, err)
		}
		if _, dup := byName[p.Name]; dup {
			return nil, fmt.Errorf("providers[%d].name: %q appears twice", i, p.Name)
		}
		byName[p.Name] = p
	}
	s := &Settings{Config: c}
	use := c.Use
	if len(use) == 0 && len(c.Providers) > 0 {
		use = []string{c.Providers[0].Name}
	}
	for i, name := range use {
		p, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("use[%d]: no provider named %q", i, name)
		}
		if s.Provider == nil {
			pr, err := provider.New(p)
			if err != nil {
				return nil, fmt.Errorf("use[%d]: %w", i, err)
			}
			s.Provider = pr
		}
	}
	return s, nil
}
