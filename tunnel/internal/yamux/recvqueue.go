package yamux

import "sync"

// recvChunkSize is the size of the pooled buffers a stream's received data
// is read into (patch; see doc.go).
const recvChunkSize = 64 << 10

// chunkPool holds *[]byte of recvChunkSize.
var chunkPool = sync.Pool{New: func() any {
	b := make([]byte, recvChunkSize)
	return &b
}}

// getChunk takes a buffer from the pool.
func getChunk() *[]byte { return chunkPool.Get().(*[]byte) }

// putChunk returns a buffer to the pool.
func putChunk(c *[]byte) { chunkPool.Put(c) }

// recvQueue is a stream's received bytes, in the chunks they were read
// into; the caller holds the stream's recvLock. Its zero value is empty.
type recvQueue struct {
	chunks []recvChunk
	off    int // bytes of chunks[0] already read
	n      int // bytes held
}

// recvChunk is one pooled buffer and how much of it is filled.
type recvChunk struct {
	buf *[]byte
	n   int
}

// Len is how many bytes the queue holds.
func (q *recvQueue) Len() int { return q.n }

// push appends the first n bytes of c; the queue owns c from then on. A
// piece that fits in the last chunk's free space is copied there and c
// goes back to the pool, so a peer sending many small frames cannot make
// each pin a whole chunk: every chunk but the last is at least half full,
// and the queue holds at most about twice its bytes.
func (q *recvQueue) push(c *[]byte, n int) {
	if k := len(q.chunks); k > 0 && n < recvChunkSize {
		last := &q.chunks[k-1]
		if len(*last.buf)-last.n >= n {
			copy((*last.buf)[last.n:], (*c)[:n])
			last.n += n
			q.n += n
			putChunk(c)
			return
		}
	}
	q.chunks = append(q.chunks, recvChunk{c, n})
	q.n += n
}

// Read copies up to len(p) bytes out, returning each chunk emptied to the
// pool.
func (q *recvQueue) Read(p []byte) int {
	n := 0
	for n < len(p) && len(q.chunks) > 0 {
		c := q.chunks[0]
		k := copy(p[n:], (*c.buf)[q.off:c.n])
		n += k
		q.off += k
		if q.off == c.n {
			putChunk(c.buf)
			q.chunks[0] = recvChunk{}
			q.chunks = q.chunks[1:]
			q.off = 0
		}
	}
	q.n -= n
	if len(q.chunks) == 0 {
		q.chunks = q.chunks[:0:0] // let the emptied backing array go
	}
	return n
}
