package webhook

import "sync/atomic"

// Waker carries "a commit wrote events" from the store to the local
// dispatcher, so that it sends them at once instead of at its next poll.
// The store is opened before the dispatcher (which is built on it), so the
// store is given Wake as its hook (store.Options.OnEvents) and the
// dispatcher is attached once it exists; until then a wake is dropped and
// the events go out at the dispatcher's first poll. Events written
// elsewhere (or on another node) go out at the next poll.
//
// The hook lives in the engine, not in a decorator around it: a wrapper
// embedding paygate.Store would hide every optional interface the engine
// implements from a type assertion.
//
// The zero Waker is ready for use; it is safe for concurrent use.
type Waker struct {
	d atomic.Pointer[Dispatcher]
}

// Attach makes Wake wake d.
func (w *Waker) Attach(d *Dispatcher) { w.d.Store(d) }

// Wake asks the attached dispatcher to look for due deliveries now; it
// never blocks.
func (w *Waker) Wake() {
	if d := w.d.Load(); d != nil {
		d.Wake()
	}
}
