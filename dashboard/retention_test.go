package dashboard

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/jobs/memstore"
	"github.com/chokaq/chokaq-go/retention"
)

const day = 24 * time.Hour

// rowOf returns the table row of the page whose attr is value, so that a
// check cannot be met by another row.
func rowOf(t *testing.T, body, attr, value string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<tr ` + attr + `="` + regexp.QuoteMeta(value) + `">.*?</tr>`).FindString(body)
	if m == "" {
		t.Fatalf("no row with %s=%q:\n%s", attr, value, body)
	}
	return m
}

func wantIn(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !regexp.MustCompile(regexp.QuoteMeta(w)).MatchString(s) {
			t.Fatalf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// retentionStore has a queue with its own retentions (a day, and forever)
// and one without.
func retentionStore(t *testing.T) *memstore.Store {
	t.Helper()
	store := memstore.New()
	ctx := context.Background()
	oneDay, forever := day, jobs.KeepForever
	_, err := store.UpdateQueue(ctx, "mail", jobs.QueueUpdate{ArchiveRetention: &oneDay, DeadLetterRetention: &forever})
	must(t, err)
	_, err = store.UpdateQueue(ctx, "plain", jobs.QueueUpdate{MaxWorkers: intp(2)})
	must(t, err)
	return store
}

// TestQueuesPageShowsRetention: each queue shows its own retentions, or
// "default" with the global value when Options.Retention gives it, and
// "global" when nothing does; read-only as text, else in the settings
// form.
func TestQueuesPageShowsRetention(t *testing.T) {
	store := retentionStore(t)
	global := &retention.Config{Archive: 3 * day} // DeadLetters: the loop's default, 30 days

	ro := newFixtureOn(t, store, Options{ReadOnly: true, Retention: global}).get("/queues")
	wantStatus(t, ro, http.StatusOK, "Archive kept", "Dead letters kept")
	wantIn(t, "mail (read-only)", rowOf(t, ro.body, "data-queue", "mail"),
		`<td data-keep="archive">1d</td>`, `<td data-keep="dead">forever</td>`)
	wantIn(t, "plain (read-only)", rowOf(t, ro.body, "data-queue", "plain"),
		`<td data-keep="archive">default <span class="sub">(3d)</span></td>`,
		`<td data-keep="dead">default <span class="sub">(30d)</span></td>`)

	rw := newFixtureOn(t, store, Options{Retention: global}).get("/queues")
	wantIn(t, "mail", rowOf(t, rw.body, "data-queue", "mail"),
		`name="archive_retention" value="1d"`, `name="dead_letter_retention" value="forever"`)
	wantIn(t, "plain", rowOf(t, rw.body, "data-queue", "plain"),
		`name="archive_retention" value="" size="8" placeholder="default (3d)"`,
		`name="dead_letter_retention" value="" size="8" placeholder="default (30d)"`)

	// A global that keeps forever says so.
	forever := newFixtureOn(t, store, Options{ReadOnly: true, Retention: &retention.Config{DeadLetters: jobs.KeepForever}}).get("/queues")
	wantIn(t, "plain (global forever)", rowOf(t, forever.body, "data-queue", "plain"),
		`<td data-keep="archive">default <span class="sub">(7d)</span></td>`,
		`<td data-keep="dead">default <span class="sub">(forever)</span></td>`)

	// Without Options.Retention the global value is unknown.
	unknown := newFixtureOn(t, store, Options{ReadOnly: true}).get("/queues")
	wantIn(t, "plain (global unknown)", rowOf(t, unknown.body, "data-queue", "plain"),
		`<td data-keep="archive">default <span class="sub">(global)</span></td>`,
		`<td data-keep="dead">default <span class="sub">(global)</span></td>`)
	wantIn(t, "mail (global unknown)", rowOf(t, unknown.body, "data-queue", "mail"), `<td data-keep="archive">1d</td>`)

	if _, err := New(store, Options{Retention: &retention.Config{Archive: time.Millisecond}}); err == nil {
		t.Fatal("New accepted a retention of 1ms")
	}
}

// TestQueueRetentionIsEdited: the settings form sets, keeps forever and
// clears each retention, leaves it alone when the field is not sent, and
// refuses what QueueUpdate.Validate refuses with a message in the form's
// words.
func TestQueueRetentionIsEdited(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	settings := func() jobs.QueueSettings {
		t.Helper()
		qs, err := f.store.Queues(ctx)
		if err != nil || len(qs) != 1 {
			t.Fatalf("queues %+v %v", qs, err)
		}
		return qs[0]
	}
	set := func(archive, dead string) {
		t.Helper()
		f.wantRedirect(f.post("/queues/mail/settings", urlValues("max_workers", "1", "archive_retention", archive, "dead_letter_retention", dead)), "/queues")
	}
	want := func(archive, dead time.Duration) {
		t.Helper()
		if s := settings(); s.ArchiveRetention != archive || s.DeadLetterRetention != dead {
			t.Fatalf("retentions %v, %v; want %v, %v", s.ArchiveRetention, s.DeadLetterRetention, archive, dead)
		}
	}

	set("7d", "36h")
	want(7*day, 36*time.Hour)
	f.wantLogged("set", "set queue mail: max workers 1, zombie timeout default, execution timeout default, archive kept 7d, dead letters kept 36h")
	wantIn(t, "the form after a save", rowOf(t, f.get("/queues").body, "data-queue", "mail"),
		`name="archive_retention" value="7d"`, `name="dead_letter_retention" value="36h"`)

	set("forever", "0")
	want(jobs.KeepForever, jobs.KeepForever)
	f.wantLogged("set", "archive kept forever, dead letters kept forever")

	set("1d12h", " FOREVER ")
	want(36*time.Hour, jobs.KeepForever)

	// A form without the fields, such as a script's, leaves them alone.
	f.wantRedirect(f.post("/queues/mail/settings", urlValues("max_workers", "3")), "/queues")
	want(36*time.Hour, jobs.KeepForever)

	set("", "default")
	want(0, 0)
	f.wantLogged("set", "archive kept default, dead letters kept default")

	set("90m", "0d")
	want(90*time.Minute, jobs.KeepForever)
	for _, c := range []struct {
		field, value string
		want         []string
	}{
		{"archive_retention", "7", []string{"archive retention &#34;7&#34;", "want a duration such as 7d"}},
		{"archive_retention", "soon", []string{"archive retention &#34;soon&#34;"}},
		{"dead_letter_retention", "-1d", []string{"dead-letter retention &#34;-1d&#34;"}},
		{"dead_letter_retention", "-5h", []string{"dead-letter retention &#34;-5h&#34;"}},
		{"archive_retention", "200000d", []string{"archive retention &#34;200000d&#34;"}},
		// Validate's rules, in the form's words too.
		{"archive_retention", "1500ms", []string{"archive retention &#34;1500ms&#34;", "archive_retention", "whole seconds", "forever or 0 keeps forever"}},
		{"dead_letter_retention", "20000d", []string{"dead-letter retention &#34;20000d&#34;", "dead_letter_retention", "18250d"}},
		{"archive_retention", "500ms", []string{"archive_retention", "between 1s and"}},
	} {
		t.Run(c.field+"="+c.value, func(t *testing.T) {
			wantStatus(t, f.post("/queues/mail/settings", urlValues(c.field, c.value)), http.StatusBadRequest, c.want...)
		})
	}
	want(90*time.Minute, jobs.KeepForever) // refused updates changed nothing
}

func TestRetentionTextRoundTrips(t *testing.T) {
	for _, d := range []time.Duration{jobs.KeepForever, time.Second, 90 * time.Second, time.Hour, 36 * time.Hour, day, 7 * day, 30 * day, jobs.MaxRetention} {
		text := retention.Text(d)
		back, err := parseRetention("r", text)
		if err != nil || back != d {
			t.Errorf("%v shows as %q, which reads back as %v, %v", d, text, back, err)
		}
	}
	for d, want := range map[time.Duration]string{jobs.KeepForever: "forever", 7 * day: "7d", 36 * time.Hour: "36h", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s"} {
		if got := retention.Text(d); got != want {
			t.Errorf("retention.Text(%v) = %q, want %q", d, got, want)
		}
	}
}
