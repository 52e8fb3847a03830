package ca

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// NewTokenCmd is hostd token: create.
func NewTokenCmd(a *command.App) *cobra.Command {
	tok := &cobra.Command{Use: "token", Short: "One-time join tokens for fresh containers"}
	tok.AddCommand(newTokenCreateCmd(a))
	return tok
}

// tokenCreateOptions are hostd token create's flags.
type tokenCreateOptions struct {
	*command.App
	ttl  time.Duration
	json bool
}

func newTokenCreateCmd(a *command.App) *cobra.Command {
	o := &tokenCreateOptions{App: a}
	cmd := &cobra.Command{
		Use:   "create <rig>/<name>",
		Short: "Print a one-time join token bound to one polecat",
		Long: `Print a join token for one polecat. In the container,
'gt-agent up --join <token>' makes a key locally and exchanges the token for
its first certificate, so no private key is ever copied. A token works
once, only for that rig/name, and expires (default 15m). It carries the CA's
fingerprint, so the container needs no ca.crt to verify hostd. The
` + wire.NameRule + `.

With --json it prints one object: identity, token, and expires (RFC 3339;
the token works until then at least).`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
	cmd.Flags().DurationVar(&o.ttl, "ttl", pki.DefaultTokenTTL, "how long the token stays usable")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object")
	return cmd
}

// joinToken is what hostd token create --json prints.
type joinToken struct {
	Identity wire.Identity `json:"identity"`
	Token    string        `json:"token"`
	Expires  time.Time     `json:"expires"`
}

func (o *tokenCreateOptions) run(cmd *cobra.Command, args []string) error {
	id, c, err := o.OpenCAFor(args[0])
	if err != nil {
		return err
	}
	expires := time.Now().Add(o.ttl) // CreateToken's own clock reads a moment later
	t, err := c.CreateToken(id, o.ttl)
	if err != nil {
		return err
	}
	if o.json {
		return command.EncodeJSON(cmd.OutOrStdout(), joinToken{Identity: id, Token: t, Expires: expires.Truncate(time.Second).UTC()})
	}
	fmt.Fprintln(cmd.OutOrStdout(), t)
	return nil
}
