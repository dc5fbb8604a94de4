package dashboard

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/internal/redact"
	"github.com/chokaq/chokaq-go/jobs"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pageTemplates holds one template set per page, each with the layout.
type pageTemplates struct {
	sets map[string]*template.Template
}

var pageNames = []string{"overview", "queue", "queues", "schedules", "active", "dead", "archive", "job", "workflows", "workflow", "confirm", "login", "error"}

func parseTemplates() (*pageTemplates, error) {
	pt := &pageTemplates{sets: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(templateFuncs).ParseFS(templateFS, "templates/layout.html", "templates/charts.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: template %s: %w", name, err)
		}
		pt.sets[name] = t
	}
	return pt, nil
}

func staticHandler() http.Handler {
	sub, _ := fs.Sub(staticFS, "static") // the directory is embedded above
	files := http.StripPrefix("/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Files only: http.FileServer would list a directory, and the
		// routes open to anyone have no business listing anything.
		name := strings.TrimPrefix(r.URL.Path, "/static/")
		if fi, err := fs.Stat(sub, name); err != nil || fi.IsDir() || strings.HasSuffix(name, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// view is what every page template gets.
type view struct {
	Title    string
	Nav      string // the highlighted tab
	Base     string
	CSRF     string
	ReadOnly bool
	Actor    string
	Login    bool // logged in with the token form: show "log out"
	Bare     bool // not authenticated: no navigation, no console
	Flash    string
	FlashJob int64 // a job the flash names, linked to its inspector (0: none)
	Console  []Event
	LastSeq  uint64
	Data     any
}

// consoleLines is how many console lines a page renders before live ones.
const consoleLines = 40

// render writes page name with data, wrapped in the layout.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name, title, nav string, data any) {
	id := d.identify(r)
	v := view{Title: title, Nav: nav, Base: d.base, ReadOnly: d.opts.ReadOnly, Actor: d.actor(r), Data: data,
		CSRF: d.csrfToken(d.csrfSession(w, r), id.principal)}
	v.Flash, v.FlashJob = d.takeFlash(w, r)
	if d.opts.Auth.Enabled() {
		v.Bare = id.principal == ""
		v.Login = id.session != ""
	}
	if !v.Bare {
		v.Console, v.LastSeq = d.hub.recent(consoleLines)
	} else {
		v.Actor = ""
	}
	var buf bytes.Buffer
	if err := d.pages.sets[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		d.log.Error("dashboard: render", zap.String("page", name), zap.Error(err))
		http.Error(w, "cannot render the page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail renders an error page.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d.render(w, r, status, "error", http.StatusText(status), "", struct {
		Status int
		Text   string
		Msg    string
	}{status, http.StatusText(status), msg})
}

// failErr renders err with the status it maps to. A store failure is shown
// only as a reference into the server log: its text can carry server
// names, user names or worse from the driver.
func (d *Dashboard) failErr(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	if status == http.StatusInternalServerError {
		d.fail(w, r, status, d.storeFailure("dashboard: store error", err, zap.String("path", r.URL.Path)))
		return
	}
	d.fail(w, r, status, err.Error())
}

// storeFailure logs err with a new short reference and returns what a
// viewer may see of it: the reference, never the error.
func (d *Dashboard) storeFailure(msg string, err error, fields ...zap.Field) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	ref := hex.EncodeToString(b)
	// A store's error may quote its connection string; the log is output too.
	d.log.Error(msg, append(fields, zap.String("ref", ref), zap.String("error", redact.Text(err.Error(), "")))...)
	return "the store failed (reference " + ref + ": the details are in the server log)"
}

const flashCookie = "chokaq_flash"

// redirectWithFlash sends the browser to the page an action came from, with
// a note to show there once.
func (d *Dashboard) redirectWithFlash(w http.ResponseWriter, r *http.Request, to, msg string) {
	d.redirectWithFlashJob(w, r, to, msg, 0)
}

// redirectWithFlashJob is redirectWithFlash with a link to job id's
// inspector after the note. The cookie carries only the ID, after a "."
// (which base64url never holds): the page builds the link, so a forged
// cookie cannot put a URL of its own there.
func (d *Dashboard) redirectWithFlashJob(w http.ResponseWriter, r *http.Request, to, msg string, id int64) {
	v := base64.RawURLEncoding.EncodeToString([]byte(msg))
	if id > 0 {
		v += "." + strconv.FormatInt(id, 10)
	}
	http.SetCookie(w, d.cookie(r, flashCookie, v, 60))
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// takeFlash returns the note and the job it links to, once.
func (d *Dashboard) takeFlash(w http.ResponseWriter, r *http.Request) (string, int64) {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return "", 0
	}
	http.SetCookie(w, d.cookie(r, flashCookie, "", -1))
	msg, job, _ := strings.Cut(c.Value, ".")
	b, err := base64.RawURLEncoding.DecodeString(msg)
	if err != nil || !utf8.Valid(b) {
		return "", 0
	}
	id, err := strconv.ParseInt(job, 10, 64)
	if err != nil || id < 0 {
		id = 0
	}
	return jobs.Clip(string(b), 300), id
}

var templateFuncs = template.FuncMap{
	"when":        fmtTime,
	"dur":         fmtDuration,
	"headline":    jobs.Headline,
	"payload":     payloadText,
	"isJSON":      func(b []byte) bool { return len(b) == 0 || json.Valid(b) },
	"join":        strings.Join,
	"reasonCls":   reasonClass,
	"statusCls":   func(s jobs.Status) string { return "st-" + strings.ToLower(s.String()) },
	"tableName":   tableName,
	"timeout":     fmtTimeout,
	"inSeconds":   inSeconds,
	"queueURL":    queueURL,
	"scheduleURL": scheduleURL,
	"queuePage":   queuePageURL,
	"lagSamples":  func() int { return lagSamples },
	"add":         func(a, b float64) float64 { return a + b },
	"sub":         func(a, b float64) float64 { return a - b },
	"percent":     func(f float64) string { return strconv.FormatFloat(100*f, 'f', 0, 64) + "%" },
}

// queueURL is where a queue's form posts action (pause, resume, settings),
// under base. A name made of dots only would be resolved away as a path
// segment, by browsers even when percent-encoded, so such a queue goes in
// the form's "queue" field instead, to base/queues/action.
func queueURL(base, name, action string) string {
	if strings.Trim(name, ".") == "" {
		return base + "/queues/" + action
	}
	return base + "/queues/" + url.PathEscape(name) + "/" + action
}

// fmtTime shows a store instant in UTC; the zero time is a dash.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func fmtDuration(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return lagText(d)
}

// fmtTimeout shows a queue's timeout; 0 is the global one.
func fmtTimeout(d time.Duration) string {
	if d == 0 {
		return "default"
	}
	return d.String()
}

// inSeconds is a queue timeout as the settings form edits it.
func inSeconds(d time.Duration) int { return int(d / time.Second) }

// payloadText shows a payload as indented JSON when it is JSON, else as
// text. html/template escapes the result, so markup in a payload is shown,
// never run.
func payloadText(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var out bytes.Buffer
	if json.Valid(b) && json.Indent(&out, b, "", "  ") == nil {
		return out.String()
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

func reasonClass(r jobs.FailureReason) string {
	switch r {
	case jobs.ReasonZombie, jobs.ReasonTimeout, jobs.ReasonHeartbeatFailure:
		return "r-stuck"
	case jobs.ReasonFatal:
		return "r-fatal"
	}
	return "r-failed"
}

func tableName(t jobs.Table) string {
	switch t {
	case jobs.TableHot:
		return "active"
	case jobs.TableArchive:
		return "archived (succeeded)"
	case jobs.TableDLQ:
		return "dead letter"
	}
	return t.String()
}
