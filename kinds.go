package chokaq

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/chokaq/chokaq-go/jobs"
	"github.com/chokaq/chokaq-go/processor"
)

// KindPolicy is what a job kind declares about its jobs: queue, priority,
// attempts, execution timeout, retry backoff (NextRetry or Backoff) and
// zombie policy (docs/design.md, Policy per kind). A kind declares it on
// its Args type (ArgsWithPolicy, read by Handle and by every enqueue) or
// at registration (Registry.SetPolicy), and an operator overrides it field
// by field in Config.Kinds (appsettings ChokaQ.Kinds.<kind>.*).
type KindPolicy = processor.KindPolicy

// ArgsWithPolicy is Args whose kind brings its policy. It is the one
// mechanism of a kind's settings, next to ArgsWithOpts: Queue, Priority
// and MaxAttempts of the policy are the kind's enqueue defaults exactly as
// ArgsWithOpts' are (an ArgsWithOpts field set wins: it is the older,
// narrower form of the same level), and an Enqueue's own options win over
// both. Policy must not depend on the value (Handle calls it on the zero
// value).
type ArgsWithPolicy interface {
	Args
	// KindPolicy returns the policy of every job of this kind.
	KindPolicy() KindPolicy
}

// ErrKindsDifferOnlyByCase refuses a configuration that names two kinds
// that differ only by case: kinds compare exactly ("Mail.Welcome" and
// "mail.welcome" are two kinds), but configuration keys ignore case, so
// ChokaQ.Kinds could not tell the two apart.
var ErrKindsDifferOnlyByCase = errors.New("chokaq: two kinds differ only by case")

// checkKinds validates each configured kind's policy and refuses two
// kinds that differ only by case.
func checkKinds(kinds map[string]KindPolicy) error {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	seen := map[string]string{}
	for _, k := range names {
		if other, dup := seen[strings.ToLower(k)]; dup {
			return fmt.Errorf("%w: %q and %q (Kinds; configuration keys ignore case: rename one kind)", ErrKindsDifferOnlyByCase, other, k)
		}
		seen[strings.ToLower(k)] = k
		if err := (jobs.EnqueueParams{Type: k}).ValidateType(); err != nil {
			return fmt.Errorf("chokaq: Kinds: %w", err)
		}
		if err := kinds[k].Validate(k); err != nil {
			return fmt.Errorf("chokaq: Kinds: %w", err)
		}
	}
	return nil
}

// applyKinds writes the configured kinds' policies over reg's, field by
// field: the operator's settings win over the code's.
func applyKinds(reg *processor.Registry, kinds map[string]KindPolicy) error {
	for k, p := range kinds {
		code, _ := reg.Policy(k)
		if err := reg.SetPolicy(k, p.Over(code)); err != nil {
			return fmt.Errorf("chokaq: Kinds: %w", err)
		}
	}
	return nil
}

// policyOf is args' own policy (ArgsWithPolicy), a panic in it an error
// naming the type.
func policyOf(args Args, typ string) (p KindPolicy, err error) {
	a, ok := args.(ArgsWithPolicy)
	if !ok {
		return p, nil
	}
	defer func() {
		if r := recover(); r != nil {
			if typ == "" {
				typ = fmt.Sprintf("%T", args)
			}
			err = fmt.Errorf("%w: %s.KindPolicy() panicked: %v", jobs.ErrInvalidArgument, typ, r)
		}
	}()
	return a.KindPolicy(), nil
}

// withKind fills the enqueue options p leaves unset from kp, the kind's
// policy: job > kind > the Client's default.
func withKind(p jobs.EnqueueParams, kp KindPolicy) jobs.EnqueueParams {
	if p.Queue == "" {
		p.Queue = kp.Queue
	}
	if p.Priority == 0 {
		p.Priority = kp.Priority
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = kp.MaxAttempts
	}
	if p.Unique == nil {
		p.Unique = kp.Unique
	}
	return p
}
