//go:build linux

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/creds"
	"github.com/polecat-sidecar/sidecar/agent/supervisor"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// credentials loads the agent's certificate, or joins with the one-time
// token (--join, or read from --join-file only now) when there is no
// usable one.
func (c *upRun) credentials(ctx context.Context) (*creds.Store, error) {
	paths := creds.Paths{
		Cert: orDefault(c.Cert, filepath.Join(c.StateDir, "client.crt")),
		Key:  orDefault(c.Key, filepath.Join(c.StateDir, "client.key")),
		CA:   orDefault(c.CA, filepath.Join(c.StateDir, "ca.crt")),
	}
	store, err := creds.Load(paths)
	if err != nil && c.Join == "" && c.JoinFile != "" {
		b, readErr := os.ReadFile(c.JoinFile)
		if readErr != nil {
			return nil, fmt.Errorf("no usable certificate (%v), and the join token file cannot be read: %w", err, readErr)
		}
		c.Join = strings.TrimSpace(string(b))
	}
	switch token := c.Join; {
	case err != nil && token != "":
		return c.join(ctx, paths, token, err)
	case err == nil && token != "":
		slog.Info("already have a valid certificate; --join not needed", "cert", paths.Cert)
	}
	return store, err
}

// join exchanges token for the agent's first certificate, with a key made
// here, and saves them at paths; why is what was wrong with the
// certificate there.
func (c *upRun) join(ctx context.Context, paths creds.Paths, token string, why error) (*creds.Store, error) {
	id, err := joinIdentity(c.Identity)
	if err != nil {
		return nil, err
	}
	slog.Info("no usable certificate; joining with token", "identity", id, "addr", c.addr, "because", why)
	// A hostd not reached is waited for as the tunnel's first connection
	// is (--connect-timeout): a container may start before hostd does.
	limit := cmp.Or(c.Supervisor.ConnectTimeout, supervisor.DefaultConfig().ConnectTimeout)
	deadline := time.Now().Add(limit)
	var store *creds.Store
	for wait := joinRetry; ; wait = min(2*wait, joinRetryMax) {
		store, err = creds.Join(ctx, c.addr, c.serverName, paths, token, id)
		if _, unreachable := errors.AsType[*creds.UnreachableError](err); !unreachable {
			break
		}
		if time.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("join: cannot reach hostd at %s after %v (is 'hostd serve' running and reachable?): %w", c.addr, limit.Round(time.Second), err)
		}
		slog.Warn("join: hostd not reachable yet; retrying", "addr", c.addr, "in", wait, "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	slog.Info("joined; certificate saved", "cert", paths.Cert, "not_after", store.Leaf().NotAfter)
	return store, nil
}

// joinRetry and joinRetryMax bound the wait between joins that found no
// hostd: 100 ms, doubling to 2 s.
const (
	joinRetry    = 100 * time.Millisecond
	joinRetryMax = 2 * time.Second
)

// parseProxyURL turns GT_PROXY_URL (https://<host>[:port]) into a dial
// address and the server name to verify.
func parseProxyURL(raw string) (addr, serverName string, err error) {
	if raw == "" {
		return "", "", errors.New("no hostd URL: set GT_PROXY_URL or --url (https://<host>:9876)")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", "", fmt.Errorf("hostd URL %q: want https://<host>[:port]", raw)
	}
	port := u.Port()
	if port == "" {
		port = strconv.Itoa(wire.DefaultPort)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("hostd URL %q: bad port", raw)
	}
	return net.JoinHostPort(u.Hostname(), port), u.Hostname(), nil
}

func joinIdentity(flag string) (wire.Identity, error) {
	if flag == "" {
		rig, name := os.Getenv("GT_RIG"), os.Getenv("GT_POLECAT")
		if rig == "" || name == "" {
			return wire.Identity{}, errors.New("joining needs --identity <rig>/<name> (or GT_RIG and GT_POLECAT)")
		}
		flag = rig + "/" + name
	}
	return wire.ParseIdentity(flag)
}
