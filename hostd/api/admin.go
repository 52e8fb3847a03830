package api

import "time"

// IssueCertRequest is POST /v1/admin/issue-cert's body.
type IssueCertRequest struct {
	Rig  string `json:"rig"`
	Name string `json:"name"`
	// TTL is a Go duration ("720h"); empty takes hostd's cert_ttl.
	TTL string `json:"ttl,omitempty"`
}

// IssuedCert is POST /v1/admin/issue-cert's answer.
type IssuedCert struct {
	CN        string    `json:"cn"`
	Cert      string    `json:"cert"`
	Key       string    `json:"key"`
	CA        string    `json:"ca"`
	Serial    string    `json:"serial"`
	ExpiresAt time.Time `json:"expires_at"`
}

// DenyCertRequest is POST /v1/admin/deny-cert's body: a serial in hex.
type DenyCertRequest struct {
	Serial string `json:"serial"`
}
