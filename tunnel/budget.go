package tunnel

import (
	"fmt"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/guard"
)

// attach gives s its peer's budget in p, and gives it back when s ends.
func (s *Session) attach(p *guard.PeerBudgets) {
	b := p.Join(s.peer)
	s.budget = b
	s.t.AfterDone(func() { p.Leave(s.peer, b) })
}

// admit counts a stream the peer opened against the session's limit and
// its identity's, before anything of the stream is read. It returns a
// release func, and an error when the stream must be refused; abusive is
// true when the peer is so far past a limit that the session should end.
func (s *Session) admit() (release func(), abusive bool, err error) {
	in := s.in.Add(1)
	var peer int32
	if s.budget != nil {
		peer = s.budget.Open.Add(1)
	}
	release = func() {
		s.in.Add(-1)
		if s.budget != nil {
			s.budget.Open.Add(-1)
		}
	}
	switch {
	case int(in) > s.cfg.MaxStreams:
		err = fmt.Errorf("%w (%d open in this tunnel)", ErrStreamLimit, s.cfg.MaxStreams)
		abusive = int(in) > s.cfg.MaxStreams+guard.AbuseSlack
	case s.budget != nil && peer > s.budget.Limit:
		err = fmt.Errorf("%w (%d open across this polecat's tunnels)", ErrStreamLimit, s.budget.Limit)
		abusive = peer > s.budget.Limit+guard.AbuseSlack
	}
	return release, abusive, err
}
