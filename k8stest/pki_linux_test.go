//go:build linux

package k8stest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// pki is the test cluster's one certificate authority: it signs the API
// server's and the node's serving certificates and every client's
// (kubectl's admin, the API server's own as a client of the node), and
// each side trusts only it.
type pki struct {
	dir    string
	caFile string
	ca     *x509.Certificate
	key    *ecdsa.PrivateKey
	pool   *x509.CertPool
	serial int64
}

func newPKI(t testing.TB, dir string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "acpterm-test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{dir: dir, caFile: filepath.Join(dir, "ca.crt"), ca: ca, key: key, pool: x509.NewCertPool(), serial: 1}
	p.pool.AddCert(ca)
	writePEM(t, p.caFile, "CERTIFICATE", der)
	return p
}

// issue signs a certificate for subject, valid for 127.0.0.1 and
// localhost, and writes NAME.crt and NAME.key.
func (p *pki) issue(t testing.TB, name string, subject pkix.Name, usage x509.ExtKeyUsage) (crtFile, keyFile string, pair tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	crtFile = filepath.Join(p.dir, name+".crt")
	keyFile = writeKey(t, filepath.Join(p.dir, name+".key"), key)
	writePEM(t, crtFile, "CERTIFICATE", der)
	pair, err = tls.LoadX509KeyPair(crtFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return crtFile, keyFile, pair
}

// signingKey writes a key of its own (the API server's service-account
// token key) and returns its file.
func (p *pki) signingKey(t testing.TB, name string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return writeKey(t, filepath.Join(p.dir, name+".key"), key)
}

func writeKey(t testing.TB, file string, key *ecdsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, file, "EC PRIVATE KEY", der)
	return file
}

func writePEM(t testing.TB, file, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
