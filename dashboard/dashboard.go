package dashboard

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
)

// Options configures a Dashboard. The zero value serves a read-write
// dashboard at the root path with no authentication.
type Options struct {
	// BasePath is where the dashboard is mounted, e.g. "/jobs"; "" (or "/")
	// is the root. Every link and form action is under it. Mount the
	// dashboard at BasePath+"/" without http.StripPrefix.
	BasePath string
	// ReadOnly hides every action and refuses action POSTs with 403.
	ReadOnly bool
	// Auth, when set, is required for every page and action.
	Auth Auth
	// Logger receives one line per action, with the actor. Nil: no logging.
	Logger *zap.Logger
	// Actor names who made a request, for the action log. Default: the
	// basic-auth user, "token" for a token login, else the remote address.
	Actor func(*http.Request) string
	// PollInterval is how often counts are refreshed for live pages and the
	// store is polled for new dead letters (2s).
	PollInterval time.Duration
	// CSRFSecret keys the CSRF tokens and the login cookie. Empty: random,
	// so tokens and logins do not survive a restart.
	CSRFSecret []byte
	// ConsoleHistory is how many console events are kept for pages opened
	// later (200).
	ConsoleHistory int
}

// DefaultPollInterval is the refresh period when Options.PollInterval is zero.
const DefaultPollInterval = 2 * time.Second

// Dashboard serves the dashboard pages, actions and live events. Create it
// with New; Close stops its background polling and ends open event streams.
type Dashboard struct {
	store   jobs.Store
	opts    Options
	base    string // BasePath without a trailing slash; "" for the root
	log     *zap.Logger
	pages   *pageTemplates
	secret  []byte
	hub     *hub
	handler http.Handler
}

var _ http.Handler = (*Dashboard)(nil)

// New returns a dashboard over store.
func New(store jobs.Store, opts Options) (*Dashboard, error) {
	if store == nil {
		return nil, errors.New("dashboard: nil store")
	}
	base, err := cleanBasePath(opts.BasePath)
	if err != nil {
		return nil, err
	}
	if err := opts.Auth.validate(); err != nil {
		return nil, err
	}
	switch {
	case opts.PollInterval == 0:
		opts.PollInterval = DefaultPollInterval
	case opts.PollInterval < 10*time.Millisecond:
		return nil, fmt.Errorf("dashboard: PollInterval = %v: must be at least 10ms", opts.PollInterval)
	}
	if opts.ConsoleHistory <= 0 {
		opts.ConsoleHistory = 200
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	secret := opts.CSRFSecret
	if len(secret) == 0 {
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("dashboard: random CSRF secret: %w", err)
		}
	}
	pages, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	d := &Dashboard{store: store, opts: opts, base: base, log: opts.Logger, pages: pages, secret: secret}
	d.hub = newHub(opts.ConsoleHistory, d.poll)
	d.handler = d.routes()
	return d, nil
}

// cleanBasePath accepts "", "/" or an absolute path without query or
// fragment, and drops a trailing slash.
func cleanBasePath(p string) (string, error) {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "", nil
	}
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#\"'<> \\") || strings.Contains(p, "//") {
		return "", fmt.Errorf("dashboard: BasePath %q: want an absolute path such as /jobs", p)
	}
	return p, nil
}

// ServeHTTP strips BasePath and serves the request. Paths outside BasePath
// get 404; the bare BasePath redirects to BasePath+"/".
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if d.base == "" {
		d.handler.ServeHTTP(w, r)
		return
	}
	switch {
	case r.URL.Path == d.base:
		u := *r.URL
		u.Path, u.RawPath = d.base+"/", ""
		http.Redirect(w, r, u.RequestURI(), http.StatusFound)
	case strings.HasPrefix(r.URL.Path, d.base+"/"):
		http.StripPrefix(d.base, d.handler).ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

// securityHeaders keep the pages out of frames and limit them to their own
// scripts and styles: the templates have no inline script or style at all.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
}

// routes builds the handler tree. Actions are registered for POST only, so
// the mux answers any other method on them with 405.
func (d *Dashboard) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.overviewPage)
	mux.HandleFunc("GET /queues", d.queuesPage)
	mux.HandleFunc("GET /active", d.activePage)
	mux.HandleFunc("GET /dead", d.deadPage)
	mux.HandleFunc("GET /archive", d.archivePage)
	mux.HandleFunc("GET /job/{id}", d.jobPage)
	mux.HandleFunc("GET /events", d.events)

	mux.Handle("POST /queues/{name}/pause", d.action(d.pauseQueue(true)))
	mux.Handle("POST /queues/{name}/resume", d.action(d.pauseQueue(false)))
	mux.Handle("POST /queues/{name}/settings", d.action(d.queueSettings))
	mux.Handle("POST /dead/resurrect", d.action(d.resurrect))
	mux.Handle("POST /dead/purge", d.action(d.purge(jobs.TableDLQ)))
	mux.Handle("POST /archive/purge", d.action(d.purge(jobs.TableArchive)))
	mux.Handle("POST /logout", d.csrfOnly(d.logout))

	// Static assets and the login form need no credentials: they hold no data.
	open := http.NewServeMux()
	open.Handle("GET /static/", staticHandler())
	open.HandleFunc("GET /login", d.loginPage)
	open.Handle("POST /login", d.csrfOnly(d.login))
	open.Handle("/", d.authenticate(mux))
	return open
}

// Close stops the background polling and ends every open event stream.
// The dashboard keeps serving pages; new event streams are refused.
func (d *Dashboard) Close() error {
	d.hub.close()
	return nil
}

// path returns p (which starts with "/") under the base path.
func (d *Dashboard) path(p string) string { return d.base + p }

// cookiePath scopes the dashboard's cookies to its own pages.
func (d *Dashboard) cookiePath() string { return d.base + "/" }
