package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func (a *app) caCmd() *cobra.Command {
	ca := &cobra.Command{Use: "ca", Short: "Manage the town's certificate authority"}
	ca.AddCommand(&cobra.Command{
		Use:   "init",
		Short: "Create the CA at <town>/.runtime/ca (or reuse the one already there)",
		Long: `Create the CA at <town>/.runtime/ca/ca.crt and ca.key (key mode 0600,
directory 0700). A CA already there, including one made by Gas Town's proxy,
is reused unchanged.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, created, err := pki.Init(pki.Dir(a.town()), a.v.GetString("trust_domain"))
			if err != nil {
				return err
			}
			verb := "reusing existing"
			if created {
				verb = "created"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s CA %s\n  certificate: %s\n  expires:     %s\n", verb,
				c.Cert.Subject.CommonName, filepath.Join(c.Dir, pki.CertFile), c.Cert.NotAfter.Format(time.RFC3339))
			return nil
		},
	})
	return ca
}

func (a *app) certCmd() *cobra.Command {
	cert := &cobra.Command{Use: "cert", Short: "Issue, revoke and list polecat certificates"}

	issue := &cobra.Command{
		Use:   "issue <rig>/<name>",
		Short: "Issue a polecat certificate: writes client.crt, client.key and ca.crt",
		Long: `Issue a certificate for one polecat. The identity goes into a URI SAN
(spiffe://<trust-domain>/rig/<rig>/polecat/<name>), which is all hostd reads
for authorization; the CN gt-<rig>-<name> is kept for compatibility. Rig
names match [A-Za-z0-9_-]+, polecat names [A-Za-z0-9_]+.

Prefer 'hostd token create' with 'gt-agent up --join' where you can: then the
private key is made inside the container and never copied.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := wire.ParseIdentity(args[0])
			if err != nil {
				return err
			}
			ttl, _ := cmd.Flags().GetDuration("ttl")
			out, _ := cmd.Flags().GetString("out")
			c, err := a.openCA()
			if err != nil {
				return err
			}
			certPEM, keyPEM, err := c.NewClientKeyPair(id, ttl)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o700); err != nil {
				return fmt.Errorf("creating %s: %w", out, err)
			}
			for _, f := range []struct {
				name string
				data []byte
				mode os.FileMode
			}{{"client.crt", certPEM, 0o644}, {"client.key", keyPEM, 0o600}, {"ca.crt", c.CertPEM(), 0o644}} {
				if err := atomicfile.Write(filepath.Join(out, f.name), f.data, f.mode); err != nil {
					return fmt.Errorf("writing %s: %w", f.name, err)
				}
			}
			abs, _ := filepath.Abs(out)
			fmt.Fprintf(cmd.OutOrStdout(), "issued a certificate for %s, valid for %v\nGT_PROXY_CERT=%s\nGT_PROXY_KEY=%s\nGT_PROXY_CA=%s\n",
				id, ttl, filepath.Join(abs, "client.crt"), filepath.Join(abs, "client.key"), filepath.Join(abs, "ca.crt"))
			return nil
		},
	}
	issue.Flags().Duration("ttl", pki.DefaultTTL, "certificate lifetime")
	issue.Flags().String("out", ".", "directory to write client.crt, client.key and ca.crt into")

	revoke := &cobra.Command{
		Use:   "revoke <rig>/<name> | <serial>",
		Short: "Revoke a polecat's certificates (or one by serial) and close its live tunnel",
		Long: `Revoke a polecat by name: every certificate of it issued until now,
including any Gas Town's own tools issued from the same CA (a cut-off kept in
<town>/.runtime/ca/revoked.json), and each unexpired one recorded. Or revoke
one certificate by its hex serial. A revoked certificate cannot renew.

The revocation is written beside the CA under the lock renewals take, and
survives restarts. A running hostd refuses new handshakes at once, closes the
polecat's live tunnels and shows it revoked; it notices within a second even
if this command is interrupted before it tells the daemon. A certificate
issued to the polecat afterwards (hostd cert issue, a join token) works.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.openCA()
			if err != nil {
				return err
			}
			recs, err := c.Revoke(args[0])
			if err != nil {
				return err
			}
			for _, r := range recs {
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (%s)\n", r.Serial, r.Identity)
			}
			if id, err := wire.ParseIdentity(args[0]); err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "revoked every certificate of %s issued until now\n", id)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			n, err := api.NewClient(a.town()).ReloadRevocations(ctx)
			switch {
			case errors.Is(err, api.ErrNotRunning):
				fmt.Fprintln(cmd.OutOrStdout(), "hostd is not running; the revocation applies when it starts")
			case err != nil:
				return fmt.Errorf("revocation recorded, but telling hostd failed: %w", err)
			default:
				fmt.Fprintf(cmd.OutOrStdout(), "closed %d live tunnel(s)\n", n)
			}
			return nil
		},
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List issued certificates: valid, expiring, expired and revoked",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.openCA()
			if err != nil {
				return err
			}
			recs, err := c.Records()
			if err != nil {
				return err
			}
			now := time.Now()
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				type row struct {
					pki.Record
					Status string `json:"status"`
				}
				rows := make([]row, 0, len(recs))
				for _, r := range recs {
					rows = append(rows, row{r, r.Status(now)})
				}
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rows)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "POLECAT\tSERIAL\tSTATUS\tSOURCE\tEXPIRES")
			for _, r := range recs {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Identity, shortSerial(r.Serial), r.Status(now), r.Source, r.NotAfter.Local().Format("2006-01-02 15:04:05"))
			}
			return w.Flush()
		},
	}
	list.Flags().Bool("json", false, "print JSON")

	cert.AddCommand(issue, revoke, list)
	return cert
}

func (a *app) tokenCmd() *cobra.Command {
	tok := &cobra.Command{Use: "token", Short: "One-time join tokens for fresh containers"}
	create := &cobra.Command{
		Use:   "create <rig>/<name>",
		Short: "Print a one-time join token bound to one polecat",
		Long: `Print a join token for one polecat. In the container,
'gt-agent up --join <token>' makes a key locally and exchanges the token for
its first certificate, so no private key is ever copied. A token works
once, only for that rig/name, and expires (default 15m). It carries the CA's
fingerprint, so the container needs no ca.crt to verify hostd.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := wire.ParseIdentity(args[0])
			if err != nil {
				return err
			}
			ttl, _ := cmd.Flags().GetDuration("ttl")
			c, err := a.openCA()
			if err != nil {
				return err
			}
			t, err := c.CreateToken(id, ttl)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), t)
			return nil
		},
	}
	create.Flags().Duration("ttl", pki.DefaultTokenTTL, "how long the token stays usable")
	tok.AddCommand(create)
	return tok
}

func shortSerial(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
