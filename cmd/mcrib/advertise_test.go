package main

import (
	"errors"
	"net"
	"strings"
	"testing"
)

func ipnet(s string) net.Addr {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip
	return n
}

func TestAdvertiseAddr(t *testing.T) {
	host := func(list ...string) func() ([]net.Addr, error) {
		return func() ([]net.Addr, error) {
			var out []net.Addr
			for _, s := range list {
				out = append(out, ipnet(s))
			}
			return out, nil
		}
	}
	broken := func() ([]net.Addr, error) { return nil, errors.New("no netlink") }
	tests := []struct {
		flag, listen string
		addrs        func() ([]net.Addr, error)
		want, err    string
	}{
		{"", "127.0.0.1:7070", broken, "127.0.0.1:7070", ""},
		{"", "mcrib-1.example:7070", broken, "mcrib-1.example:7070", ""},
		{"", "0.0.0.0:7070", host("127.0.0.1/8", "fe80::1/64", "198.18.3.5/24", "198.18.4.5/24"), "198.18.3.5:7070", ""},
		{"", "[::]:7071", host("::1/128", "2001:db8::7/64"), "[2001:db8::7]:7071", ""},
		{"", ":7070", host("127.0.0.1/8", "198.18.3.5/24"), "198.18.3.5:7070", ""},
		{"", "0.0.0.0:7070", host("127.0.0.1/8"), "", "no non-loopback address"},
		{"", "0.0.0.0:7070", broken, "", "no netlink"},
		{"10.1.2.3:7070", "0.0.0.0:7070", broken, "10.1.2.3:7070", ""},
		{"0.0.0.0:7070", "0.0.0.0:7070", broken, "", "names no host"},
		{"mcrib-1", "0.0.0.0:7070", broken, "", "not a host:port"},
	}
	for _, tc := range tests {
		got, err := advertiseAddr(tc.flag, tc.listen, tc.addrs)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("advertiseAddr(%q, %q) = %q, %v; want an error with %q", tc.flag, tc.listen, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("advertiseAddr(%q, %q) = %q, %v; want %q", tc.flag, tc.listen, got, err, tc.want)
		}
	}
}

func TestListenNameKeepsTheHostName(t *testing.T) {
	bound := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40123}
	for listen, want := range map[string]string{
		"localhost:0":          "localhost:40123",
		"ctl-1.internal:40123": "ctl-1.internal:40123",
		"127.0.0.1:0":          "127.0.0.1:40123",
		"0.0.0.0:40123":        "0.0.0.0:40123",
		":0":                   ":40123",
	} {
		if got := listenName(listen, bound); got != want {
			t.Errorf("listenName(%q) = %q, want %q", listen, got, want)
		}
	}
}
