package emulator

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"time"
)

// GenerateCertificate returns a new self-signed ECDSA P-256 certificate for
// 127.0.0.1, ::1 and localhost, valid from an hour ago for ten years, and
// its private key, both PEM-encoded: what Options.TLSCertPEM and
// Options.TLSKeyPEM take, for a certificate kept across restarts. It fails
// only if the system's random source does.
func GenerateCertificate() (certPEM, keyPEM []byte, err error) {
	certPEM, keyPEM, err = generateCertificate()
	if err != nil {
		return nil, nil, fmt.Errorf("emulator: generate certificate: %w", err)
	}
	return certPEM, keyPEM, nil
}

// serverCert is the certificate to serve: the given PEM pair, or a new
// one when they are nil.
func serverCert(certPEM, keyPEM []byte) (tls.Certificate, []byte, error) {
	if certPEM == nil {
		var err error
		if certPEM, keyPEM, err = GenerateCertificate(); err != nil {
			return tls.Certificate{}, nil, err
		}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("emulator: TLS certificate and key: %w", err)
	}
	return cert, certPEM, nil
}

// generateCertificate generates an ECDSA P-256 certificate for the loopback
// names, valid from an hour ago for ten years.
func generateCertificate() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"duroxide-cdb emulator"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

// discardLogger silences net/http's own logging (TLS handshake noise from
// clients that do not trust the certificate, hijacked connections).
func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }
