package pki

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// ParseCertPEM parses the first CERTIFICATE block of a PEM file.
func ParseCertPEM(b []byte) (*x509.Certificate, error) {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return nil, errors.New("no PEM CERTIFICATE block found")
		}
		if blk.Type == "CERTIFICATE" {
			return x509.ParseCertificate(blk.Bytes)
		}
	}
}

// ParseKeyPEM parses a private key in PKCS#8, SEC 1 (EC) or PKCS#1 (RSA)
// PEM, the forms Go and openssl write.
func ParseKeyPEM(b []byte) (crypto.Signer, error) {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return nil, errors.New("no PEM private key block found")
		}
		var (
			k   any
			err error
		)
		switch blk.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(blk.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			return nil, errors.New("key is encrypted; hostd needs it unencrypted (keep it 0600)")
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", blk.Type, err)
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("key type %T cannot sign", k)
		}
		return s, nil
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// writeNew creates path with data, failing if it exists.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
