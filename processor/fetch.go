package processor

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/chokaq/chokaq-go/jobs"
)

// maxClaimsInFlight is how many claims the fetch loop keeps out at once
// under load: with one, the claim's round trip caps a processor at one
// batch per round trip (20 jobs per 600 us behind a 500 us store), however
// many workers wait; with two, the next claim is in flight while the last
// batch is still being started.
const maxClaimsInFlight = 2

// claimed is the answer to one claim.
type claimed struct {
	got   []*jobs.Job
	held  []jobs.QueueHold // the queues a rate limit holds, and for how long
	err   error
	limit int
	at    time.Time // when the claim was sent: the jobs' age counts from here
}

// fetchState is what the fetch loop knows between claims.
type fetchState struct {
	wait, errWait time.Duration // before the next claim; after a failed one
	full          bool          // the last claim came back full: the queues have more
	refreshed     time.Time     // the paused view (and the weights) was last read
	pick          *picker       // orders each claim's queues by weight
	// held maps a queue (jobs.QueueKey) its rate limit holds to when its
	// window closes, by this process's clock (ADR 0033): no claim or probe
	// asks for it before then.
	held map[string]time.Time
	// idle: the last claim came back empty, so the next poll probes
	// before it claims (when the store can probe).
	idle bool
}

// fetchLoop keeps the buffer filled. It claims min(BatchSize, free space)
// once a whole batch fits, counting the room the claims in flight will
// take (a claim per freed slot would cost a store call per job). While
// claims come back full it keeps up to maxClaimsInFlight out at once, so
// workers do not idle while a claim travels; after a partial claim it
// waits PollInterval/10, and while the queues are empty it backs off to
// PollInterval, each wait stretched by up to PollJitter so a fleet does
// not poll in step. Once a claim came back empty, the polls that follow
// probe (jobs.Prober, ADR 0027) and claim only when the probe sees work;
// a Notify claims at once. It claims nothing while heartbeats fail.
func (p *Processor) fetchLoop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	fs := fetchState{wait: p.minPoll, errWait: p.cfg.PollInterval, pick: newPicker(p.cfg.Queues), held: map[string]time.Time{}}
	done := make(chan claimed, maxClaimsInFlight)
	inFlight, reserved := 0, 0
	var nextAt time.Time // no claim before
	for {
		select {
		case <-ctx.Done():
			// A claim still out hands its jobs back (the buffer is
			// closing): wait for each, so none outlives the loop.
			for ; inFlight > 0; inFlight-- {
				p.claimedJobs(ctx, <-done, &fs)
			}
			return
		case <-p.wakeFetch:
			nextAt, fs.idle = time.Time{}, false // a local enqueue or room: claim, no probe
		case <-timer.C:
		case c := <-done:
			inFlight--
			reserved -= c.limit
			p.claimedJobs(ctx, c, &fs)
			nextAt = time.Now().Add(p.jittered(fs.wait))
		}
		// The paused view judges buffered jobs, and the weights order the
		// claims of two or more queues: read them at most once per five
		// polls, and not at all for one queue with nothing buffered.
		if (p.buf.len() > 0 || len(p.cfg.Queues) > 1) && time.Since(fs.refreshed) > 5*p.cfg.PollInterval {
			p.refreshPaused(ctx)
			fs.refreshed = time.Now()
		}
		p.releaseStale(ctx)

		for inFlight < maxClaimsInFlight && (inFlight == 0 || fs.full) && !time.Now().Before(nextAt) {
			room := p.buf.free() - reserved
			if p.hb.failing.Load() || room < min(p.cfg.BatchSize, p.cfg.PrefetchSize) {
				// Wait for the beats to recover, or for a worker to make
				// room for a whole batch (it wakes the loop).
				nextAt = time.Now().Add(p.cfg.PollInterval)
				break
			}
			open, until := fs.unheld(p.cfg.Queues, time.Now())
			if len(open) == 0 {
				nextAt = until // every queue waits for its window
				break
			}
			if inFlight == 0 && fs.idle && !p.probe(ctx, &fs, open) {
				nextAt = earliest(time.Now().Add(p.jittered(fs.wait)), until)
				break
			}
			n := min(p.cfg.BatchSize, room)
			queues := fs.pick.next(p.paused.Load().weightOf)
			if len(open) < len(p.cfg.Queues) {
				queues = slices.DeleteFunc(slices.Clone(queues), func(q string) bool { return !slices.Contains(open, q) })
			}
			inFlight++
			reserved += n
			go func() {
				at := time.Now()
				c := claimed{limit: n, at: at}
				params := jobs.ClaimParams{WorkerID: p.cfg.WorkerID, Queues: queues, Limit: n}
				if p.rates != nil {
					var r jobs.ClaimResult
					r, c.err = p.rates.ClaimHeld(ctx, params)
					c.got, c.held = r.Jobs, r.Held
				} else {
					c.got, c.err = p.store.Claim(ctx, params)
				}
				done <- c
			}()
		}
		if inFlight == 0 {
			if _, until := fs.unheld(p.cfg.Queues, time.Now()); !until.IsZero() {
				nextAt = earliest(nextAt, until) // wake when a window closes
			}
			timer.Reset(max(time.Until(nextAt), 0))
		}
	}
}

// unheld returns the queues no rate limit holds at now, and when the
// first hold ends (zero if none holds), forgetting the holds that ended.
func (fs *fetchState) unheld(queues []string, now time.Time) ([]string, time.Time) {
	if len(fs.held) == 0 {
		return queues, time.Time{}
	}
	var open []string
	var until time.Time
	for _, q := range queues {
		end, ok := fs.held[jobs.QueueKey(q)]
		switch {
		case !ok:
			open = append(open, q)
		case !now.Before(end):
			delete(fs.held, jobs.QueueKey(q))
			open = append(open, q)
		default:
			until = earliest(until, end)
		}
	}
	return open, until
}

// earliest is the earlier of two instants, a zero one counting as none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// claimedJobs buffers what a claim returned and sets the wait before the
// next claim by how full it came back.
func (p *Processor) claimedJobs(ctx context.Context, c claimed, fs *fetchState) {
	if len(c.got) > 0 {
		out := make([]*fetched, len(c.got))
		block := make([]fetched, len(c.got)) // one allocation for the claim
		view := p.paused.Load()
		for i, j := range c.got {
			block[i] = fetched{job: j, claimedAt: c.at}
			out[i] = &block[i]
			if view.queues[j.Queue] {
				fs.refreshed = time.Time{} // the store gave jobs of a queue we think paused: look again
			}
		}
		p.stats.claimed.Add(int64(len(c.got)))
		p.cfg.Observer.JobsClaimed(c.got)
		if !p.buf.push(out) {
			// Stop closed the buffer while this claim was out (its
			// context ended before the fetch loop did): hand the jobs
			// back now rather than leave them Fetched until rescue
			// phase 1.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			p.release(rctx, out, "processor stopping")
			cancel()
		}
	}
	for _, h := range c.held {
		// From now, not from the send: the store measured it when it ran,
		// so a window is never asked for before it closes.
		fs.held[jobs.QueueKey(h.Queue)] = time.Now().Add(h.For)
	}
	fs.full = c.err == nil && len(c.got) == c.limit
	fs.idle = c.err == nil && len(c.got) == 0
	switch {
	case c.err != nil && ctx.Err() == nil:
		p.stats.storeErrors.Add(1)
		p.log.Warn("claim failed; backing off", zap.Duration("wait", fs.errWait), zap.Error(c.err))
		fs.wait = fs.errWait
		fs.errWait = min(fs.errWait*2, 10*p.cfg.PollInterval)
	case fs.full:
		fs.wait, fs.errWait = 0, p.cfg.PollInterval
	case len(c.got) > 0:
		fs.wait, fs.errWait = p.minPoll, p.cfg.PollInterval
	default:
		fs.wait = min(max(fs.wait*2, p.minPoll), p.cfg.PollInterval)
		fs.errWait = p.cfg.PollInterval
	}
}

// probe asks the store whether a claim would find work, and sets the wait
// before the next poll when it would not. A store that cannot probe, or a
// probe that fails, is answered by claiming: the claim decides, and a
// failing store backs off as a failed claim does.
func (p *Processor) probe(ctx context.Context, fs *fetchState, queues []string) bool {
	if p.prober == nil {
		return true
	}
	due, err := p.prober.Probe(ctx, queues)
	switch {
	case err != nil && ctx.Err() == nil:
		p.stats.storeErrors.Add(1)
		p.log.Warn("probe failed; backing off", zap.Duration("wait", fs.errWait), zap.Error(err))
		fs.wait = fs.errWait
		fs.errWait = min(fs.errWait*2, 10*p.cfg.PollInterval)
		return false
	case err != nil:
		return false // stopping
	case due:
		return true
	}
	fs.wait = min(max(fs.wait*2, p.minPoll), p.cfg.PollInterval)
	fs.errWait = p.cfg.PollInterval
	return false
}

// jittered stretches a wait by a random part of up to PollJitter of it, so
// processors started together drift apart rather than poll in step.
func (p *Processor) jittered(d time.Duration) time.Duration {
	if d <= 0 || p.jitter <= 0 {
		return d
	}
	return d + time.Duration(rand.Float64()*p.jitter*float64(d))
}
