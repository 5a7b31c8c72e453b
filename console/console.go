// Package console owns Veena's web console: a single-page application, embedded
// in the binary, that `veena serve` mounts at "/". The console talks to the
// server only through the public HTTP API under /api/v1.
//
// The console's own HTML, CSS and JavaScript live in web/. The third-party
// browser libraries it uses (graph drawing and layout) are copied into
// web/vendor by `make console`; when that step has not run, Handler still
// works and answers every page with an explanation of how to build the console.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed web
var embedded embed.FS

// vendorMarker is a file that `make console` always writes; its absence means
// the libraries were never copied in.
const vendorMarker = "vendor/manifest.json"

// Handler serves the console. Assets are served with their content type, an
// ETag and cache headers; any other GET of a path without a file extension
// answers index.html, so that links into the application can be bookmarked.
// The caller mounts the API (/api/...) and operational endpoints ahead of it.
func Handler() http.Handler {
	web, err := fs.Sub(embedded, "web")
	if err != nil {
		panic("console: embedded web directory missing: " + err.Error())
	}
	return newHandler(web)
}

// asset is one file the console serves, with its validator and the caching
// it allows.
type asset struct {
	body        []byte
	etag        string
	contentType string
	cache       string
}

// handler serves the console's files and, for application routes, its page.
type handler struct {
	assets  map[string]*asset // by clean path without the leading slash
	index   *asset
	built   bool
	modTime time.Time
}

// newAsset makes an asset whose ETag is a hash of its body; it is revalidated
// on every use unless its caching is changed.
func newAsset(body []byte, contentType string) *asset {
	sum := sha256.Sum256(body)
	return &asset{
		body:        body,
		etag:        `"` + hex.EncodeToString(sum[:12]) + `"`,
		contentType: contentType,
		cache:       "no-cache",
	}
}

// newHandler reads every file of web into memory once.
func newHandler(web fs.FS) *handler {
	h := &handler{assets: map[string]*asset{}, modTime: time.Now()}
	_, err := fs.Stat(web, vendorMarker)
	h.built = err == nil
	_ = fs.WalkDir(web, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		body, err := fs.ReadFile(web, p)
		if err != nil {
			return nil
		}
		a := newAsset(body, contentType(p))
		if strings.HasPrefix(p, "vendor/") {
			// Library files change only with a new binary; a day of caching is
			// safe and the ETag revalidates them after that.
			a.cache = "public, max-age=86400"
		}
		h.assets[p] = a
		return nil
	})
	h.index = h.assets["index.html"]
	if !h.built || h.index == nil {
		h.index = notBuiltPage()
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if p == "" || p == "index.html" {
		h.serve(w, r, h.index, true)
		return
	}
	if strings.HasPrefix(p, "api/") || p == "api" {
		// The API is mounted ahead of the console; a miss here is a wrong path,
		// not a page of the application.
		http.NotFound(w, r)
		return
	}
	if a, ok := h.assets[p]; ok {
		h.serve(w, r, a, false)
		return
	}
	if path.Ext(p) != "" {
		http.NotFound(w, r)
		return
	}
	// A route of the application: the page itself decides what to show.
	h.serve(w, r, h.index, true)
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request, a *asset, page bool) {
	hd := w.Header()
	hd.Set("Content-Type", a.contentType)
	hd.Set("Cache-Control", a.cache)
	hd.Set("ETag", a.etag)
	hd.Set("X-Content-Type-Options", "nosniff")
	if page {
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY")
		if !h.built {
			hd.Set("X-Veena-Console", "not-built")
		}
	}
	// ServeContent answers If-None-Match with 304 and handles HEAD and ranges.
	http.ServeContent(w, r, "", h.modTime, bytes.NewReader(a.body))
}

// contentSecurityPolicy keeps every script, style and connection on the
// server's own origin: the console loads nothing from the internet.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: blob:; connect-src 'self'; worker-src 'self' blob:; " +
	"object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'"

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".json": "application/json",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".txt":  "text/plain; charset=utf-8",
	".md":   "text/plain; charset=utf-8",
	".map":  "application/json",
}

// contentType is the Content-Type of a file by its name.
func contentType(p string) string {
	if ct, ok := contentTypes[strings.ToLower(path.Ext(p))]; ok {
		return ct
	}
	if strings.Contains(path.Base(p), "LICENSE") {
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

// notBuiltPage is the page every route answers when `make console` has not
// run.
func notBuiltPage() *asset {
	return newAsset([]byte(notBuiltHTML), "text/html; charset=utf-8")
}

const notBuiltHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Veena console not built</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#1d2433}
code{background:#eef1f6;padding:.1rem .3rem;border-radius:3px}</style></head>
<body><h1>The Veena console is not built into this binary</h1>
<p>The server and its HTTP API under <code>/api/v1</code> work as usual; only the web console's
graph libraries are missing. Build them and then the binary:</p>
<pre><code>make console
go build ./cmd/veena</code></pre>
<p><code>make console</code> runs <code>npm ci --prefix console</code> and <code>node console/build.mjs</code>,
which copy the libraries into <code>console/web/vendor</code> so that they are embedded in the binary.</p>
</body></html>
`
