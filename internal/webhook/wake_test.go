package webhook

import "testing"

// A wake before the dispatcher is attached is dropped (its first poll finds
// the events); after, it reaches the dispatcher.
func TestWaker(t *testing.T) {
	t.Parallel()
	var w Waker
	w.Wake()
	d := &Dispatcher{wake: make(chan struct{}, 1)} // as NewDispatcher makes it
	w.Attach(d)
	w.Wake()
	w.Wake() // never blocks, even when a wake is pending
	select {
	case <-d.wake:
	default:
		t.Fatal("the attached dispatcher was not woken")
	}
	select {
	case <-d.wake:
		t.Fatal("two pending wakes: want them merged into one")
	default:
	}
}
