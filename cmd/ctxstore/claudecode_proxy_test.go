package main

import (
	"bytes"
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestProxyLoops(t *testing.T) {
	at := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8788}
	wild := &net.TCPAddr{IP: net.IPv4zero, Port: 8788}
	for _, tc := range []struct {
		upstream string
		addr     *net.TCPAddr
		want     bool
	}{
		{"http://127.0.0.1:8788", at, true},
		{"http://localhost:8788/v1", at, true},
		{"http://127.0.0.2:8788", at, true},  // loopback: the same machine
		{"http://10.0.0.5:8788", wild, true}, // listening on every address
		{"http://127.0.0.1:8789", at, false},
		{"https://api.anthropic.com", at, false},
		{"http://10.0.0.5:8788", at, false},
		{"http://127.0.0.1", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}, true},
	} {
		u, _ := url.Parse(tc.upstream)
		if got := loops(u, tc.addr); got != tc.want {
			t.Errorf("loops(%s, %s) = %v, want %v", tc.upstream, tc.addr, got, tc.want)
		}
	}
}

// TestClaudeCodeProxyCommand: the proxy refuses an upstream that is
// itself, and a bad --upstream names the flag.
func TestClaudeCodeProxyCommand(t *testing.T) {
	var out, errb bytes.Buffer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code := run(context.Background(), []string{"claude-code", "proxy", "--addr", addr, "--upstream", "http://" + addr}, strings.NewReader(""), &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "this proxy's own address") {
		t.Errorf("an upstream that is the proxy: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	code = run(context.Background(), []string{"claude-code", "proxy", "--addr", "127.0.0.1:0", "--upstream", "ftp://x"}, strings.NewReader(""), &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "ftp://x") {
		t.Errorf("an ftp upstream: exit %d: %s", code, errb.String())
	}
	// Off loopback the proxy (no tokens) would be an open relay: refused
	// unless --allow-remote says so.
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		errb.Reset()
		code = run(context.Background(), []string{"claude-code", "proxy", "--addr", addr}, strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "--allow-remote") {
			t.Errorf("--addr %s without --allow-remote: exit %d: %s", addr, code, errb.String())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	out.Reset()
	errb.Reset()
	code = run(ctx, []string{"claude-code", "proxy", "--addr", "0.0.0.0:0", "--allow-remote", "--upstream", "http://127.0.0.1:9"}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.HasPrefix(out.String(), "http://") {
		t.Errorf("--allow-remote: exit %d: %s %s", code, out.String(), errb.String())
	}
}
