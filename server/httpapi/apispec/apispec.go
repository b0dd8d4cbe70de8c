// Package apispec checks HTTP exchanges with ctxstore's API against its
// OpenAPI document (docs/openapi.yaml), for tests: the handler tests of
// package httpapi and the end-to-end tests, which put Proxy between the Pi
// extension and `ctxstore serve`.
package apispec

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

func init() {
	// Session bundles travel as JSON Lines or gzip: checked as opaque bytes.
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", openapi3filter.FileBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/gzip", openapi3filter.FileBodyDecoder)
}

// Spec is a loaded, validated OpenAPI document.
type Spec struct {
	doc    *openapi3.T
	router routers.Router
}

// Load reads and validates the document at path.
func Load(path string) (*Spec, error) {
	doc, err := openapi3.NewLoader().LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("apispec: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("apispec: %s: %w", path, err)
	}
	// Match any host: tests listen on ephemeral ports.
	doc.Servers = nil
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("apispec: %w", err)
	}
	return &Spec{doc: doc, router: r}, nil
}

// Properties returns the property names of the document's schema name
// (components/schemas), sorted; ok is false when there is no such schema.
func (s *Spec) Properties(name string) (props []string, ok bool) {
	ref, found := s.doc.Components.Schemas[name]
	if !found || ref.Value == nil {
		return nil, false
	}
	for p := range ref.Value.Properties {
		props = append(props, p)
	}
	slices.Sort(props)
	return props, true
}

// Operations returns "METHOD /path" for every operation of the document,
// sorted.
func (s *Spec) Operations() []string {
	var out []string
	for path, item := range s.doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(out)
	return out
}

var opts = &openapi3filter.Options{
	AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	IncludeResponseStatus: true,
}

// Check validates one exchange: the request (with its body, given
// separately since it was consumed) and the response's status, header
// and body. A route the document lacks is an error.
func (s *Spec) Check(req *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s: not in the OpenAPI document: %w", req.Method, req.URL.Path, err)
	}
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts}
	var errs []error
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		errs = append(errs, fmt.Errorf("request: %w", err))
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: opts}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		errs = append(errs, fmt.Errorf("response %d: %w", status, err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s %s: %v", req.Method, req.URL.Path, errs)
	}
	return nil
}

// Proxy is a reverse proxy to target that checks every exchange passing
// through it and keeps what it found.
type Proxy struct {
	spec *Spec
	rp   *httputil.ReverseProxy
	// Observe, if set before use, sees every exchange after its check.
	Observe func(req *http.Request, reqBody []byte, status int, body []byte)

	mu       sync.Mutex
	errs     []error
	exchange int
}

// NewProxy returns a Proxy to target.
func (s *Spec) NewProxy(target *url.URL) *Proxy {
	p := &Proxy{spec: s, rp: httputil.NewSingleHostReverseProxy(target)}
	p.rp.ModifyResponse = p.check
	return p
}

type bodyKey struct{}

// ServeHTTP keeps the request body for the check, then proxies.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, b))
	p.rp.ServeHTTP(w, r)
}

func (p *Proxy) check(resp *http.Response) error {
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	reqBody, _ := resp.Request.Context().Value(bodyKey{}).([]byte)
	cerr := p.spec.Check(resp.Request, reqBody, resp.StatusCode, resp.Header, b)
	p.mu.Lock()
	p.exchange++
	if cerr != nil {
		p.errs = append(p.errs, cerr)
	}
	if p.Observe != nil {
		p.Observe(resp.Request, reqBody, resp.StatusCode, b)
	}
	p.mu.Unlock()
	return nil
}

// Result returns how many exchanges were checked and what was wrong.
func (p *Proxy) Result() (int, []error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exchange, slices.Clone(p.errs)
}
