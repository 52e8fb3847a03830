package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
)

func newCACmd(a *app) *cobra.Command {
	ca := &cobra.Command{Use: "ca", Short: "Manage the town's certificate authority"}
	ca.AddCommand(&cobra.Command{
		Use:   "init",
		Short: "Create the CA at <town>/.runtime/ca (or reuse the one already there)",
		Long: `Create the CA at <town>/.runtime/ca/ca.crt and ca.key (key mode 0600,
directory 0700). A CA already there, including one made by Gas Town's proxy,
is reused unchanged.`,
		Args: cobra.NoArgs,
		RunE: a.runCAInit,
	})
	return ca
}

func (a *app) runCAInit(cmd *cobra.Command, _ []string) error {
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
}
