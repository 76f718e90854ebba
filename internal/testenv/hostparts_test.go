package testenv

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// TestBedConsulAndMemcached starts a Consul server on one host, a client
// agent and memcached on another, and checks the registered memcached is
// passing in the server's catalog at the host's address; then cuts the
// memcached host off and checks the server notices.
func TestBedConsulAndMemcached(t *testing.T) {
	bed := NewBed(t)
	server, mc1 := bed.AddHost(t, "consul"), bed.AddHost(t, "mc1")

	start := time.Now()
	c := StartConsulOn(t, server)
	t.Logf("StartConsulOn took %v", time.Since(start))
	if c.HTTPAddr != server.Addr+":8500" || c.NodeName != "consul" {
		t.Errorf("server HTTPAddr %s, node %s; want %s:8500, consul", c.HTTPAddr, c.NodeName, server.Addr)
	}
	start = time.Now()
	a := c.StartClientAgentOn(t, mc1)
	t.Logf("StartClientAgentOn took %v", time.Since(start))
	if a.HTTPAddr != mc1.Addr+":8500" || a.NodeName != "mc1" {
		t.Errorf("agent HTTPAddr %s, node %s; want %s:8500, mc1", a.HTTPAddr, a.NodeName, mc1.Addr)
	}
	m := StartMemcachedOn(t, mc1)
	if m.Addr != mc1.Addr+":11211" {
		t.Errorf("memcached Addr %s, want %s:11211", m.Addr, mc1.Addr)
	}
	Register(t, a.Client, m, Registration{ID: "mc1-a"})
	Eventually(t, 15*time.Second, "mc1-a passing in the server's health endpoint", func() bool {
		return serviceStatus(t, c.Client, "mc1-a") == api.HealthPassing
	})
	services, _, err := c.Client.Catalog().Service("memcached", "", nil)
	if err != nil || len(services) != 1 {
		t.Fatalf("catalog entries %v, err %v; want one", services, err)
	}
	if s := services[0]; s.ServiceAddress != mc1.Addr || s.ServicePort != 11211 || s.Node != "mc1" || s.Address != mc1.Addr {
		t.Errorf("catalog entry: service %s:%d on node %s at %s; want %s:11211 on mc1 at %s",
			s.ServiceAddress, s.ServicePort, s.Node, s.Address, mc1.Addr, mc1.Addr)
	}

	mc1.Cut(t)
	Eventually(t, 30*time.Second, "mc1-a critical once mc1 is cut off", func() bool {
		return serviceStatus(t, c.Client, "mc1-a") == api.HealthCritical
	})
	mc1.Heal(t)
	Eventually(t, 60*time.Second, "mc1-a passing once mc1 is back", func() bool {
		return serviceStatus(t, c.Client, "mc1-a") == api.HealthPassing
	})
}

// TestBedRootServer runs the Consul server in the root namespace, at the
// bridge address, with a client agent on a host.
func TestBedRootServer(t *testing.T) {
	bed := NewBed(t)
	c := StartConsulOn(t, bed.Root())
	if !strings.HasPrefix(c.HTTPAddr, bed.Addr+":") {
		t.Errorf("server HTTPAddr %s, want one on %s", c.HTTPAddr, bed.Addr)
	}
	a := c.StartClientAgentOn(t, bed.AddHost(t, "h1"))
	members, err := c.Client.Agent().Members(false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range members {
		names = append(names, fmt.Sprintf("%s@%s", m.Name, m.Addr))
	}
	if want := a.NodeName + "@" + a.IP; !strings.Contains(strings.Join(names, " "), want) {
		t.Errorf("members %v, want %s among them", names, want)
	}
}

func TestBedProgram(t *testing.T) {
	bed := NewBed(t)
	h := bed.AddHost(t, "h1")
	p := StartProgram(t, ProgramOptions{
		Path: "/bin/sh",
		Args: []string{"-c", `ip -o -4 addr show dev eth0; echo "X=$X"; exit 3`},
		Env:  []string{"X=from-env"},
		Host: h,
	})
	if got := p.Wait(t, 10*time.Second); got != 3 || p.ExitCode() != 3 {
		t.Errorf("Wait() = %d, ExitCode() = %d; want 3", got, p.ExitCode())
	}
	out := p.Output()
	if !strings.Contains(out, h.Addr+"/24") || !strings.Contains(out, "X=from-env") {
		t.Errorf("output %q: want the host's address and X=from-env", out)
	}

	sleeper := StartProgram(t, ProgramOptions{Name: "sleeper", Path: "/bin/sleep", Args: []string{"600"}, Host: h})
	ready := false
	sleeper.WaitReady(t, 5*time.Second, func() bool { ready = true; return true })
	if !ready || sleeper.Exited() || sleeper.ExitCode() != -1 {
		t.Fatalf("sleeper: ready %v, exited %v, exit code %d; want a running program", ready, sleeper.Exited(), sleeper.ExitCode())
	}
	sleeper.Pause(t)
	Eventually(t, 5*time.Second, "sleeper stopped", func() bool { return procState(sleeper.PID()) == "T" })
	if !sleeper.Paused() {
		t.Errorf("Paused() = false for a stopped process")
	}
	sleeper.Resume(t)
	Eventually(t, 5*time.Second, "sleeper running", func() bool { return procState(sleeper.PID()) != "T" })
	if sleeper.Paused() {
		t.Errorf("Paused() = true after Resume")
	}
	if got := sleeper.Stop(t); got != -1 {
		t.Errorf("exit code after SIGTERM = %d, want -1 (killed by a signal)", got)
	}
}

// procState returns the state letter of process pid from /proc, or "".
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// pid (comm) state ...
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+3 > len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// TestBedCleanup checks that a bed leaves no namespace, link or process
// behind, even when processes run on its hosts (one of them paused).
func TestBedCleanup(t *testing.T) {
	SkipShort(t, "a test bed of hosts (network namespaces)")
	var names []string
	var pids []int
	t.Run("bed", func(t *testing.T) {
		bed := NewBed(t)
		h1, h2 := bed.AddHost(t, "h1"), bed.AddHost(t, "h2")
		m := StartMemcachedOn(t, h1)
		m.Pause(t)
		p := StartProgram(t, ProgramOptions{Path: "/bin/sleep", Args: []string{"600"}, Host: h2})
		pids = []int{m.PID(), p.PID()}
		names = []string{bridgeName(bed.index), h1.link, h2.link, h1.NetNS, h2.NetNS}
		links, namespaces := ipOutput(t, "-o", "link"), ipOutput(t, "netns", "list")
		for _, n := range names {
			if !strings.Contains(links+namespaces, n) {
				t.Fatalf("%s is not in ip link nor ip netns list:\n%s\n%s", n, links, namespaces)
			}
		}
	})
	links, namespaces := ipOutput(t, "-o", "link"), ipOutput(t, "netns", "list")
	for _, n := range names {
		if strings.Contains(links, n+":") || strings.Contains(links, n+"@") || strings.Contains(namespaces, n) {
			t.Errorf("%s is left after the bed's test ended:\n%s\n%s", n, links, namespaces)
		}
	}
	for _, pid := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			t.Errorf("process %d still exists after the bed's test ended", pid)
		}
	}
}

// TestSweepDeadBeds leaves the names of a bed behind as a dead run would
// (its lock released, its names still there) and checks the next sweep
// removes them but not those of a live bed.
func TestSweepDeadBeds(t *testing.T) {
	requireRoot(t)
	ip := ipBinary(t)
	live := NewBed(t)
	live.AddHost(t, "h1")
	index, lock, err := lockBed()
	if err != nil {
		t.Fatal(err)
	}
	dead := []string{
		"link add " + bridgeName(index) + " type bridge",
		"netns add " + netnsName(index, "x"),
		"link add " + vethName(index, 0) + " type veth peer name eth0 netns " + netnsName(index, "x"),
	}
	if err := runIPBatch(ip, nil, dead); err != nil {
		lock.Close()
		purgeBed(ip, index)
		t.Fatal(err)
	}
	lock.Close() // the "dead" run's lock is gone
	if err := sweepDeadBeds(ip); err != nil {
		t.Fatalf("sweepDeadBeds: %v", err)
	}
	links, namespaces, err := bedNames(index)
	if err != nil || len(links)+len(namespaces) > 0 {
		t.Errorf("after the sweep bed %d has links %v, namespaces %v (%v); want none", index, links, namespaces, err)
	}
	links, namespaces, err = bedNames(live.index)
	if err != nil || len(links) != 2 || len(namespaces) != 1 {
		t.Errorf("after the sweep the live bed %d has links %v, namespaces %v (%v); want it untouched", live.index, links, namespaces, err)
	}
}

// TestBedMemcachedPerPort starts two memcached on one host, the default
// port and one given, and checks both answer from the root namespace at
// addresses of their own, and that killing one leaves the other.
func TestBedMemcachedPerPort(t *testing.T) {
	bed := NewBed(t)
	h := bed.AddHost(t, "mc1")
	m1 := StartMemcachedOn(t, h)
	m2 := StartMemcachedOnPort(t, h, 11212)
	if m1.Addr != h.Addr+":11211" || m2.Addr != h.Addr+":11212" || m2.IP != h.Addr || m2.Port != 11212 {
		t.Fatalf("memcached at %s and %s (%s port %d), want %s:11211 and %s:11212", m1.Addr, m2.Addr, m2.IP, m2.Port, h.Addr, h.Addr)
	}
	for _, m := range []*Memcached{m1, m2} {
		if err := memcachedVersion(m.Addr, time.Second); err != nil {
			t.Errorf("memcached %s does not answer from the root namespace: %v", m.Addr, err)
		}
	}
	m2.Kill(t)
	if err := memcachedVersion(m1.Addr, time.Second); err != nil {
		t.Errorf("memcached %s stopped answering when %s was killed: %v", m1.Addr, m2.Addr, err)
	}
	m2.Start(t)
	if err := memcachedVersion(m2.Addr, time.Second); err != nil {
		t.Errorf("memcached %s does not answer after a restart on its port: %v", m2.Addr, err)
	}
}
