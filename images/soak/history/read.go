package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLine is the longest line Read accepts, without its newline.
const MaxLine = 1 << 20

// ReadFile reads the history file at path (see Read).
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading history: %w", err)
	}
	defer f.Close()
	evs, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("reading history %s: %w", path, err)
	}
	return evs, nil
}

// Read decodes a history, one event per line, in the order written. Blank
// lines are skipped. A last line without its newline that does not decode
// (the driver was killed mid-write) is ignored; any other line that does
// not decode, has no kind, or is longer than MaxLine is an error naming
// its line number.
func Read(r io.Reader) ([]Event, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var evs []Event
	for n := 1; ; n++ {
		line, complete, err := readLine(br)
		if err != nil {
			return nil, fmt.Errorf("reading line %d: %w", n, err)
		}
		if line == nil {
			return evs, nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			if !complete {
				return evs, nil // torn last line
			}
			return nil, fmt.Errorf("decoding line %d: %w", n, err)
		}
		if e.Kind == "" {
			if !complete {
				return evs, nil
			}
			return nil, fmt.Errorf("decoding line %d: no kind", n)
		}
		evs = append(evs, e)
	}
}

// errLineTooLong is what readLine returns for a line over MaxLine.
var errLineTooLong = fmt.Errorf("line longer than %d bytes", MaxLine)

// readLine returns the next line without its newline, and whether it had
// one; nil at the end. It never holds more than MaxLine bytes of a line.
func readLine(br *bufio.Reader) (line []byte, complete bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLine+1 || (len(line)+len(chunk) == MaxLine+1 && !bytes.HasSuffix(chunk, []byte("\n"))) {
			return nil, false, errLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(line) == 0 {
				return nil, false, nil
			}
			return line, false, nil
		default:
			return nil, false, err
		}
	}
}
