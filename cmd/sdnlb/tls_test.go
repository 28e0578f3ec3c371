package main

import (
	"context"
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

// testCA issues certificates for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(tb testing.TB) *testCA {
	tb.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key for 127.0.0.1, usable by both ends.
func (ca *testCA) issue(tb testing.TB, serial int64) (certPEM, keyPEM []byte) {
	tb.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func writeFile(tb testing.TB, dir, name string, data []byte) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestMain_OpenFlowTLS checks that switches must present a certificate from
// the client CA, and that one that does is greeted with an OpenFlow hello.
func TestMain_OpenFlowTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	srvCert, srvKey := ca.issue(t, 2)
	swCert, swKey := ca.issue(t, 3)

	cfg := DefaultConfig()
	cfg.APIAddr, cfg.OpenFlowAddr, cfg.DB = "127.0.0.1:0", "127.0.0.1:0", filepath.Join(dir, "sdnlb.db")
	cfg.TLSCert = writeFile(t, dir, "server.pem", srvCert)
	cfg.TLSKey = writeFile(t, dir, "server.key", srvKey)
	cfg.TLSClientCA = writeFile(t, dir, "ca.pem", ca.pem)
	m := NewMain(cfg, nil)
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.pem)
	pair, err := tls.X509KeyPair(swCert, swKey)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(certs []tls.Certificate) ([]byte, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", m.OpenFlowAddr(),
			&tls.Config{RootCAs: roots, Certificates: certs, ServerName: "127.0.0.1"})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(2 * time.Second))
		hdr := make([]byte, 8)
		_, err = conn.Read(hdr)
		return hdr, err
	}

	t.Run("OK", func(t *testing.T) {
		hdr, err := dial([]tls.Certificate{pair})
		if err != nil {
			t.Fatal(err)
		}
		if hdr[0] != 0x04 || hdr[1] != 0 { // OpenFlow 1.3, OFPT_HELLO
			t.Fatalf("first bytes % x, want an OpenFlow 1.3 hello", hdr)
		}
	})
	t.Run("ErrNoClientCertificate", func(t *testing.T) {
		if _, err := dial(nil); err == nil {
			t.Fatal("a switch without a certificate was greeted")
		}
	})
}

func TestLoadConfig_TLSFilesMustExist(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TLSCert, cfg.TLSKey = "/nonexistent/cert.pem", "/nonexistent/key.pem"
	if _, err := cfg.openflowTLS(); err == nil {
		t.Fatal("no error for missing certificate files")
	}
}
