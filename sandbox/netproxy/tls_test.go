package netproxy_test

import "crypto/tls"

// insecureTLS trusts the test servers' certificates, made for other
// names than the test's.
func insecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} }
