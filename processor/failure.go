package processor

import (
	"fmt"
	"reflect"
	"time"
)

// Bounds of the walk of an error tree. An Unwrap chain that loops (an error
// that unwraps to itself) would otherwise hang the worker, as it hangs
// errors.Is and errors.As; the depth bound ends one loop and lets the walk go
// on to the next branch of a joined error, the node bound caps a wide tree.
const (
	maxErrorDepth = 64
	maxErrorNodes = 4096
)

// failure is what the processor reads out of a handler's error, once, under
// recover. Handlers may return any value that satisfies error: a typed nil
// pointer (var e *MyErr; return e), an Error or Unwrap method that panics, a
// chain that loops. Everything the processor does with that value afterwards
// (the outcome's choice, the stored text, log lines, the observer) uses this
// snapshot, so nothing a handler returns can panic or hang a worker.
type failure struct {
	// err is safe to hand to observers: the handler's own error when it
	// behaved, else a *StrangeError describing it.
	err       error
	msg       string
	permanent bool
	// cancel: the handler returned Cancel(err); snooze: Snooze(d), with
	// snoozeFor its delay.
	cancel, snooze bool
	snoozeFor      time.Duration
}

// StrangeError stands in for a handler error the processor could not use as
// it is: a nil pointer returned as an error, or one whose methods panicked.
// The job is settled as an ordinary failure with Message as its error text.
type StrangeError struct {
	// Type is the dynamic type of the handler's error, e.g. "*os.PathError".
	Type    string
	Message string
}

// Error returns the message read safely from the handler's error.
func (e *StrangeError) Error() string { return e.Message }

// inspect reads herr (non-nil) into a failure.
func inspect(herr error) failure {
	if isNilValue(herr) {
		msg := fmt.Sprintf("the handler returned a nil %T as its error: a typed nil pointer is a non-nil error, not success (return a literal nil to succeed)", herr)
		return failure{err: &StrangeError{Type: fmt.Sprintf("%T", herr), Message: msg}, msg: msg}
	}
	msg, panicked := safeMessage(herr)
	walkPanic, mark := findMark(herr)
	f := failure{err: herr, msg: msg}
	switch m := mark.(type) {
	case *PermanentError:
		f.permanent = true
	case *CancelError:
		f.cancel = true
	case *SnoozeError:
		f.snooze, f.snoozeFor = true, max(m.Delay, 0)
	}
	if panicked || walkPanic != "" {
		if walkPanic != "" && !panicked {
			f.msg = msg + " (" + walkPanic + ")"
		}
		f.err = &StrangeError{Type: fmt.Sprintf("%T", herr), Message: f.msg}
	}
	return f
}

// safeMessage is err.Error(), or a description of its panic.
func safeMessage(err error) (msg string, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			msg, panicked = fmt.Sprintf("the handler's error (%T) panicked in its Error method: %v", err, r), true
		}
	}()
	return err.Error(), false
}

// isNilValue reports whether err is a non-nil interface holding a nil
// pointer (or another nil-able kind), whose methods would most likely
// dereference nil.
func isNilValue(err error) bool {
	v := reflect.ValueOf(err)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}

// findMark finds, as errors.As would, the first *PermanentError,
// *CancelError or *SnoozeError in err's tree, with the walk bounded and
// every method call under recover. A node that is a nil value is not
// entered. walkPanic describes what made err unsafe to walk with the
// errors package, if anything did: a method that panicked, or a chain that
// loops.
func findMark(err error) (walkPanic string, mark error) {
	visited := 0
	var walk func(e error, depth int) bool
	walk = func(e error, depth int) bool {
		if e == nil {
			return false
		}
		if isNilValue(e) {
			if walkPanic == "" {
				walkPanic = fmt.Sprintf("its chain holds a nil %T, which errors.Is and errors.As would call", e)
			}
			return false
		}
		if depth > maxErrorDepth || visited >= maxErrorNodes {
			if walkPanic == "" {
				walkPanic = fmt.Sprintf("its chain of wrapped errors is deeper than %d or loops", maxErrorDepth)
			}
			return false
		}
		visited++
		switch e.(type) {
		case *PermanentError, *CancelError, *SnoozeError:
			mark = e
			return true
		}
		var next []error
		ok := guard(&walkPanic, e, func() {
			if as, ok := e.(interface{ As(any) bool }); ok {
				var p *PermanentError
				var c *CancelError
				var z *SnoozeError
				switch {
				case as.As(&p) && p != nil:
					mark = p
				case as.As(&c) && c != nil:
					mark = c
				case as.As(&z) && z != nil:
					mark = z
				}
				if mark != nil {
					return
				}
			}
			switch u := e.(type) {
			case interface{ Unwrap() error }:
				next = []error{u.Unwrap()}
			case interface{ Unwrap() []error }:
				next = u.Unwrap()
			}
		})
		if !ok || mark != nil {
			return mark != nil
		}
		for _, n := range next {
			if walk(n, depth+1) {
				return true
			}
		}
		return false
	}
	walk(err, 0)
	return walkPanic, mark
}

// guard runs fn, recording in *why a panic of one of e's methods.
func guard(why *string, e error, fn func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if *why == "" {
				*why = fmt.Sprintf("a %T in its chain panicked in Unwrap or As: %v", e, r)
			}
			ok = false
		}
	}()
	fn()
	return true
}
