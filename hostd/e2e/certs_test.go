package e2e

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"
)

func pemEncode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func mustPKCS8(t *testing.T, k crypto.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func parseLeaf(pemBytes []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(pemBytes)
	if blk == nil {
		return nil, errNoPEM
	}
	return x509.ParseCertificate(blk.Bytes)
}

var errNoPEM = errors.New("no PEM block")
