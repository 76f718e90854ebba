package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/mcrib/mcrib/internal/apiserver"
)

// checkExposure refuses a configuration that would serve the mutating API
// to the network without a token (docs/cli.md "Bad values"): a --listen that
// is not a loopback address needs a token or --insecure-no-token. It also
// checks that --tls-cert and --tls-key come together and load.
func checkExposure(cfg serveConfig, values map[string]*flagValue) error {
	if cfg.Token == "" && !cfg.InsecureNoToken && !apiserver.IsLoopbackListen(cfg.Listen) {
		return fmt.Errorf("--listen %q is not a loopback address and no token is set%s: anyone who reaches it could freeze the pool or change the boot limit; set --token-file or MCRIB_TOKEN, or pass --insecure-no-token", cfg.Listen, values["listen"].from())
	}
	switch {
	case cfg.TLSCert == "" && cfg.TLSKey == "":
		return nil
	case cfg.TLSCert == "":
		return fmt.Errorf("--tls-key is set but --tls-cert is not%s: give both or neither", values["tls-key"].from())
	case cfg.TLSKey == "":
		return fmt.Errorf("--tls-cert is set but --tls-key is not%s: give both or neither", values["tls-cert"].from())
	}
	if _, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey); err != nil {
		return fmt.Errorf("--tls-cert %q and --tls-key %q do not load as a certificate and its key: %v", cfg.TLSCert, cfg.TLSKey, oneLine(err))
	}
	return nil
}

// oneLine keeps the first line of err's text.
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// clientTrust makes the CLI's transport trust the PEM certificates in env
// MCRIB_CACERT (a self-signed mcrib, say) on top of the system pool; the
// system pool itself honours SSL_CERT_FILE and SSL_CERT_DIR.
func clientTrust(tr *http.Transport, getenv func(string) string) error {
	path := strings.TrimSpace(getenv("MCRIB_CACERT"))
	if path == "" {
		return nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("MCRIB_CACERT %q cannot be read: %v", path, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("MCRIB_CACERT %q holds no PEM certificate", path)
	}
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return nil
}
