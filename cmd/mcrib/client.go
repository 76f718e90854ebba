package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/mcrib/mcrib/internal/cli"
	"github.com/mcrib/mcrib/mcribapi"
)

// defaultAddr is where the client commands look for mcrib when neither
// --addr nor env MCRIB_ADDR says otherwise.
const defaultAddr = "http://127.0.0.1:7070"

// connect returns a client of the operator API as o says: the address
// (--addr, else env MCRIB_ADDR, else the default), the token (--token-file,
// else the file in env MCRIB_TOKEN_FILE, else env MCRIB_TOKEN) and the
// operator's name (--who, else env MCRIB_WHO, else $USER@host). A bad
// address or an unreadable token file is a usage error naming where it came
// from.
func (c proc) connect(o *clientOptions) (*cli.Client, error) {
	addr, from := o.addr, "--addr"
	if addr == "" {
		if env := c.getenv("MCRIB_ADDR"); env != "" {
			addr, from = env, "MCRIB_ADDR"
		} else {
			addr, from = defaultAddr, "the default address"
		}
	}
	base, err := cli.ParseAddr(addr)
	if err != nil {
		return nil, usageError("%s %q %v", from, addr, err)
	}
	token, tokenFrom, err := c.clientToken(o.tokenFile)
	if err != nil {
		return nil, usageError("%v", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if err := clientTrust(tr, c.getenv); err != nil {
		return nil, usageError("%v", err)
	}
	if from != "the default address" {
		from = "from " + from
	}
	return cli.New(cli.Options{
		APIOptions: cli.APIOptions{
			Addr:      base,
			AddrFrom:  from,
			Token:     token,
			TokenFrom: tokenFrom,
			Who:       c.operator(o.who),
			Transport: tr,
			UserAgent: "mcrib/" + version,
		},
		Stdout:      c.stdout,
		Stderr:      c.stderr,
		Now:         c.now,
		JSON:        o.json,
		FollowEvery: followEvery,
	}), nil
}

// clientToken returns the operator token and where it came from: the file
// named by --token-file (flag), else by env MCRIB_TOKEN_FILE, else env
// MCRIB_TOKEN; "" when none is set.
func (c proc) clientToken(flagFile string) (token, from string, err error) {
	path, from := flagFile, "--token-file"
	if path == "" {
		path, from = strings.TrimSpace(c.getenv("MCRIB_TOKEN_FILE")), "MCRIB_TOKEN_FILE"
	}
	if path == "" {
		return strings.TrimSpace(c.getenv("MCRIB_TOKEN")), "MCRIB_TOKEN", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("%s %q cannot be read: %v", from, path, errors.Unwrap(err))
	}
	token = strings.TrimSpace(string(b))
	if token == "" || strings.ContainsAny(token, "\r\n") {
		return "", "", fmt.Errorf("%s %q must hold the token on one line", from, path)
	}
	return token, from, nil
}

// operator returns the operator's name sent with every change: flagWho,
// else env MCRIB_WHO, else $USER@host ($LOGNAME when USER is not set, the
// account this process runs as when neither is; the host alone when none
// is known), as the server will record it.
func (c proc) operator(flagWho string) string {
	if name := mcribapi.OperatorName(flagWho); name != "" {
		return name
	}
	if name := mcribapi.OperatorName(c.getenv("MCRIB_WHO")); name != "" {
		return name
	}
	user := c.getenv("USER")
	if user == "" {
		user = c.getenv("LOGNAME")
	}
	if user == "" && c.account != nil {
		user = c.account()
	}
	host, err := c.hostname()
	if err != nil {
		host = ""
	}
	switch {
	case user != "" && host != "":
		return mcribapi.OperatorName(user + "@" + host)
	case user != "":
		return mcribapi.OperatorName(user)
	}
	return mcribapi.OperatorName(host)
}
