package processor

import (
	"fmt"
	"reflect"
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
	perm, walkPanic := findPermanent(herr)
	f := failure{err: herr, msg: msg, permanent: perm}
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

// findPermanent is errors.As(err, new(*PermanentError)) with the tree's walk
// bounded and every method call under recover. A node that is a nil value
// is not entered. walkPanic describes what made err unsafe to walk with the
// errors package, if anything did: a method that panicked, or a chain that
// loops.
func findPermanent(err error) (found bool, walkPanic string) {
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
		if _, ok := e.(*PermanentError); ok {
			return true
		}
		var next []error
		ok := guard(&walkPanic, e, func() {
			if as, ok := e.(interface{ As(any) bool }); ok {
				var target *PermanentError
				if as.As(&target) && target != nil {
					found = true
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
		if !ok || found {
			return found
		}
		for _, n := range next {
			if walk(n, depth+1) {
				return true
			}
		}
		return false
	}
	found = walk(err, 0) || found
	return found, walkPanic
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
