package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func builtFS() fstest.MapFS {
	return fstest.MapFS{
		"index.html":                   {Data: []byte("<!doctype html><title>Veena console</title>")},
		"app.css":                      {Data: []byte("body{}")},
		"js/main.js":                   {Data: []byte("import './api.js';")},
		"vendor/manifest.json":         {Data: []byte("{}")},
		"vendor/cytoscape.esm.min.mjs": {Data: []byte("export default 1;")},
	}
}

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandlerServesAssetsWithTypesAndCaching(t *testing.T) {
	t.Parallel()
	h := newHandler(builtFS())
	cases := []struct {
		path, status, ctype, cache, body string
	}{
		{"/", "200", "text/html; charset=utf-8", "no-cache", "Veena console"},
		{"/index.html", "200", "text/html; charset=utf-8", "no-cache", "Veena console"},
		{"/app.css", "200", "text/css; charset=utf-8", "no-cache", "body{}"},
		{"/js/main.js", "200", "text/javascript; charset=utf-8", "no-cache", "import"},
		{"/vendor/cytoscape.esm.min.mjs", "200", "text/javascript; charset=utf-8", "public, max-age=86400", "export default"},
		// Routes of the application answer the page itself.
		{"/processes/0190-abc", "200", "text/html; charset=utf-8", "no-cache", "Veena console"},
		{"/definitions", "200", "text/html; charset=utf-8", "no-cache", "Veena console"},
		// A missing asset is a 404, not the page.
		{"/js/missing.js", "404", "", "", ""},
		{"/vendor/nothing.mjs", "404", "", "", ""},
		// The API is never answered by the console.
		{"/api/v1/nothing", "404", "", "", ""},
	}
	for _, c := range cases {
		w := get(t, h, http.MethodGet, c.path, nil)
		if got := w.Result().Status[:3]; got != c.status {
			t.Errorf("GET %s: status %s, want %s", c.path, got, c.status)
			continue
		}
		if c.status != "200" {
			continue
		}
		if got := w.Header().Get("Content-Type"); got != c.ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", c.path, got, c.ctype)
		}
		if got := w.Header().Get("Cache-Control"); got != c.cache {
			t.Errorf("GET %s: Cache-Control %q, want %q", c.path, got, c.cache)
		}
		if w.Header().Get("ETag") == "" {
			t.Errorf("GET %s: no ETag", c.path)
		}
		if !strings.Contains(w.Body.String(), c.body) {
			t.Errorf("GET %s: body %q does not contain %q", c.path, w.Body.String(), c.body)
		}
	}
}

func TestHandlerRevalidatesWithETag(t *testing.T) {
	t.Parallel()
	h := newHandler(builtFS())
	first := get(t, h, http.MethodGet, "/app.css", nil)
	etag := first.Header().Get("ETag")
	again := get(t, h, http.MethodGet, "/app.css", map[string]string{"If-None-Match": etag})
	if again.Code != http.StatusNotModified {
		t.Fatalf("GET with If-None-Match %s: status %d, want 304", etag, again.Code)
	}
}

func TestHandlerPageHeadersKeepEverythingLocal(t *testing.T) {
	t.Parallel()
	w := get(t, newHandler(builtFS()), http.MethodGet, "/", nil)
	csp := w.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("X-Content-Type-Options missing")
	}
}

func TestHandlerRefusesWrites(t *testing.T) {
	t.Parallel()
	w := get(t, newHandler(builtFS()), http.MethodPost, "/", nil)
	if w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /: status %d, want 405", w.Code)
	}
	if w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("Allow = %q", w.Header().Get("Allow"))
	}
}

func TestHandlerWithoutVendorExplainsTheBuild(t *testing.T) {
	t.Parallel()
	fsys := builtFS()
	delete(fsys, "vendor/manifest.json")
	delete(fsys, "vendor/cytoscape.esm.min.mjs")
	h := newHandler(fsys)
	for _, p := range []string{"/", "/processes/x"} {
		w := get(t, h, http.MethodGet, p, nil)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: status %d, want 200", p, w.Code)
		}
		if !strings.Contains(w.Body.String(), "make console") {
			t.Errorf("GET %s: page does not tell to run make console: %s", p, w.Body.String())
		}
		if w.Header().Get("X-Veena-Console") != "not-built" {
			t.Errorf("GET %s: X-Veena-Console = %q, want not-built", p, w.Header().Get("X-Veena-Console"))
		}
	}
}

// The embedded console has its page and its own scripts whether or not the
// libraries were copied in.
func TestEmbeddedConsole(t *testing.T) {
	t.Parallel()
	h := Handler()
	w := get(t, h, http.MethodGet, "/", nil)
	if w.Code != http.StatusOK {
		t.Fatalf("GET /: status %d", w.Code)
	}
	for _, p := range []string{"/js/main.js", "/js/graph.js", "/js/api.js", "/app.css"} {
		if w := get(t, h, http.MethodGet, p, nil); w.Code != http.StatusOK {
			t.Errorf("GET %s: status %d", p, w.Code)
		}
	}
	if get(t, h, http.MethodHead, "/", nil).Code != http.StatusOK {
		t.Errorf("HEAD / failed")
	}
}
