package processor

import (
	"slices"
	"testing"
)

func weights(w map[string]int) func(string) int { return func(q string) int { return w[q] } }

// Over 10,000 turns a queue of weight 1 beside one of weight 9 is first
// exactly 1,000 times, once in every ten turns, and second the other nine.
func TestThePickerPutsAWeight1QueueFirstInOneTurnOfTen(t *testing.T) {
	pk := newPicker([]string{"light", "heavy"})
	w := weights(map[string]int{"light": 1, "heavy": 9})
	first := map[string]int{}
	for turn := range 10000 {
		qs := pk.next(w)
		if len(qs) != 2 || qs[0] == qs[1] {
			t.Fatalf("turn %d: queues %v, want both, once each", turn, qs)
		}
		first[qs[0]]++
		if turn%10 == 9 && first["light"] != turn/10+1 {
			t.Fatalf("after %d turns light was first %d times, want %d: its turns are not spread", turn+1, first["light"], turn/10+1)
		}
	}
	if first["light"] != 1000 || first["heavy"] != 9000 {
		t.Fatalf("first over 10,000 turns: %v, want light 1000, heavy 9000", first)
	}
}

func TestThePickerAlternatesQueuesOfEqualWeight(t *testing.T) {
	pk := newPicker([]string{"a", "b", "c"})
	w := weights(map[string]int{"a": 5, "b": 5, "c": 5})
	for turn := range 30 {
		want := []string{"a", "b", "c"}[turn%3]
		if qs := pk.next(w); qs[0] != want || !slices.Contains(qs, "a") || !slices.Contains(qs, "b") || !slices.Contains(qs, "c") {
			t.Fatalf("turn %d: queues %v, want %s first and every queue once", turn, qs, want)
		}
	}
}

// The queues after the first follow by how soon their turn comes: a claim
// its first queue cannot fill goes on to the queue owed a turn most.
func TestThePickerOrdersTheRestByTheirTurn(t *testing.T) {
	pk := newPicker([]string{"a", "b", "c"})
	w := weights(map[string]int{"a": 1, "b": 2, "c": 6})
	// Turn 1: currents 1, 2, 6: c first, then b, then a.
	if qs := pk.next(w); !slices.Equal(qs, []string{"c", "b", "a"}) {
		t.Fatalf("first turn %v, want [c b a]", qs)
	}
	// Turn 2: 2, 4, 3 (c paid 9): b first, then c, then a.
	if qs := pk.next(w); !slices.Equal(qs, []string{"b", "c", "a"}) {
		t.Fatalf("second turn %v, want [b c a]", qs)
	}
}

func TestThePickerOfOneQueueAsksIt(t *testing.T) {
	pk := newPicker([]string{"only"})
	if qs := pk.next(weights(nil)); !slices.Equal(qs, []string{"only"}) {
		t.Fatalf("queues %v", qs)
	}
}
