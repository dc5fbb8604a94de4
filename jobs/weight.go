package jobs

// Weighted queues (ADR 0032): a queue's Weight is its share of a
// processor's claims beside the other queues that processor serves, while
// they all have work. It is a stored queue setting, so an operator changes
// it at run time and every process of a fleet reads the same weights; the
// processor orders the queues of each claim by them (the store fills a
// claim from its first queue first), so the store's claim holds no policy.

// Limits of a queue's weight.
const (
	// DefaultQueueWeight is the weight of a queue that sets none.
	DefaultQueueWeight = 1
	// MaxQueueWeight bounds a weight: 1:1000 already gives the light queue
	// one claim in a thousand, and a bound keeps the picker's sums small.
	MaxQueueWeight = 1000
)

// ClaimWeight returns the queue's weight, DefaultQueueWeight when it sets
// none (Weight 0).
func (s QueueSettings) ClaimWeight() int {
	if s.Weight <= 0 {
		return DefaultQueueWeight
	}
	return s.Weight
}

// checkWeight validates the weight of a queue update: 1 to MaxQueueWeight.
// 0 is refused rather than read as "clear": the default is 1, so setting 1
// is how a weight goes back to it.
func (u QueueUpdate) checkWeight() error {
	if n := u.Weight; n != nil && (*n < 1 || *n > MaxQueueWeight) {
		return &ValidationError{Field: "weight", Value: *n, Rule: "must be between 1 (the default) and " + itoa(MaxQueueWeight)}
	}
	return nil
}
