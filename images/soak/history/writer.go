package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// FlushInterval is the longest a Writer holds an added event before
// writing it to the file: what a killed driver can lose.
const FlushInterval = 100 * time.Millisecond

// Writer appends events to a history file. It is safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	buf    *bufio.Writer
	err    error // the first error writing, returned by Close and Err
	closed bool
	base   time.Time // wall clock at Create, with its monotonic reading
	stop   chan struct{}
	done   chan struct{}
}

// Create creates (or truncates) the history file at path and starts
// flushing what is added to it every FlushInterval.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating history: %w", err)
	}
	w := &Writer{
		f:    f,
		buf:  bufio.NewWriterSize(f, 64<<10),
		base: time.Now(),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go w.flusher()
	return w, nil
}

// flusher flushes the buffer every FlushInterval until Close.
func (w *Writer) flusher() {
	defer close(w.done)
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			if !w.closed && w.buf.Buffered() > 0 {
				w.fail(w.buf.Flush())
			}
			w.mu.Unlock()
		}
	}
}

// fail records err as the Writer's error when it is the first.
func (w *Writer) fail(err error) {
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("writing history %s: %w", w.f.Name(), err)
	}
}

// Now is the Writer's clock, which Add stamps events with: the wall clock
// at Create advanced by the monotonic clock, so that stepping the system
// clock (a clock-step fault) neither reorders nor shifts the history.
// Drivers that set Event.T themselves should take it from here.
func (w *Writer) Now() time.Time {
	return w.base.Add(time.Since(w.base)).Round(0)
}

// Add appends e as one line, setting e.T to Now() when it is zero. Events
// added after Close are dropped; an error writing is kept for Err and
// Close.
func (w *Writer) Add(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if e.T.IsZero() {
		e.T = w.Now() // under the lock, so the file's order is T's order
	}
	line, err := json.Marshal(e)
	if err != nil {
		w.fail(fmt.Errorf("encoding %s %s event: %w", e.Kind, e.Phase, err))
		return
	}
	line = append(line, '\n')
	_, err = w.buf.Write(line)
	w.fail(err)
}

// Err returns the first error adding events, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes what is buffered, syncs and closes the file, and returns
// the first error adding or writing events.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done

	w.mu.Lock()
	defer w.mu.Unlock()
	w.fail(w.buf.Flush())
	w.fail(w.f.Sync())
	if err := w.f.Close(); err != nil {
		w.fail(err)
	}
	return w.err
}
