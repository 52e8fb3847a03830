package relay

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// errStdinStalled is a command leaving its stdin unread with the budget
// full.
var errStdinStalled = errors.New("the command stopped reading its stdin")

// stdinQueue feeds a command's stdin from the shim's frames. Stdin queues
// in hostd's memory up to a budget, so the frame reader keeps draining the
// tunnel stream (a command that does not read cannot hold the tunnel's
// flow-control window, which its other streams share). Past the budget
// the reader waits for the command to read; if it reads nothing for the
// stall limit, the command is killed.
type stdinQueue struct {
	max   int
	stall time.Duration
	room  chan struct{} // signalled whenever the command reads
	done  chan struct{} // closed when the queue is abandoned
	once  sync.Once

	mu     sync.Mutex
	more   *sync.Cond
	bufs   [][]byte
	queued int
	ended  bool // no more input: the stdin-closed frame, or abandon
}

func newStdinQueue(max int, stall time.Duration) *stdinQueue {
	q := &stdinQueue{max: max, stall: stall, room: make(chan struct{}, 1), done: make(chan struct{})}
	q.more = sync.NewCond(&q.mu)
	return q
}

// push queues p, waiting while the budget is full and the command is
// reading; it fails when the command reads nothing for the stall limit.
func (q *stdinQueue) push(p []byte) error {
	var timer *time.Timer
	for {
		q.mu.Lock()
		switch {
		case q.ended:
			q.mu.Unlock()
			return nil // the command closed its stdin: the rest is dropped, as a pipe would
		case q.queued == 0 || q.queued+len(p) <= q.max:
			q.bufs = append(q.bufs, append([]byte(nil), p...))
			q.queued += len(p)
			q.more.Signal()
			q.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return nil
		}
		q.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(q.stall)
		}
		select {
		case <-q.room:
			timer.Reset(q.stall)
		case <-q.done:
			timer.Stop()
			return nil
		case <-timer.C:
			return fmt.Errorf("%w for %v with %d bytes waiting (relay.stdin_stall, relay.max_stdin_buffer)", errStdinStalled, q.stall, q.max)
		}
	}
}

// end says no more input will come; what is queued is still written.
func (q *stdinQueue) end() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ended = true
	q.more.Signal()
}

// abandon drops what is queued and ends the queue.
func (q *stdinQueue) abandon() {
	q.mu.Lock()
	q.bufs, q.queued, q.ended = nil, 0, true
	q.more.Signal()
	q.mu.Unlock()
	q.once.Do(func() { close(q.done) })
}

// feed writes the queue to w until it ends or a write fails (the command
// closed its stdin, or exited and w was closed), then closes w.
func (q *stdinQueue) feed(w io.WriteCloser) {
	defer w.Close()
	for {
		q.mu.Lock()
		for len(q.bufs) == 0 && !q.ended {
			q.more.Wait()
		}
		if len(q.bufs) == 0 {
			q.mu.Unlock()
			return
		}
		b := q.bufs[0]
		q.bufs = q.bufs[1:]
		q.mu.Unlock()
		_, err := w.Write(b)
		q.mu.Lock()
		q.queued -= len(b)
		q.mu.Unlock()
		select {
		case q.room <- struct{}{}:
		default:
		}
		if err != nil {
			q.abandon()
			return
		}
	}
}
