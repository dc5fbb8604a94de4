package telemetry

import (
	"sync"

	"go.uber.org/zap"
)

// Other replaces a queue or type value once its label has reached
// Options.MaxLabelValues distinct values.
const Other = "other"

// labelCap admits at most max distinct values of one label. A time series
// per value costs memory in this process and in every scraper, and queue
// and type names come from callers, so the set must not grow without bound.
type labelCap struct {
	key    string
	max    int
	log    *zap.Logger
	mu     sync.RWMutex
	seen   map[string]struct{}
	warned bool
}

func newLabelCap(key string, max int, log *zap.Logger) *labelCap {
	return &labelCap{key: key, max: max, log: log, seen: map[string]struct{}{}}
}

// value returns v if it is already admitted or there is room for it, else
// Other.
func (c *labelCap) value(v string) string {
	c.mu.RLock()
	_, ok := c.seen[v]
	full := len(c.seen) >= c.max
	c.mu.RUnlock()
	if ok {
		return v
	}
	if full {
		c.warnOnce(v)
		return Other
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[v]; ok {
		return v
	}
	if len(c.seen) >= c.max {
		c.warnLocked(v)
		return Other
	}
	c.seen[v] = struct{}{}
	return v
}

func (c *labelCap) warnOnce(v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.warnLocked(v)
}

func (c *labelCap) warnLocked(v string) {
	if c.warned {
		return
	}
	c.warned = true
	c.log.Warn("metric label cap reached: further values are recorded as \""+Other+"\"",
		zap.String("label", c.key), zap.Int("max", c.max), zap.String("first_dropped", v))
}
