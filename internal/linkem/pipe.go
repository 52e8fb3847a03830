package linkem

import (
	"container/heap"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// pipe forwards one direction: read reads the packets one TUN device
// gives, the shaper decides their fate, and write writes each delivered
// one to the other device at its time.
type pipe struct {
	name    string // "A→B", for errors
	in, out *os.File
	epoch   time.Time // the link's clock starts here

	mu     sync.Mutex
	shaper *shaper
	due    packets
	seq    uint64
	stats  Stats
	// wake tells write that due has a new packet, perhaps its first.
	wake chan struct{}
}

// packet is a delivered packet waiting for its time.
type packet struct {
	at   time.Duration
	seq  uint64 // ties go in the order the packets came
	data []byte
}

// packets is a min-heap of packets by time.
type packets []packet

func (q packets) Len() int { return len(q) }
func (q packets) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q packets) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *packets) Push(x any)   { *q = append(*q, x.(packet)) }
func (q *packets) Pop() any {
	old := *q
	p := old[len(old)-1]
	*q = old[:len(old)-1]
	return p
}

// newPipe gives the pipe that forwards from in to out through sh.
func newPipe(name string, in, out *os.File, sh *shaper, epoch time.Time) *pipe {
	return &pipe{name: name, in: in, out: out, shaper: sh, epoch: epoch, wake: make(chan struct{}, 1)}
}

// read admits every packet the in device gives until it is closed.
func (p *pipe) read() error {
	buf := make([]byte, 1<<16) // any IP packet, should the device's MTU be raised
	for {
		n, err := p.in.Read(buf)
		if errors.Is(err, os.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("linkem: reading %s's packets: %w", p.name, err)
		}
		now := time.Since(p.epoch)
		p.mu.Lock()
		p.stats.Packets++
		at, f := p.shaper.admit(now, n)
		switch f {
		case lost:
			p.stats.Lost++
		case overflow:
			p.stats.Overflow++
		default:
			p.seq++
			heap.Push(&p.due, packet{at, p.seq, append([]byte(nil), buf[:n]...)})
		}
		p.mu.Unlock()
		if f == delivered {
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
	}
}

// write writes each delivered packet to the out device at its time,
// until done is closed or the device is.
func (p *pipe) write(done <-chan struct{}) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		p.mu.Lock()
		var next []byte
		wait := time.Hour
		if len(p.due) > 0 {
			if wait = p.due[0].at - time.Since(p.epoch); wait <= 0 {
				next = heap.Pop(&p.due).(packet).data
			}
		}
		p.mu.Unlock()
		if next != nil {
			if _, err := p.out.Write(next); errors.Is(err, os.ErrClosed) {
				return nil
			} else if err != nil {
				return fmt.Errorf("linkem: writing %s's packets: %w", p.name, err)
			}
			p.mu.Lock()
			p.stats.Delivered++
			p.stats.Bytes += int64(len(next))
			p.mu.Unlock()
			continue
		}
		timer.Reset(wait)
		select {
		case <-p.wake:
		case <-timer.C:
		case <-done:
			return nil
		}
	}
}

// snapshot gives the direction's counters.
func (p *pipe) snapshot() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}
