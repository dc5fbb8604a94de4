package dashboard

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/retention"
	"github.com/chokaq/chokaq-go/schedule"
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
	// Auth, when set, is required for every page and action. Failed
	// attempts are counted per client; after 10, each failure makes that
	// client wait before its next attempt is checked (1s, doubling to at
	// most 5 minutes; see Auth).
	Auth Auth
	// AllowedHosts are host names (or IP addresses; a port is ignored) the
	// dashboard answers to besides the loopback ones: localhost,
	// 127.0.0.0/8 and ::1. Without Auth, a request for any other Host gets
	// 421: that is what stops DNS rebinding, where a page on an attacker's
	// domain is re-pointed at 127.0.0.1 and reads or acts through the
	// browser. Without Auth and without AllowedHosts, the client must also
	// connect from a loopback address. With Auth the Host is checked only
	// when this list is set. "*" accepts any host and any client: use it
	// only behind the embedding service's own authentication middleware.
	AllowedHosts []string
	// SecureCookies marks every cookie Secure and expects https in a
	// form's Origin. It is implied for TLS requests; set it when a
	// TLS-terminating proxy serves the dashboard, so the login cookie is
	// never sent over plain HTTP.
	SecureCookies bool
	// MaxStreams caps the open event streams (100): each holds a goroutine
	// and a connection. Beyond it /events answers 503 with Retry-After.
	MaxStreams int
	// Logger receives one line per action, with the actor. Nil: no logging.
	Logger *zap.Logger
	// Actor names who made a request, for the action log. Default: the
	// basic-auth user, "token" for a token login, else the remote address.
	Actor func(*http.Request) string
	// PollInterval is how often counts are refreshed for live pages, the
	// store is polled for new dead letters and the live chart's last
	// intervals are read again (2s). The chart's points stay 2 s apart
	// whatever the interval.
	PollInterval time.Duration
	// CSRFSecret keys the CSRF tokens. Empty: random, so tokens do not
	// survive a restart. Login sessions are kept in memory and never do.
	CSRFSecret []byte
	// ConsoleHistory is how many console events are kept for pages opened
	// later (200).
	ConsoleHistory int
	// TrustedProxyHeader names the header in which reverse proxies pass on
	// the client's address, "X-Forwarded-For" or one that holds a single
	// address such as "X-Real-IP", so that failed authentication is
	// counted per client rather than for the proxy, which every client
	// shares. It is read only from a request that connects from one of
	// TrustedProxies, else ignored: any client can send it. Of
	// X-Forwarded-For, the right-most address that is not a trusted proxy
	// is the client. A value that is not an address counts as the proxy.
	TrustedProxyHeader string
	// TrustedProxies are the IP addresses or CIDR prefixes (10.0.0.0/8)
	// of the proxies whose TrustedProxyHeader is believed. Both or neither
	// must be set.
	TrustedProxies []string
	// Retention is the retention loop's configuration (chokaq.Config's
	// Retention, or Client.Retainer().Config()), so that the Queues page
	// can show what a queue without a retention of its own keeps: "default
	// (7d)", and the history chart can mark the hours and days older than
	// it "beyond retention". Zero fields are the loop's defaults. Nil: the
	// dashboard does not know, such a queue shows "default (global)" and
	// its history is not marked. Leave it nil in a process that runs no
	// retention loop, so the pages do not claim a value that another
	// process configures.
	Retention *retention.Config
}

// DefaultPollInterval is the refresh period when Options.PollInterval is zero.
const DefaultPollInterval = 2 * time.Second

// DefaultMaxStreams is the cap on event streams when Options.MaxStreams is zero.
const DefaultMaxStreams = 100

// Dashboard serves the dashboard pages, actions and live events. Create it
// with New; Close stops its background polling and ends open event streams.
type Dashboard struct {
	store   jobs.Admin
	opts    Options
	base    string // BasePath without a trailing slash; "" for the root
	log     *zap.Logger
	pages   *pageTemplates
	secret  []byte
	hub     *hub
	handler http.Handler

	hosts    map[string]bool // Options.AllowedHosts but "*", lower case
	anyHost  bool            // AllowedHosts has "*"
	sessions *sessions
	failures *limiter
	// proxyHeader and proxies are Options.TrustedProxyHeader, canonical,
	// and Options.TrustedProxies, parsed.
	proxyHeader string
	proxies     []netip.Prefix
	// now is the clock of login sessions and the failure limiter; tests
	// move it.
	now func() time.Time
	// bodyTimeout bounds reading a form, so a client that trickles its
	// body cannot hold a connection (and up to the body limit) for long.
	bodyTimeout time.Duration
	// global is Options.Retention with its defaults filled; nil when not
	// given.
	global *retention.Config
	// trigger is the store when it can also enqueue (a jobs.Enqueuer, as
	// a whole jobs.Store is): Trigger needs it. Nil hides Trigger.
	trigger schedule.TriggerStore
	// finished is the store when it counts finished jobs by time (the
	// optional jobs.FinishedCounter): the charts need it. Nil shows a note
	// in their place.
	finished jobs.FinishedCounter
	// workflows is the store when it keeps workflows (the optional
	// jobs.WorkflowAdmin): the Workflows pages need it. Nil: they say the
	// store does not run workflows.
	workflows jobs.WorkflowAdmin
	// live, history and lags feed the charts, shared by every viewer.
	live    liveWindow
	history historyCache
	lags    lagHistory
}

var _ http.Handler = (*Dashboard)(nil)

// New returns a dashboard over store.
func New(store jobs.Admin, opts Options) (*Dashboard, error) {
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
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	hosts, anyHost, err := allowedHosts(opts.AllowedHosts)
	if err != nil {
		return nil, err
	}
	proxies, err := trustedProxies(opts.TrustedProxies)
	if err != nil {
		return nil, err
	}
	header, err := proxyHeader(opts.TrustedProxyHeader, len(proxies))
	if err != nil {
		return nil, err
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
	var global *retention.Config
	if opts.Retention != nil {
		if err := opts.Retention.Validate(); err != nil {
			return nil, fmt.Errorf("dashboard: Retention: %w", err)
		}
		g, def := *opts.Retention, retention.DefaultConfig()
		if g.Archive == 0 {
			g.Archive = def.Archive
		}
		if g.DeadLetters == 0 {
			g.DeadLetters = def.DeadLetters
		}
		global = &g
	}
	pages, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	d := &Dashboard{store: store, opts: opts, base: base, log: opts.Logger, pages: pages, secret: secret,
		hosts: hosts, anyHost: anyHost, sessions: newSessions(), failures: newLimiter(), proxyHeader: header, proxies: proxies,
		now: time.Now, bodyTimeout: formReadTimeout, global: global}
	d.trigger, _ = store.(schedule.TriggerStore)
	d.finished, _ = store.(jobs.FinishedCounter)
	d.workflows, _ = store.(jobs.WorkflowAdmin)
	d.hub = newHub(opts.ConsoleHistory, opts.MaxStreams, d.poll)
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
// get 404; the bare BasePath redirects to BasePath+"/", and an unclean path
// under it to its clean form, if that is still under it.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if d.base == "" {
		d.serve(w, r)
		return
	}
	switch {
	case r.URL.Path == d.base:
		u := *r.URL
		u.Path, u.RawPath = d.base+"/", ""
		http.Redirect(w, r, u.RequestURI(), http.StatusFound)
	case strings.HasPrefix(r.URL.Path, d.base+"/"):
		// The inner mux would clean the path after the prefix is gone and
		// redirect to a path without it (/jobs//dead to /dead). Clean the
		// escaped form, as the mux does, so %2E%2E stays a name.
		if p := r.URL.EscapedPath(); cleanPath(p) != p {
			c := cleanPath(p)
			if dec, err := url.PathUnescape(c); err != nil || !strings.HasPrefix(dec, d.base+"/") {
				http.NotFound(w, r)
				return
			}
			if r.URL.RawQuery != "" {
				c += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, c, http.StatusTemporaryRedirect)
			return
		}
		http.StripPrefix(d.base, http.HandlerFunc(d.serve)).ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

// serve checks the Host and the client (see Options.AllowedHosts), then
// routes the request.
func (d *Dashboard) serve(w http.ResponseWriter, r *http.Request) {
	if status, msg := d.checkHost(r); status != 0 {
		http.Error(w, msg, status)
		return
	}
	d.handler.ServeHTTP(w, r)
}

// cleanPath is path.Clean that keeps a trailing slash, as http.ServeMux
// cleans.
func cleanPath(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
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
	// One queue's page: by name, or, for names of dots only, as ?name=.
	// Not under /queues/, where a GET of an action path must stay a 405.
	mux.HandleFunc("GET /queue/{name}", d.queuePage)
	mux.HandleFunc("GET /queue", d.queuePage)
	mux.HandleFunc("GET /active", d.activePage)
	mux.HandleFunc("GET /dead", d.deadPage)
	mux.HandleFunc("GET /archive", d.archivePage)
	mux.HandleFunc("GET /job/{id}", d.jobPage)
	mux.HandleFunc("GET /workflows", d.workflowsPage)
	mux.HandleFunc("GET /workflow/{id}", d.workflowPage)
	mux.HandleFunc("GET /events", d.events)

	// A queue is named in the path, or, for names that path normalisation
	// would eat ("." and ".."; browsers resolve even %2E%2E), in the
	// "queue" field of POST /queues/{action}.
	for _, p := range []string{"/queues/{name}", "/queues"} {
		mux.Handle("POST "+p+"/pause", d.action(smallForm, d.pauseQueue(true)))
		mux.Handle("POST "+p+"/resume", d.action(smallForm, d.pauseQueue(false)))
		mux.Handle("POST "+p+"/settings", d.action(smallForm, d.queueSettings))
		mux.Handle("POST "+p+"/limits", d.action(smallForm, d.queueLimits))
	}
	// Schedules likewise, by name or in the "schedule" field.
	mux.HandleFunc("GET /schedules", d.schedulesPage)
	for _, p := range []string{"/schedules/{name}", "/schedules"} {
		mux.Handle("POST "+p+"/pause", d.action(smallForm, d.pauseSchedule(true)))
		mux.Handle("POST "+p+"/resume", d.action(smallForm, d.pauseSchedule(false)))
		mux.Handle("POST "+p+"/trigger", d.action(smallForm, d.triggerSchedule))
	}
	mux.Handle("POST /active/cancel", d.action(maxActionBytes, d.cancel))
	mux.Handle("POST /workflows/{id}/cancel", d.action(smallForm, d.cancelWorkflow))
	mux.Handle("POST /dead/resurrect", d.action(maxActionBytes, d.resurrect))
	mux.Handle("POST /dead/purge", d.action(maxActionBytes, d.purge(jobs.TableDLQ)))
	mux.Handle("POST /archive/purge", d.action(maxActionBytes, d.purge(jobs.TableArchive)))
	mux.Handle("POST /logout", d.csrfOnly(smallForm, d.logout))

	// Static assets and the login form need no credentials: they hold no data.
	open := http.NewServeMux()
	open.Handle("GET /static/", staticHandler())
	open.HandleFunc("GET /login", d.loginPage)
	open.Handle("POST /login", d.csrfOnly(smallForm, d.login))
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

// secure reports whether r reached the dashboard over HTTPS, as far as it
// can tell: TLS here, or Options.SecureCookies for a TLS-terminating proxy.
func (d *Dashboard) secure(r *http.Request) bool { return d.opts.SecureCookies || r.TLS != nil }

// cookie is a cookie of the dashboard: HttpOnly, SameSite=Strict, scoped to
// its pages, and Secure when served over HTTPS.
func (d *Dashboard) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: d.cookiePath(), MaxAge: maxAge,
		HttpOnly: true, Secure: d.secure(r), SameSite: http.SameSiteStrictMode}
}
