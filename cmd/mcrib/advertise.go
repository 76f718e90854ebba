package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// advertiseAddr returns the host:port other replicas and applications reach
// this process at (its leader_id, docs/cli.md "mcrib serve flags"): flag when given;
// else the --listen address when it names a host; else, for a wildcard
// listen address, the host's first non-loopback address (from addrs, the
// interface addresses) with the listen port. A leader_id must be routable:
// "0.0.0.0:7070" or "[::]:7070" would send a follower's boots to itself.
func advertiseAddr(flag, listen string, addrs func() ([]net.Addr, error)) (string, error) {
	if flag != "" {
		host, port, err := net.SplitHostPort(flag)
		if err != nil || host == "" || port == "" {
			return "", fmt.Errorf("--advertise-addr %q is not a host:port", flag)
		}
		if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
			return "", fmt.Errorf("--advertise-addr %q names no host: other replicas could not reach it", flag)
		}
		return flag, nil
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("--listen %q is not a host:port", listen)
	}
	if ip, err := netip.ParseAddr(host); host != "" && (err != nil || !ip.IsUnspecified()) {
		return listen, nil
	}
	if addrs == nil {
		addrs = net.InterfaceAddrs
	}
	list, err := addrs()
	if err != nil {
		return "", fmt.Errorf("finding this host's address for --advertise-addr: %w", err)
	}
	var v6 string
	for _, a := range list {
		p, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(p.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() {
			continue
		}
		if ip.Is4() {
			return net.JoinHostPort(ip.String(), port), nil
		}
		if v6 == "" {
			v6 = net.JoinHostPort(ip.String(), port)
		}
	}
	if v6 != "" {
		return v6, nil
	}
	return "", errors.New("--listen is a wildcard address and this host has no non-loopback address: set --advertise-addr")
}

// listenName returns --listen as given, with the port the listener really
// got (for a port 0): a host name in --listen stays a name in leader_id, as
// the --advertise-addr rule has it, rather than the address it resolved to.
func listenName(listen string, bound net.Addr) string {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return bound.String()
	}
	_, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return bound.String()
	}
	return net.JoinHostPort(host, port)
}
