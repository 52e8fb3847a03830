package yamux

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestRecvQueue: bytes pushed in chunks come out in order, whatever the
// sizes of the reads, and Len follows.
func TestRecvQueue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []int // bytes per pushed chunk
		reads  []int // sizes of successive reads
	}{
		{"one chunk, one read", []int{100}, []int{100}},
		{"one chunk, small reads", []int{100}, []int{30, 30, 30, 30}},
		{"read across chunks", []int{10, 20, 30}, []int{55, 10}},
		{"full chunks", []int{recvChunkSize, recvChunkSize, 1}, []int{recvChunkSize + 7, recvChunkSize}},
		{"read larger than held", []int{5}, []int{1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q recvQueue
			var want []byte
			next := byte(0)
			for _, n := range tc.chunks {
				c := getChunk()
				for i := range n {
					(*c)[i] = next
					next++
				}
				want = append(want, (*c)[:n]...)
				q.push(c, n)
			}
			if q.Len() != len(want) {
				t.Fatalf("Len %d after pushing %d bytes", q.Len(), len(want))
			}
			var got []byte
			for _, r := range tc.reads {
				p := make([]byte, r)
				n := q.Read(p)
				expect := len(want) - len(got) // yamux's own min is for uint32
				if r < expect {
					expect = r
				}
				if n != expect {
					t.Fatalf("read of %d returned %d, want %d", r, n, expect)
				}
				got = append(got, p[:n]...)
				if q.Len() != len(want)-len(got) {
					t.Fatalf("Len %d, want %d", q.Len(), len(want)-len(got))
				}
			}
			if !bytes.Equal(got, want[:len(got)]) {
				t.Fatal("bytes came out changed or out of order")
			}
		})
	}
}

// TestRecvQueueSmallPieces: a hostile peer's one-byte frames, or frames
// just over half a chunk, never pin more than about twice the bytes held.
func TestRecvQueueSmallPieces(t *testing.T) {
	for _, size := range []int{1, 100, recvChunkSize/2 + 1, recvChunkSize - 1} {
		var q recvQueue
		total := 4 << 20 // a whole default stream window
		if size == 1 {
			total = 4 * recvChunkSize // 4 Mi one-byte pushes took 40 s under -race
		}
		for q.Len()+size <= total {
			q.push(getChunk(), size)
		}
		pinned := len(q.chunks) * recvChunkSize
		if pinned > 2*q.Len()+recvChunkSize {
			t.Errorf("pieces of %d bytes: %d bytes held pin %d chunks (%d bytes)", size, q.Len(), len(q.chunks), pinned)
		}
	}
}

// TestDataFrameWithFINArrivingSlowly: a data frame carrying FIN whose body
// arrives slowly is read whole before EOF. With the FIN applied before the
// body is queued, a reader emptying the queue mid-frame saw EOF.
func TestDataFrameWithFINArrivingSlowly(t *testing.T) {
	peer, conn := net.Pipe()
	defer peer.Close()
	server, err := Server(conn, testConfNoKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	frame := func(typ uint8, flags uint16, length uint32) []byte {
		h := header(make([]byte, headerSize))
		h.encode(typ, flags, 1, length)
		return h
	}
	body := make([]byte, 3*recvChunkSize/2)
	for i := range body {
		body[i] = byte(i % 251)
	}
	go func() {
		// Open stream 1, then send its data with FIN: the header and a
		// little at once, the rest after a pause.
		_, _ = peer.Write(frame(typeWindowUpdate, flagSYN, 0))
		_, _ = peer.Write(append(frame(typeData, flagFIN, uint32(len(body))), body[:10]...))
		time.Sleep(100 * time.Millisecond)
		_, _ = peer.Write(body[10:])
		_, _ = io.Copy(io.Discard, peer) // the server's window updates
	}()
	st, err := server.AcceptStream()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(st)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("read %d of %d bytes before EOF", len(got), len(body))
	}
}
