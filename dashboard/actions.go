package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/retention"
)

// Action scopes, the "scope" field of resurrect and purge forms.
const (
	scopeOne      = "one"      // the job in "id"
	scopeSelected = "selected" // the jobs in "ids"
	scopeMatching = "matching" // every job the filter fields select ("all" for no filter)
)

func zapActor(a string) zap.Field { return zap.String("actor", a) }

// record logs an action with its actor and shows it on the console. For a
// failed action it returns what a viewer may see of err: a store failure
// only as a reference into the log.
func (d *Dashboard) record(r *http.Request, action, text string, n int, err error) string {
	actor := d.actor(r)
	fields := []zap.Field{zapActor(actor), zap.String("action", action), zap.String("target", text), zap.Int("count", n)}
	if err != nil {
		shown := err.Error()
		if statusOf(err) == http.StatusInternalServerError {
			shown = d.storeFailure("dashboard: action failed", err, fields...)
		} else {
			d.log.Error("dashboard: action failed", append(fields, zap.Error(err))...)
		}
		d.Publish(Event{Kind: KindError, Text: fmt.Sprintf("%s: %s %s failed after %d: %s", actor, action, text, n, shown)})
		return shown
	}
	d.log.Info("dashboard: action", fields...)
	d.Publish(Event{Kind: KindAction, Text: actor + ": " + text})
	return ""
}

// failAction renders a failed action: err's status, with the text record
// chose to show.
func (d *Dashboard) failAction(w http.ResponseWriter, r *http.Request, err error, prefix, shown string) {
	d.fail(w, r, statusOf(err), prefix+shown)
}

// resurrect moves dead letters back to Pending: one, the selected, or all
// matching a filter, optionally with an edited payload.
func (d *Dashboard) resurrect(w http.ResponseWriter, r *http.Request) {
	payload, err := editedPayload(r.PostForm)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	with := ""
	if payload != nil {
		with = " with an edited payload"
	}
	run := func(ctx context.Context, ids []int64) (int, error) {
		return d.store.Resurrect(ctx, jobs.ResurrectParams{Filter: jobs.Filter{IDs: ids}, Payload: payload})
	}
	d.act(w, r, op{verb: "resurrect", done: "resurrected", table: jobs.TableDLQ, action: d.path("/dead/resurrect"), with: with, run: run})
}

// cancel stops the active jobs in "id" (one, from the inspector) or "ids"
// (the rows selected on the active page): one not yet started goes to the
// DLQ at once, a running one is asked to stop at its next heartbeat. The
// actor and the form's "reason" go into the dead letters' details.
func (d *Dashboard) cancel(w http.ResponseWriter, r *http.Request) {
	values := r.PostForm["ids"]
	if v := r.PostForm.Get("id"); v != "" {
		values = []string{v}
	}
	if len(values) == 0 {
		d.failErr(w, r, badInput("select at least one job to cancel"))
		return
	}
	if len(values) > jobs.MaxCancelIDs {
		d.failErr(w, r, badInput("at most %d jobs can be cancelled at once; %d were selected", jobs.MaxCancelIDs, len(values)))
		return
	}
	ids := make([]int64, len(values))
	for i, v := range values {
		id, err := parseID("id", v)
		if err != nil {
			d.failErr(w, r, err)
			return
		}
		ids[i] = id
	}
	rs, err := d.store.Cancel(r.Context(), jobs.CancelParams{IDs: ids, By: jobs.Clip(d.actor(r), jobs.MaxCreatedByLen),
		Reason: jobs.Clip(strings.TrimSpace(r.PostForm.Get("reason")), jobs.MaxCancelReasonLen)})
	counts := map[jobs.CancelOutcome]int{}
	for _, c := range rs {
		counts[c.Outcome]++
	}
	var parts []string
	for _, o := range []jobs.CancelOutcome{jobs.CancelDone, jobs.CancelRequested, jobs.CancelAlreadyFinished, jobs.CancelNotFound} {
		if counts[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	what := fmt.Sprintf("job %d", ids[0])
	if len(ids) > 1 {
		what = fmt.Sprintf("%d jobs", len(ids))
	}
	text := "cancel of " + what + ": " + strings.Join(parts, ", ")
	if shown := d.record(r, "cancel", text, counts[jobs.CancelDone]+counts[jobs.CancelRequested], err); err != nil {
		d.failAction(w, r, err, "cancel failed: ", shown)
		return
	}
	back := d.path("/active")
	if len(ids) == 1 {
		back = d.path("/job/" + strconv.FormatInt(ids[0], 10))
	}
	d.redirectWithFlash(w, r, back, capitalize(text)+".")
}

// purge deletes dead letters or archived jobs for good.
func (d *Dashboard) purge(t jobs.Table) http.HandlerFunc {
	action := map[jobs.Table]string{jobs.TableDLQ: "/dead/purge", jobs.TableArchive: "/archive/purge"}[t]
	return func(w http.ResponseWriter, r *http.Request) {
		run := func(ctx context.Context, ids []int64) (int, error) {
			return d.store.Purge(ctx, jobs.PurgeParams{Table: t, Filter: jobs.Filter{IDs: ids}})
		}
		d.act(w, r, op{verb: "purge", done: "purged", table: t, action: d.path(action), run: run})
	}
}

// op is a resurrect or purge.
type op struct {
	verb, done string
	table      jobs.Table
	action     string // the form's URL, for the confirmation step
	with       string // " with an edited payload", for messages
	// run acts on the jobs with these IDs, at most jobs.MaxFilterIDs.
	run func(ctx context.Context, ids []int64) (int, error)
}

// kind names one job of table t; kinds names several.
func kind(t jobs.Table) string {
	return map[jobs.Table]string{jobs.TableDLQ: "dead letter", jobs.TableArchive: "archived job", jobs.TableHot: "active job"}[t]
}

func kinds(t jobs.Table) string { return kind(t) + "s" }

// noun counts n jobs of table t.
func noun(t jobs.Table, n int64) string {
	if n == 1 {
		return "1 " + kind(t)
	}
	return fmt.Sprintf("%d %s", n, kinds(t))
}

// listURL is the page of table t with a filter.
func (d *Dashboard) listURL(t jobs.Table, ff filterForm) string {
	p := map[jobs.Table]string{jobs.TableDLQ: "/dead", jobs.TableArchive: "/archive", jobs.TableHot: "/active"}[t]
	return d.path(p) + query(ff.values())
}

// Hidden fields of the confirmation step, beside the original form.
const (
	asofField  = "asof"  // the store's time when the count was shown
	shownField = "shown" // the count shown
)

// act runs a resurrect or purge in the form's scope. One job goes at once.
// A bulk action first renders a confirmation with the number of rows it
// will touch and the store's time, and runs only when that number is typed
// back. It then touches exactly the rows it counted: those that match and
// reached the table before that time (so none that arrived since), listed
// by ID; if their number is no longer the one typed, it asks again.
func (d *Dashboard) act(w http.ResponseWriter, r *http.Request, o op) {
	ctx := r.Context()
	form := r.PostForm
	if form.Get("scope") == scopeOne {
		d.actOne(w, r, o)
		return
	}
	ff := readFilterForm(form, o.table)
	var (
		f    jobs.Filter
		what string
		err  error
	)
	switch scope := form.Get("scope"); scope {
	case scopeSelected:
		ids, err := parseIDs(form["ids"])
		if err != nil {
			d.failErr(w, r, err)
			return
		}
		if len(ids) == 0 {
			d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("nothing selected: tick the %s to %s first", kinds(o.table), o.verb))
			return
		}
		f, what = jobs.Filter{IDs: ids}, fmt.Sprintf("the %d selected", len(ids))
	case scopeMatching:
		if f, err = ff.build(); err != nil {
			d.failErr(w, r, err)
			return
		}
		if f.IsEmpty() && form.Get("all") == "" {
			d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("refusing to %s every %s: the filter is empty. Narrow the filter, or tick \"every %s\" to mean it.",
				o.verb, kind(o.table), kind(o.table)))
			return
		}
		what = "matching " + ff.Describe()
	default:
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("scope %q: want one, selected or matching", scope))
		return
	}
	back := d.listURL(o.table, ff)

	typed := strings.TrimSpace(form.Get("confirm"))
	changed := false
	if want, err := strconv.ParseInt(typed, 10, 64); err == nil && want > 0 && strconv.FormatInt(want, 10) == typed {
		asof, err := parseAsOf(form.Get(asofField))
		if err != nil {
			d.failErr(w, r, err)
			return
		}
		sel := jobs.Selection{Table: o.table, Filter: f, AsOf: asof, Count: want}
		ids, err := sel.IDs(ctx, d.store)
		switch {
		case err == nil:
			d.runBulk(w, r, o, ids, what, back)
			return
		case !errors.Is(err, jobs.ErrSelectionChanged):
			d.failErr(w, r, err)
			return
		}
		// The number typed was right when counted, or is the one shown:
		// the rows changed under the operator, not the typing.
		sce, _ := errors.AsType[*jobs.SelectionChangedError](err)
		changed = sce != nil && sce.Counted == want || typed == form.Get(shownField)
	}

	// Show (again) what the action would touch now.
	sel, err := jobs.Preview(ctx, d.store, o.table, f)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	n := sel.Count
	if n == 0 {
		d.redirectWithFlash(w, r, back, fmt.Sprintf("Nothing to %s: no %s match.", o.verb, kinds(o.table)))
		return
	}
	c := confirmData{Verb: o.verb, Noun: noun(o.table, n), Count: n, What: what, With: o.with, Action: o.action, Back: back,
		Payload: payloadText([]byte(form.Get("payload")))}
	if form.Get("edit_payload") == "" || o.with == "" {
		c.Payload = "" // a purge ignores the payload fields of the list's form
	}
	for k, vs := range form {
		if k == csrfField || k == "confirm" || k == asofField || k == shownField {
			continue
		}
		for _, v := range vs {
			c.Fields = append(c.Fields, field{k, v})
		}
	}
	c.Fields = append(c.Fields, field{asofField, sel.AsOf.UTC().Format(time.RFC3339Nano)}, field{shownField, strconv.FormatInt(n, 10)})
	status := http.StatusOK
	switch {
	case changed:
		status = http.StatusConflict
		c.Error = fmt.Sprintf("The selection changed (now %s); review and confirm again.", noun(o.table, n))
	case typed != "":
		status = http.StatusConflict
		c.Error = fmt.Sprintf("You typed %q, but %s match now. Type %d to go ahead.", typed, noun(o.table, n), n)
	}
	d.render(w, r, status, "confirm", "Confirm "+o.verb, navOf(o.table), c)
}

// parseAsOf reads the confirmation's time (RFC 3339); "" is the zero time,
// which bounds nothing.
func parseAsOf(asof string) (time.Time, error) {
	if asof == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, asof)
	if err != nil {
		return time.Time{}, badInput("asof %q: want an RFC 3339 time", asof)
	}
	return t, nil
}

// runBulk acts on exactly ids, at most jobs.MaxFilterIDs at a time.
func (d *Dashboard) runBulk(w http.ResponseWriter, r *http.Request, o op, ids []int64, what, back string) {
	done := 0
	var err error
	for chunk := range slices.Chunk(ids, jobs.MaxFilterIDs) {
		var n int
		n, err = o.run(r.Context(), chunk)
		done += n
		if err != nil {
			break
		}
	}
	text := fmt.Sprintf("%s %s (%s)%s", o.done, noun(o.table, int64(done)), what, o.with)
	if shown := d.record(r, o.verb, text, done, err); err != nil {
		d.failAction(w, r, err, fmt.Sprintf("%s stopped after %s: ", o.verb, noun(o.table, int64(done))), shown)
		return
	}
	d.redirectWithFlash(w, r, back, capitalize(text)+".")
}

// actOne resurrects or purges the job in "id".
func (d *Dashboard) actOne(w http.ResponseWriter, r *http.Request, o op) {
	ctx := r.Context()
	id, err := parseID("id", r.PostForm.Get("id"))
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	j, err := d.store.GetJob(ctx, id)
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	if j.Table != o.table {
		d.fail(w, r, http.StatusConflict, fmt.Sprintf("job %d is not %s: it is %s", id, tableName(o.table), tableName(j.Table)))
		return
	}
	n, err := o.run(ctx, []int64{id})
	text := fmt.Sprintf("%s job %d (%s on %s)%s", o.done, id, j.Type, j.Queue, o.with)
	shown := d.record(r, o.verb, text, n, err)
	switch {
	case err != nil:
		d.failAction(w, r, err, "", shown)
	case n == 0:
		d.fail(w, r, http.StatusConflict, fmt.Sprintf("job %d was not %s: it left the %s meanwhile", id, o.done, tableName(o.table)))
	case o.verb == "resurrect":
		d.redirectWithFlash(w, r, d.path("/job/"+strconv.FormatInt(id, 10)), capitalize(text)+": it is Pending again.")
	default:
		d.redirectWithFlash(w, r, d.listURL(o.table, filterForm{}), capitalize(text)+".")
	}
}

// confirmData is the confirmation step of a bulk action.
type confirmData struct {
	Verb, Noun, What, With string
	Count                  int64
	Action, Back           string
	Fields                 []field // the original form, posted again with the typed count
	Payload                string
	Error                  string
}

func navOf(t jobs.Table) string {
	return map[jobs.Table]string{jobs.TableDLQ: "dead", jobs.TableArchive: "archive", jobs.TableHot: "active"}[t]
}

// editedPayload is the replacement payload of a resurrect, or nil to keep
// each job's own. Like `chokaq dlq resurrect --payload`, it must be JSON.
func editedPayload(form url.Values) ([]byte, error) {
	if form.Get("edit_payload") == "" {
		return nil, nil
	}
	// Browsers send textarea line breaks as CRLF; the payload had LF.
	p := strings.ReplaceAll(form.Get("payload"), "\r\n", "\n")
	if p != "" {
		var v any
		if err := json.Unmarshal([]byte(p), &v); err != nil {
			return nil, badInput("the edited payload is not valid JSON: %v", err)
		}
	}
	return []byte(p), nil
}

func (d *Dashboard) pauseQueue(paused bool) http.HandlerFunc {
	action, verb := "resume", "resumed"
	if paused {
		action, verb = "pause", "paused"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		name := queueName(r)
		if err := jobs.ValidateQueueName(name); err != nil {
			d.failErr(w, r, err)
			return
		}
		_, err := d.store.UpdateQueue(r.Context(), name, jobs.QueueUpdate{Paused: &paused})
		text := verb + " queue " + name
		if shown := d.record(r, action, text, 1, err); err != nil {
			d.failAction(w, r, err, "", shown)
			return
		}
		d.redirectWithFlash(w, r, d.path("/queues"), capitalize(text)+".")
	}
}

// queueSettings sets MaxWorkers, the two timeouts and the two retentions.
// An empty field clears the setting (0: unlimited, the global timeout, or
// the global retention); see parseRetention for the retentions' "0".
func (d *Dashboard) queueSettings(w http.ResponseWriter, r *http.Request) {
	name := queueName(r)
	if err := jobs.ValidateQueueName(name); err != nil {
		d.failErr(w, r, err)
		return
	}
	var u jobs.QueueUpdate
	mw, err := parseCount("max workers", r.PostForm.Get("max_workers"))
	if err != nil {
		d.failErr(w, r, err)
		return
	}
	u.MaxWorkers = &mw
	for _, t := range []struct {
		field, label string
		into         **time.Duration
	}{{"zombie_timeout", "zombie timeout", &u.ZombieTimeout}, {"execution_timeout", "execution timeout", &u.ExecutionTimeout}} {
		v, err := parseSeconds(t.label, r.PostForm.Get(t.field))
		if err != nil {
			d.failErr(w, r, err)
			return
		}
		*t.into = &v
	}
	for _, t := range []struct {
		field string
		into  **time.Duration
	}{{"archive_retention", &u.ArchiveRetention}, {"dead_letter_retention", &u.DeadLetterRetention}} {
		// A form without the field (a script's, or one from before
		// retention was editable) leaves the retention as it is, rather
		// than clearing it unseen.
		raw, sent := r.PostForm[t.field]
		if !sent {
			continue
		}
		v, err := parseRetention(retentionFields[t.field], raw[0])
		if err != nil {
			d.failErr(w, r, err)
			return
		}
		*t.into = &v
	}
	// Processes are running: a zombie timeout none of them with default
	// heartbeats could honour is refused (jobs.QueueUpdate.ValidateAtRunTime).
	if err := u.ValidateAtRunTime(); err != nil {
		d.failErr(w, r, explainRetention(err, r.PostForm))
		return
	}
	s, err := d.store.UpdateQueue(r.Context(), name, u)
	text := fmt.Sprintf("set queue %s: max workers %s, zombie timeout %s, execution timeout %s, archive kept %s, dead letters kept %s", name,
		maxWorkersText(s.MaxWorkers), fmtTimeout(s.ZombieTimeout), fmtTimeout(s.ExecutionTimeout),
		retention.Text(s.ArchiveRetention), retention.Text(s.DeadLetterRetention))
	if shown := d.record(r, "set", text, 1, err); err != nil {
		d.failAction(w, r, err, "", shown)
		return
	}
	d.redirectWithFlash(w, r, d.path("/queues"), capitalize(text)+".")
}

// queueLimits sets, from the queue's own page, the settings that shape
// its claims: weight (ADR 0032), rate limit (ADR 0033), the per-key limit
// and the sequence policy (ADR 0031). A field the form does not send is
// left as it is; an empty rate limit (or "none") removes it, an empty
// per-key limit is unlimited. A named key's own limit stays the CLI's and
// appsettings' (a map edit a form would only make easy to get wrong).
func (d *Dashboard) queueLimits(w http.ResponseWriter, r *http.Request) {
	name := queueName(r)
	if err := jobs.ValidateQueueName(name); err != nil {
		d.failErr(w, r, err)
		return
	}
	var u jobs.QueueUpdate
	form := r.PostForm
	if raw, sent := form["weight"]; sent {
		n, err := parseCount("weight", raw[0])
		if err != nil {
			d.failErr(w, r, err)
			return
		}
		u.Weight = &n
	}
	if raw, sent := form["rate_limit"]; sent {
		rl, err := jobs.ParseRateLimit(raw[0])
		if err != nil {
			d.failErr(w, r, err)
			return
		}
		u.RateLimit = &rl
	}
	if raw, sent := form["max_workers_per_key"]; sent {
		n, err := parseCount("per-key limit", raw[0])
		if err != nil {
			d.failErr(w, r, err)
			return
		}
		u.MaxWorkersPerKey = &n
	}
	if raw, sent := form["sequence_on_dead_letter"]; sent {
		p, err := jobs.ParseSequencePolicy(raw[0])
		if err != nil {
			d.failErr(w, r, err)
			return
		}
		u.SequenceOnDeadLetter = &p
	}
	if err := u.ValidateAtRunTime(); err != nil {
		d.failErr(w, r, err)
		return
	}
	s, err := d.store.UpdateQueue(r.Context(), name, u)
	perKey := "unlimited"
	if s.MaxWorkersPerKey > 0 {
		perKey = strconv.Itoa(s.MaxWorkersPerKey)
	}
	text := fmt.Sprintf("set queue %s: weight %d, rate limit %s, per-key limit %s, a dead letter in a sequence: %s",
		name, s.ClaimWeight(), s.RateLimit, perKey, s.SequenceOnDeadLetter)
	if shown := d.record(r, "set", text, 1, err); err != nil {
		d.failAction(w, r, err, "", shown)
		return
	}
	d.redirectWithFlash(w, r, queuePageURL(d.base, name), capitalize(text)+".")
}

// queueName is the queue a queue action names: in its path, or in the
// "queue" field for POST /queues/{action} (see queueURL).
func queueName(r *http.Request) string {
	if name := r.PathValue("name"); name != "" {
		return name
	}
	return r.PostForm.Get("queue")
}

func maxWorkersText(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return strconv.Itoa(n)
}

// parseCount reads a non-negative integer; empty is 0.
func parseCount(label, s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, badInput("%s %q: want a whole number, 0 for unlimited", label, s)
	}
	return n, nil
}

// parseSeconds reads whole seconds as a number ("90") or a Go duration
// ("90s", "2m"); empty is 0.
func parseSeconds(label, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	dur, err := time.ParseDuration(s)
	if n, nerr := strconv.Atoi(s); nerr == nil {
		dur, err = time.Duration(n)*time.Second, nil
	}
	if err != nil || dur < 0 || dur%time.Second != 0 {
		return 0, badInput("%s %q: want whole seconds, e.g. 90 or 90s or 2m (0 or empty for the default)", label, s)
	}
	if dur > jobs.MaxQueueTimeout {
		return 0, badInput("%s %q: at most %s", label, s, jobs.MaxQueueTimeout)
	}
	return dur, nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
