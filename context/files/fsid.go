package files

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// machineIDFiles are where Linux (systemd, then D-Bus) keeps the machine id.
var machineIDFiles = []string{"/etc/machine-id", "/var/lib/dbus/machine-id"}

// MachineFilesystemID returns the filesystem id of this machine's own
// filesystem: the SHA-256 (hex) of the machine id read from
// /etc/machine-id or /var/lib/dbus/machine-id. When neither is readable, it
// falls back to a random id generated once and persisted at fallbackPath
// (created with its parent directories), so that the id is stable across
// processes. An empty fallbackPath with no machine id is an error.
func MachineFilesystemID(fallbackPath string) (string, error) {
	for _, p := range machineIDFiles {
		if b, err := os.ReadFile(p); err == nil {
			if id := strings.TrimSpace(string(b)); id != "" {
				return hashHex("machine-id:" + id), nil
			}
		}
	}
	if fallbackPath == "" {
		return "", errors.New("files: no machine id in /etc/machine-id and no fallback path given")
	}
	return persistedID(fallbackPath)
}

// persistedID reads the id stored at p, or generates and stores one.
func persistedID(p string) (string, error) {
	if b, err := os.ReadFile(p); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return hashHex("generated-id:" + id), nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("files: reading generated machine id %s: %w", p, err)
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("files: generating machine id: %w", err)
	}
	id := hex.EncodeToString(raw[:])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("files: creating directory for machine id %s: %w", p, err)
	}
	// O_EXCL: if another process won the race, use its id.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return persistedID(p)
	}
	if err != nil {
		return "", fmt.Errorf("files: writing machine id %s: %w", p, err)
	}
	_, werr := f.WriteString(id + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", fmt.Errorf("files: writing machine id %s: %w", p, werr)
	}
	return hashHex("generated-id:" + id), nil
}

func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// Mount maps every path under Prefix to another filesystem id,
// e.g. a bind mount of the host's /workspace inside a sandbox.
type Mount struct {
	// Prefix is an absolute, clean, slash-separated directory path.
	Prefix string
	// FilesystemID is the id of the filesystem the prefix belongs to.
	FilesystemID string
}

// Resolver maps a path to the filesystem id it belongs to: the
// longest mount prefix that contains the path wins; otherwise, with device
// detection on, a path whose device (stat's st_dev) differs from the
// default root's gets an id derived from the default id and that device;
// otherwise the default id applies. It is safe for concurrent use.
type Resolver struct {
	defaultID string
	mounts    []Mount
	detect    bool
	rootDev   uint64

	mu      sync.Mutex
	devices map[uint64]string
}

// ResolverOptions configure NewResolver.
type ResolverOptions struct {
	// DefaultID is the filesystem id of the agent's primary environment,
	// usually MachineFilesystemID. Required.
	DefaultID string
	// Mounts are prefix rules, checked before device detection.
	Mounts []Mount
	// DetectDevices turns on device-id detection for paths no mount
	// matches. DetectRoot is the path whose device is the default
	// filesystem ("/" when empty).
	DetectDevices bool
	DetectRoot    string
}

// NewResolver checks o and returns a Resolver.
func NewResolver(o ResolverOptions) (*Resolver, error) {
	if o.DefaultID == "" {
		return nil, errors.New("files: resolver needs a default filesystem id")
	}
	r := &Resolver{defaultID: o.DefaultID, detect: o.DetectDevices, devices: map[uint64]string{}}
	for _, m := range o.Mounts {
		if !path.IsAbs(m.Prefix) || path.Clean(m.Prefix) != m.Prefix {
			return nil, fmt.Errorf("files: mount prefix %q must be absolute and clean", m.Prefix)
		}
		if m.FilesystemID == "" {
			return nil, fmt.Errorf("files: mount %q has no filesystem id", m.Prefix)
		}
		r.mounts = append(r.mounts, m)
	}
	if o.DetectDevices {
		root := o.DetectRoot
		if root == "" {
			root = "/"
		}
		dev, err := deviceOf(root)
		if err != nil {
			return nil, fmt.Errorf("files: device of detection root %s: %w", root, err)
		}
		r.rootDev = dev
	}
	return r, nil
}

// DefaultID returns the default filesystem id.
func (r *Resolver) DefaultID() string { return r.defaultID }

// Resolve returns the filesystem id of p, an absolute clean slash path.
// Device detection stats p, or its nearest existing ancestor when p does
// not exist (a deleted file keeps the id of its directory's filesystem).
func (r *Resolver) Resolve(p string) (string, error) {
	best := -1
	for i, m := range r.mounts {
		if within(p, m.Prefix) && (best < 0 || len(m.Prefix) > len(r.mounts[best].Prefix)) {
			best = i
		}
	}
	if best >= 0 {
		return r.mounts[best].FilesystemID, nil
	}
	if !r.detect {
		return r.defaultID, nil
	}
	dev, err := deviceOfNearest(p)
	if err != nil {
		return "", fmt.Errorf("files: detecting the filesystem of %s: %w", p, err)
	}
	if dev == r.rootDev {
		return r.defaultID, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.devices[dev]
	if !ok {
		// Derived, not random, so another process on this machine
		// agrees. Device numbers can change across reboots; mounts that
		// must keep their identity belong in Mounts.
		id = hashHex(r.defaultID + ":dev:" + strconv.FormatUint(dev, 10))
		r.devices[dev] = id
	}
	return id, nil
}

// within reports whether p is prefix or lies under it.
func within(p, prefix string) bool {
	if prefix == "/" {
		return true
	}
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// deviceOfNearest stats p or its nearest existing ancestor.
func deviceOfNearest(p string) (uint64, error) {
	for {
		dev, err := deviceOf(filepath.FromSlash(p))
		if err == nil || !errors.Is(err, fs.ErrNotExist) || p == "/" {
			return dev, err
		}
		p = path.Dir(p)
	}
}

// deviceOf returns st_dev of p (following symlinks).
func deviceOf(p string) (uint64, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("no device id on this platform for %s", p)
	}
	return uint64(st.Dev), nil //nolint:unconvert // Dev is int32 on some platforms
}
